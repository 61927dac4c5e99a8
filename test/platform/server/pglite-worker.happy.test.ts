/**
 * The start of the embedded database thread (db/pglite-worker.ts): `npm start`'s script starts the
 * worker before the bundle loads and leaves it under `EARLY_WORKER`; `main.ts` adopts that one
 * instead of starting a second, or ends it when the configuration uses no database thread.
 */
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import {
  EARLY_WORKER,
  discardEarlyPGliteWorker,
  startPGliteWorker,
  takePGliteWorker,
} from '../../../src/db/pglite-worker.js';

const WORKER_FILE = path.resolve(import.meta.dirname, '../../../src/db/pglite-worker.cjs');
const slot = globalThis as Record<symbol, Worker | undefined>;
const started: Worker[] = [];

/** A worker as scripts/start.mjs starts it. */
function asTheStartScript(): Worker {
  const w = new Worker(WORKER_FILE);
  started.push(w);
  slot[EARLY_WORKER] = w;
  return w;
}

afterEach(async () => {
  delete slot[EARLY_WORKER];
  await Promise.all(started.splice(0).map((w) => w.terminate()));
});

describe('the embedded database thread', () => {
  it("adopts the start script's worker instead of starting a second, and takes it once", async () => {
    const early = asTheStartScript();
    startPGliteWorker();
    expect(slot[EARLY_WORKER]).toBeUndefined();
    const taken = takePGliteWorker();
    expect(taken).toBe(early);
    const next = takePGliteWorker(); // nothing ahead any more: a new worker
    started.push(next);
    expect(next).not.toBe(early);
  });

  it("ends the start script's worker when the configuration uses none", async () => {
    const early = asTheStartScript();
    const exited = new Promise<number>((resolve) => early.once('exit', resolve));
    discardEarlyPGliteWorker();
    expect(slot[EARLY_WORKER]).toBeUndefined();
    await expect(exited).resolves.toBeTypeOf('number');
  });

  it('a worker started from its file answers the protocol: open, a query, close', async () => {
    const w = takePGliteWorker();
    started.push(w);
    const call = (m: Record<string, unknown>) =>
      new Promise<{ result?: unknown; error?: { message: string } }>((resolve) => {
        const id = Math.random();
        const on = (r: { id: number }) => {
          if (r.id !== id) return;
          w.off('message', on);
          resolve(r as never);
        };
        w.on('message', on);
        w.postMessage({ ...m, id });
      });
    expect(await call({ op: 'open', dataDir: 'memory://' })).toEqual({ id: expect.any(Number), result: null });
    const { result } = await call({ op: 'exec', text: 'select 41 + 1 as n' });
    expect(result).toContainEqual(expect.objectContaining({ name: 'dataRow', fields: ['42'] }));
    expect((await call({ op: 'close' })).result).toBeNull();
  });
});
