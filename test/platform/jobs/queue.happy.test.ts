import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { FastifyBaseLogger } from 'fastify';
import { ConfigError, loadConfig } from '../../../src/config.js';
import { BullQueue, InProcessQueue, createJobQueue, type JobQueue } from '../../../src/jobs/queue.js';

const log = pino({ level: 'silent' }) as unknown as FastifyBaseLogger;

async function until(cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

function contract(name: string, make: () => Promise<JobQueue>) {
  describe(`${name} job queue`, () => {
    it('runs jobs with their payload, retries failed attempts, and deduplicates by jobId', async () => {
      const q = await make();
      try {
        const seen: Array<{ payload: unknown; attempt: number }> = [];
        let failOnce = true;
        q.register<{ n: number }>('test.work', async (payload, meta) => {
          if (payload.n === 2 && failOnce) {
            failOnce = false;
            throw new Error('transient');
          }
          seen.push({ payload, attempt: meta.attempt });
        });
        const id1 = await q.enqueue('test.work', { n: 1 });
        expect(typeof id1).toBe('string');
        await q.enqueue('test.work', { n: 2 }, { attempts: 3, backoffMs: 10 });
        const dup = `dup-${randomBytes(4).toString('hex')}`;
        await q.enqueue('test.work', { n: 3 }, { jobId: dup, delayMs: 100 });
        await q.enqueue('test.work', { n: 3 }, { jobId: dup, delayMs: 100 });
        await until(() => seen.length >= 3);
        await new Promise((r) => setTimeout(r, 300));
        expect(seen.map((s) => (s.payload as { n: number }).n).sort()).toEqual([1, 2, 3]);
        expect(seen.find((s) => (s.payload as { n: number }).n === 2)!.attempt).toBe(2);
      } finally {
        await q.close();
      }
    });
  });
}

contract('in-process', async () => new InProcessQueue(log));

describe('in-process job queue specifics', () => {
  it('holds jobs enqueued before their handler is registered, and drains', async () => {
    const q = new InProcessQueue(log);
    const got: number[] = [];
    await q.enqueue('late', 1);
    await q.enqueue('late', 2);
    q.register<number>('late', async (n) => {
      got.push(n);
    });
    await q.drain();
    expect(got).toEqual([1, 2]);
    await q.close();
    await expect(q.enqueue('late', 3)).rejects.toThrow(/closed/);
  });

  it('refuses an api/worker split without Redis', () => {
    expect(() => loadConfig({ PROCESS_ROLE: 'worker' })).toThrow(ConfigError);
    expect(() => loadConfig({ PROCESS_ROLE: 'api' })).toThrow(/REDIS_URL/);
    expect(loadConfig({ PROCESS_ROLE: 'worker', REDIS_URL: 'redis://127.0.0.1:6379' }).processRole).toBe('worker');
    expect(loadConfig({}).processRole).toBe('all');
  });

  it('is chosen without REDIS_URL', async () => {
    const q = await createJobQueue(loadConfig({ NODE_ENV: 'test' }), log);
    expect(q.kind).toBe('in-process');
    await q.close();
  });
});

if (process.env.TEST_REDIS_URL) {
  const redisUrl = process.env.TEST_REDIS_URL;
  const config = () => loadConfig({ NODE_ENV: 'test', REDIS_URL: redisUrl });
  contract('BullMQ', async () => createJobQueue(config(), log));

  describe('BullMQ job queue specifics', () => {
    it('an api-role process enqueues and a worker-role process consumes (same prefix)', async () => {
      const prefix = `ap-split-${randomBytes(4).toString('hex')}`;
      const bull = await import('bullmq');
      const api = new BullQueue(bull, redisUrl, prefix, false, log);
      const worker = new BullQueue(bull, redisUrl, prefix, true, log);
      const got: string[] = [];
      api.register<string>('split', async (s) => {
        got.push(`api:${s}`);
      });
      worker.register<string>('split', async (s) => {
        got.push(`worker:${s}`);
      });
      try {
        await api.enqueue('split', 'hello');
        await until(() => got.length === 1);
        expect(got).toEqual(['worker:hello']);
      } finally {
        await api.close();
        await worker.close();
      }
    });
  });
}
