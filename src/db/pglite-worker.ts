/**
 * The worker side of the embedded database thread (db/pglite-thread.ts is the main thread's client):
 * the worker's source and its start. Kept apart from the client, which loads PGlite's JavaScript on
 * this thread, so that `main.ts` can start the worker first thing ({@link startPGliteWorker}) and
 * the worker boots, loads PGlite and compiles its WebAssembly while this thread loads the app.
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { pgliteWasmFile } from './pglite-wasm.js';

/** An Error as it crosses the thread: its own primitive fields, `database: true` for PostgreSQL's (`DatabaseError`). */
export type WorkerError = Record<string, unknown> & { message: string; name: string; database: boolean };

/**
 * The worker's source (CommonJS, run with `eval: true`): compiles `pglite.wasm` and loads PGlite
 * with the vector and pg_trgm extensions from the absolute paths in `workerData` at once, then answers `{id, op, …}` messages:
 * `open`, `query` and `exec` (one statement or script, its protocol exchange in one call),
 * `execProtocol` and `execProtocolStream` (the backend's messages, cloned) and `close`, with `{id, result}` or `{id, error}` (an Error's own fields, `database: true` for
 * PostgreSQL's). Calls run in arrival order; the client sends one at a time.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { readFile } = require('node:fs/promises');
// pglite.wasm compiles on V8's background threads from the worker's first moment, beside the rest.
const wasm = readFile(workerData.wasm).then((bytes) => WebAssembly.compile(bytes)).catch(() => undefined);
const { PGlite, messages, protocol, parse } = require(workerData.pglite);
const { serialize } = protocol;
const { vector } = require(workerData.vector);
const { pg_trgm } = require(workerData.trgm);
let db = null;
// One protocol message to the backend; its answer's messages (PGlite throws DatabaseError on ErrorResponse).
const run = (msg) => db.execProtocolStream(msg, { syncToFs: false });
const fail = (err) => {
  const fields = {};
  for (const k of Object.keys(err || {})) { const v = err[k]; if (v === undefined || typeof v !== 'object' && typeof v !== 'function') fields[k] = v; }
  return { ...fields, message: String((err && err.message) || err), name: (err && err.name) || 'Error', database: err instanceof messages.DatabaseError };
};
const ops = {
  async open(m) {
    const pgliteWasmModule = await wasm;
    db = await PGlite.create(m.dataDir, { extensions: { vector, pg_trgm }, postgresqlconf: m.postgresqlconf, ...(pgliteWasmModule ? { pgliteWasmModule } : {}) });
    return null;
  },
  // One statement through the extended protocol, as PGlite's own query() sends it (Parse, Describe,
  // Bind with the parameters serialised by the described types, Describe, Execute, Sync) in one
  // call: the answer's messages are parsed on the caller's side, with its parsers.
  async query(m) {
    const out = [];
    try {
      out.push(...(await run(serialize.parse({ text: m.text, types: m.paramTypes }))));
      const types = parse.parseDescribeStatementResults(await run(serialize.describe({ type: 'S' })));
      const values = m.params.map((v, i) => (v === null || v === undefined ? null : db.serializers[types[i]] ? db.serializers[types[i]](v) : v.toString()));
      out.push(...(await run(serialize.bind({ values }))), ...(await run(serialize.describe({ type: 'P' }))), ...(await run(serialize.execute({}))));
    } finally {
      out.push(...(await run(serialize.sync())));
    }
    return out;
  },
  // A simple-protocol script (several statements, no parameters), as PGlite's exec() sends it.
  async exec(m) {
    const out = [];
    try {
      out.push(...(await run(serialize.query(m.text))));
    } finally {
      out.push(...(await run(serialize.sync())));
    }
    return out;
  },
  async execProtocol(m) { return (await db.execProtocol(m.message, { syncToFs: m.syncToFs })).messages; },
  async execProtocolStream(m) { return await db.execProtocolStream(m.message, { syncToFs: m.syncToFs }); },
  async close() { if (db) await db.close(); return null; },
};
let chain = Promise.resolve();
parentPort.on('message', (m) => {
  chain = chain.then(async () => {
    try { parentPort.postMessage({ id: m.id, result: await ops[m.op](m) }); }
    catch (err) { parentPort.postMessage({ id: m.id, error: fail(err) }); }
  });
});
`;

/** A worker started ahead by {@link startPGliteWorker}, not yet taken by a client. */
let early: Worker | null = null;

function spawn(): Worker {
  const require = createRequire(import.meta.url);
  return new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: {
      wasm: fileURLToPath(pgliteWasmFile()),
      pglite: require.resolve('@electric-sql/pglite'),
      vector: require.resolve('@electric-sql/pglite-pgvector'),
      trgm: require.resolve('@electric-sql/pglite/contrib/pg_trgm'),
    },
  });
}

/**
 * Start the next embedded database thread now (main.ts, right after the configuration parsed), so
 * that it boots beside the app's start; the next {@link takePGliteWorker} gets it. Once per process
 * is enough: a second call while one waits does nothing.
 */
export function startPGliteWorker(): void {
  early ??= spawn();
}

/** The worker {@link startPGliteWorker} started, or a new one. The caller owns it (and ends it). */
export function takePGliteWorker(): Worker {
  const w = early ?? spawn();
  early = null;
  return w;
}
