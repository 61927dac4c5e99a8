/**
 * Issue 18: the per-request logger (`lazyChildLoggerFactory`, http/logging.ts) builds its pino
 * child only for a line at an enabled level, and then writes what the child would have.
 */
import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it, vi } from 'vitest';
import type { FastifyBaseLogger } from 'fastify';
import { lazyChildLoggerFactory } from '../../../src/http/logging.js';

function logger(level: string) {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  return { parent: pino({ level }, sink) as unknown as FastifyBaseLogger, lines };
}

const factory = lazyChildLoggerFactory as unknown as (
  l: FastifyBaseLogger,
  b: Record<string, unknown>,
  o: Record<string, unknown>,
) => FastifyBaseLogger;

describe('lazy request logger', () => {
  it('drops lines below the level without building a child, and writes the others with the request binding', () => {
    const { parent, lines } = logger('warn');
    const child = vi.spyOn(parent, 'child');
    const log = factory(parent, { reqId: 'r-1' }, {});
    expect(log.level).toBe('warn');
    log.info({ a: 1 }, 'dropped');
    log.debug('dropped too');
    expect(child).not.toHaveBeenCalled();
    log.error({ code: 7 }, 'kept');
    expect(child).toHaveBeenCalledTimes(1);
    log.warn('again');
    expect(child).toHaveBeenCalledTimes(1);
    expect(lines).toMatchObject([
      { level: 50, reqId: 'r-1', code: 7, msg: 'kept' },
      { level: 40, reqId: 'r-1', msg: 'again' },
    ]);
  });

  it('honours a route log level and level changes, and makes real children', () => {
    const { parent, lines } = logger('info');
    const log = factory(parent, { reqId: 'r-2' }, { level: 'error' });
    expect(log.level).toBe('error');
    log.warn('dropped by the route level');
    log.level = 'debug';
    log.debug('now kept');
    log.child({ step: 'x' }).info('child line');
    expect(lines).toMatchObject([
      { level: 20, reqId: 'r-2', msg: 'now kept' },
      { level: 30, reqId: 'r-2', step: 'x', msg: 'child line' },
    ]);
  });
});
