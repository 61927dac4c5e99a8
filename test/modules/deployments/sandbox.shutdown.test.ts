/**
 * Sandbox shutdown (no app): `killAll` ends runs waiting for a concurrency slot or for a pooled
 * environment, and refuses later ones, so the job queue's close (which waits for its running jobs)
 * returns. Regression: waiters were dropped with the pools and never settled, and an app closing
 * with queued invocations hung.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Sandbox } from '../../../src/sandbox/runner.js';
import { tempDir } from './fixtures.js';

const root = fs.realpathSync(tempDir('ap-shutdown-'));
fs.writeFileSync(
  path.join(root, 'index.mjs'),
  'export default async function () { await new Promise((r) => setTimeout(r, 3000)); return "done"; }\n',
);

/** A sandbox of 2 runs at a time, small limits, with `extra` options. */
function sandboxWith(extra: Partial<ConstructorParameters<typeof Sandbox>[0]>): Sandbox {
  return new Sandbox({
    memoryMb: 64,
    maxLogBytes: 4096,
    maxOutputBytes: 4096,
    concurrency: 2,
    network: 'auto',
    ...extra,
  });
}

describe('sandbox shutdown', () => {
  it('ends waiting runs as sandbox_closed, kills the running one, and refuses new runs', async () => {
    // One pooled environment per version and two runs at a time: the second run of `v1` waits for
    // the pool, the third waits for a slot.
    const sandbox = sandboxWith({ warm: { perVersion: 1, total: 2, idleMs: 60_000 } });
    const run = () =>
      sandbox.run({ mode: 'invoke', root, entrypoint: 'index.mjs', input: null, timeoutMs: 10_000, key: 'v1' });
    const runs = [run(), run(), run()];
    await new Promise((r) => setTimeout(r, 500));
    expect(sandbox.load).toEqual({ running: 2, waiting: 1 });
    const t0 = performance.now();
    sandbox.killAll();
    const [first, second, third] = await Promise.all(runs);
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(first.status).toBe('failed');
    expect(first.error?.code).not.toBe('sandbox_closed');
    expect(second).toMatchObject({ status: 'failed', error: { code: 'sandbox_closed' } });
    expect(third).toMatchObject({ status: 'failed', error: { code: 'sandbox_closed' } });
    expect(await run()).toMatchObject({ status: 'failed', error: { code: 'sandbox_closed' } });
    // every slot was given back
    expect(sandbox.load).toEqual({ running: 0, waiting: 0 });
  }, 20_000);

  it('kills an environment still loading its module, and that run ends as sandbox_closed', async () => {
    // the module takes 2 s to load, then the handler 3 s: a run shut down while loading must neither
    // wait for it nor run the handler after the shutdown
    const slow = fs.realpathSync(tempDir('ap-shutdown-load-'));
    fs.writeFileSync(
      path.join(slow, 'index.mjs'),
      'await new Promise((r) => setTimeout(r, 2000));\nexport default async function () { await new Promise((r) => setTimeout(r, 3000)); return "ran"; }\n',
    );
    const sandbox = sandboxWith({});
    const run = sandbox.run({ mode: 'invoke', root: slow, entrypoint: 'index.mjs', input: null, timeoutMs: 10_000 });
    await new Promise((r) => setTimeout(r, 500));
    expect(sandbox.load).toEqual({ running: 1, waiting: 0 });
    const t0 = performance.now();
    sandbox.killAll();
    expect(await run).toMatchObject({ status: 'failed', error: { code: 'sandbox_closed' } });
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(sandbox.load).toEqual({ running: 0, waiting: 0 });
  }, 20_000);
});
