/**
 * The start of the embedded database thread (db/pglite-worker.cjs is its code, db/pglite-thread.ts
 * the main thread's client). Kept apart from the client, which loads PGlite's JavaScript on this
 * thread, so that the worker can start first and boot, load PGlite and compile its WebAssembly while
 * this thread loads the app: `npm start`'s script starts it before the app's bundle loads
 * ({@link EARLY_WORKER}), `main.ts` adopts that one or starts its own right after the configuration
 * parsed ({@link startPGliteWorker}).
 */
import { Worker } from 'node:worker_threads';

/** An Error as it crosses the thread: its own primitive fields, `database: true` for PostgreSQL's (`DatabaseError`). */
export type WorkerError = Record<string, unknown> & { message: string; name: string; database: boolean };

/**
 * Where scripts/start.mjs leaves the worker it started before loading the bundle
 * (`globalThis[EARLY_WORKER]`, a `Worker` running db/pglite-worker.cjs), when the environment named
 * no other database.
 */
export const EARLY_WORKER = Symbol.for('agent-platform.pglite-worker');

/** A worker started ahead (by the start script or {@link startPGliteWorker}), not yet taken by a client. */
let early: Worker | null = null;

/** The start script's worker, taken once (undefined: none, or already taken). */
function fromStartScript(): Worker | undefined {
  const g = globalThis as Record<symbol, Worker | undefined>;
  const w = g[EARLY_WORKER];
  delete g[EARLY_WORKER];
  return w;
}

function spawn(): Worker {
  return new Worker(new URL('./pglite-worker.cjs', import.meta.url));
}

/**
 * Start the next embedded database thread now (main.ts, right after the configuration parsed), or
 * adopt the one the start script started, so that it boots beside the app's start; the next
 * {@link takePGliteWorker} gets it. Once per process is enough: a second call while one waits does nothing.
 */
export function startPGliteWorker(): void {
  early ??= fromStartScript() ?? spawn();
}

/** End the start script's worker when the configuration uses no database thread (its guess from the environment was wrong). */
export function discardEarlyPGliteWorker(): void {
  void fromStartScript()?.terminate();
}

/** The worker {@link startPGliteWorker} started, or a new one. The caller owns it (and ends it). */
export function takePGliteWorker(): Worker {
  const w = early ?? fromStartScript() ?? spawn();
  early = null;
  return w;
}
