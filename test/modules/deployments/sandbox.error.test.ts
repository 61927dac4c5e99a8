/** The sandbox runner on its own (no app): resource limits and output capture. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Sandbox } from '../../../src/sandbox/runner.js';
import { tempDir } from './fixtures.js';

const root = fs.realpathSync(tempDir('ap-sbx-'));
fs.writeFileSync(
  path.join(root, 'index.mjs'),
  `export default async function (input) {
  switch (input.op) {
    case 'oom': { const keep = []; for (;;) keep.push(new Array(1e6).fill(Math.random())); }
    case 'chatty': for (let i = 0; i < 5000; i++) console.log('line ' + i + ' ' + 'x'.repeat(50)); return 'done';
    case 'partial': process.stdout.write('no newline at the end'); return 1;
    case 'sleep': await new Promise((r) => setTimeout(r, input.ms)); return input.ms;
    default: return input;
  }
}
`,
);

const sandbox = new Sandbox({ memoryMb: 32, maxLogBytes: 4096, maxOutputBytes: 1024, concurrency: 2, network: 'auto' });
const run = (input: unknown, timeoutMs = 5000) =>
  sandbox.run({ mode: 'invoke', root, entrypoint: 'index.mjs', input, timeoutMs });

describe('sandbox runner', () => {
  it('kills a run that exceeds its heap limit → out_of_memory', async () => {
    const r = await run({ op: 'oom' }, 15_000);
    expect(r.status).toBe('failed');
    expect(r.error?.code).toBe('out_of_memory');
  });

  it('caps logs by bytes and marks them truncated; keeps a last line without newline', async () => {
    const r = await run({ op: 'chatty' });
    expect(r.status).toBe('succeeded');
    expect(r.logsTruncated).toBe(true);
    const bytes = r.logs.reduce((n, l) => n + Buffer.byteLength(l.message) + 1, 0);
    expect(bytes).toBeLessThanOrEqual(4096);
    expect(r.logs[0].message).toMatch(/^line 0 /);
    const p = await run({ op: 'partial' });
    expect(p.logs).toEqual([{ ts: expect.any(String), stream: 'stdout', message: 'no newline at the end' }]);
  });

  it('refuses results above maxOutputBytes', async () => {
    const r = await run('y'.repeat(2000));
    expect(r).toMatchObject({ status: 'failed', error: { code: 'output_too_large' } });
    const ok = await run('y'.repeat(500));
    expect(ok).toMatchObject({ status: 'succeeded', output: 'y'.repeat(500) });
  });

  it('runs at most `concurrency` processes at once; others wait', async () => {
    const t0 = Date.now();
    const runs = [run({ op: 'sleep', ms: 400 }), run({ op: 'sleep', ms: 400 }), run({ op: 'sleep', ms: 400 })];
    await new Promise((r) => setTimeout(r, 50));
    expect(sandbox.load).toEqual({ running: 2, waiting: 1 });
    const rs = await Promise.all(runs);
    expect(rs.map((r) => r.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(800);
    expect(sandbox.load).toEqual({ running: 0, waiting: 0 });
  });

  it('reports a missing entrypoint as load_error and a bad root as a failure, never a throw', async () => {
    const r = await sandbox.run({ mode: 'invoke', root, entrypoint: 'nope.mjs', input: null, timeoutMs: 5000 });
    expect(r).toMatchObject({ status: 'failed', error: { code: 'load_error' } });
    const r2 = await sandbox.run({
      mode: 'invoke',
      root: path.join(root, 'does-not-exist'),
      entrypoint: 'index.mjs',
      input: null,
      timeoutMs: 5000,
    });
    expect(r2.status).toBe('failed');
  });
});
