/** Warm execution environments of the sandbox (no app): reuse, replacement after failures, drain, whole-process memory limit. */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Sandbox, type SandboxRun } from '../../../src/sandbox/runner.js';
import { tempDir } from './fixtures.js';

const root = fs.realpathSync(tempDir('ap-warm-'));
fs.writeFileSync(
  path.join(root, 'index.mjs'),
  `let count = 0;
const loadedAt = Date.now();
export default async function (input, context) {
  count++;
  switch (input.op) {
    case 'loop': for (;;) {}
    case 'exit': process.exit(3);
    case 'buffers': { const keep = []; for (let i = 0; i < 16; i++) keep.push(Buffer.alloc(64 * 1024 * 1024, 1)); return keep.length; }
    case 'buffers-caught': { const keep = []; try { for (let i = 0; i < 16; i++) keep.push(Buffer.alloc(64 * 1024 * 1024, 1)); } catch (e) { return { caught: e.name }; } return keep.length; }
    case 'throw-later': setTimeout(() => { throw new Error('late'); }, 1); return 'ok';
    case 'never': return new Promise(() => {});
    case 'ctx': return { keys: Object.keys(context).sort(), remaining: context.getRemainingTimeInMillis() > 0 };
    default: return { count, loadedAt, pid: process.pid };
  }
}
`,
);

const sandbox = new Sandbox({
  memoryMb: 64,
  maxLogBytes: 4096,
  maxOutputBytes: 4096,
  concurrency: 4,
  network: 'auto',
  warm: { perVersion: 2, total: 3, idleMs: 60_000 },
});
afterAll(() => sandbox.killAll());
const run = (input: unknown, key = 'v1', extra: Partial<SandboxRun> = {}) =>
  sandbox.run({ mode: 'invoke', root, entrypoint: 'index.mjs', input, timeoutMs: 5000, key, ...extra });

describe('warm environments', () => {
  it('load the module once and keep module state between invocations of one version', async () => {
    const a = await run({});
    const b = await run({});
    const c = await run({});
    expect([a.cold, b.cold, c.cold]).toEqual([true, false, false]);
    expect((c.output as any).count).toBe(3);
    expect((c.output as any).loadedAt).toBe((a.output as any).loadedAt);
    expect(sandbox.warm.keys.v1).toBe(1);
    // Another version gets its own environment.
    const other = await run({}, 'v2');
    expect(other).toMatchObject({ cold: true, output: { count: 1 } });
  });

  it('a handler that loops forever times out; its environment is replaced', async () => {
    await run({}, 'loop');
    const t = await run({ op: 'loop' }, 'loop', { timeoutMs: 400 });
    expect(t).toMatchObject({ status: 'timed_out', error: { code: 'timeout' } });
    const next = await run({}, 'loop');
    expect(next).toMatchObject({ status: 'succeeded', cold: true, output: { count: 1 } });
  });

  it('a crash (process.exit, an exception after the result) discards the environment', async () => {
    await run({}, 'crash');
    const x = await run({ op: 'exit' }, 'crash');
    expect(x).toMatchObject({
      status: 'failed',
      error: { code: 'crashed', message: expect.stringContaining('code 3') },
    });
    expect((await run({}, 'crash')).output).toMatchObject({ count: 1 });
    const late = await run({ op: 'throw-later' }, 'crash');
    expect(late.status).toBe('succeeded');
    await new Promise((r) => setTimeout(r, 200));
    // The environment is frozen as soon as the result is in: a throw that had not happened by then
    // happens when it is thawed, failing the next invocation (as on AWS Lambda); either way the
    // environment is discarded.
    let after = await run({}, 'crash');
    if (after.status === 'failed') {
      expect(after.error?.code).toBe('uncaught_exception');
      after = await run({}, 'crash');
    }
    expect(after).toMatchObject({ status: 'succeeded', cold: true, output: { count: 1 } });
  });

  it('a promise that never settles ends no_result and the environment stays usable', async () => {
    const n = await run({ op: 'never' }, 'never');
    expect(n).toMatchObject({ status: 'failed', error: { code: 'no_result' } });
    const next = await run({}, 'never');
    expect(next).toMatchObject({ status: 'succeeded', cold: false, output: { count: 2 } });
  });

  it('bounds the whole process, Buffers included: 16 × 64 MiB → out_of_memory, environment replaced (issue #11 §3.1)', async () => {
    expect(sandbox.processMemoryMb).toBe(64 * 2 + 64);
    const r = await run({ op: 'buffers' }, 'mem');
    expect(r).toMatchObject({ status: 'failed', error: { code: 'out_of_memory' } });
    // The failed environment was replaced; a handler may also catch the failed allocation itself.
    const caught = await run({ op: 'buffers-caught' }, 'mem');
    expect(caught).toMatchObject({ status: 'succeeded', cold: true, output: { caught: 'RangeError' } });
    expect(await run({}, 'mem')).toMatchObject({ status: 'succeeded', output: { count: 2 } });
  });

  it('drain retires a version: the next invocation starts fresh; the pool total is bounded', async () => {
    await run({}, 'd1');
    expect((await run({}, 'd1')).cold).toBe(false);
    expect(sandbox.drain((k) => k === 'd1')).toBe(1);
    expect(await run({}, 'd1')).toMatchObject({ cold: true, output: { count: 1 } });
    await Promise.all([run({}, 'd2'), run({}, 'd3'), run({}, 'd4')]);
    expect(sandbox.warm.total).toBeLessThanOrEqual(3);
  });

  it('passes the context with ids and deadline, and no platform credential', async () => {
    const r = await run({ op: 'ctx' }, 'ctx', { context: { invocationId: 'inv_1', agentId: 'agt_1' } });
    expect(r.output).toEqual({
      keys: ['agentId', 'deadline', 'getRemainingTimeInMillis', 'invocationId', 'log', 'memory', 'tools', 'userMemory'],
      remaining: true,
    });
  });
});
