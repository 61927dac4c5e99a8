/**
 * The embedded database thread (db/pglite-worker.ts starts it; db/pglite-thread.ts is the main
 * thread's client). Plain CommonJS so that scripts/start.mjs can start it before the app's bundle
 * loads. Compiles `pglite.wasm` and loads PGlite with the vector and pg_trgm extensions at once,
 * then answers `{id, op, …}` messages: `open`, `query` and `exec` (one statement or script, its
 * protocol exchange in one call), `execProtocol` and `execProtocolStream` (the backend's messages,
 * cloned) and `close`, with `{id, result}` or `{id, error}` (an Error's own fields, `database: true`
 * for PostgreSQL's). Calls run in arrival order; the client sends one at a time.
 */
'use strict';
const { parentPort } = require('node:worker_threads');
const path = require('node:path');
const { readFile } = require('node:fs/promises');
// pglite.wasm compiles on V8's background threads from the worker's first moment, beside the rest.
const entry = require.resolve('@electric-sql/pglite');
const wasm = readFile(path.join(path.dirname(entry), 'pglite.wasm'))
  .then((bytes) => WebAssembly.compile(bytes))
  .catch(() => undefined);
const { PGlite, messages, protocol, parse } = require(entry);
const { serialize } = protocol;
const { vector } = require('@electric-sql/pglite-pgvector');
const { pg_trgm } = require('@electric-sql/pglite/contrib/pg_trgm');
let db = null;
// One protocol message to the backend; its answer's messages (PGlite throws DatabaseError on ErrorResponse).
const run = (msg) => db.execProtocolStream(msg, { syncToFs: false });
const fail = (err) => {
  const fields = {};
  for (const k of Object.keys(err || {})) {
    const v = err[k];
    if (v === undefined || (typeof v !== 'object' && typeof v !== 'function')) fields[k] = v;
  }
  return {
    ...fields,
    message: String((err && err.message) || err),
    name: (err && err.name) || 'Error',
    database: err instanceof messages.DatabaseError,
  };
};
const ops = {
  async open(m) {
    const pgliteWasmModule = await wasm;
    db = await PGlite.create(m.dataDir, {
      extensions: { vector, pg_trgm },
      postgresqlconf: m.postgresqlconf,
      ...(pgliteWasmModule ? { pgliteWasmModule } : {}),
    });
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
      const values = m.params.map((v, i) =>
        v === null || v === undefined ? null : db.serializers[types[i]] ? db.serializers[types[i]](v) : v.toString(),
      );
      out.push(
        ...(await run(serialize.bind({ values }))),
        ...(await run(serialize.describe({ type: 'P' }))),
        ...(await run(serialize.execute({}))),
      );
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
  async execProtocol(m) {
    return (await db.execProtocol(m.message, { syncToFs: m.syncToFs })).messages;
  },
  async execProtocolStream(m) {
    return await db.execProtocolStream(m.message, { syncToFs: m.syncToFs });
  },
  async close() {
    if (db) await db.close();
    return null;
  },
};
let chain = Promise.resolve();
parentPort.on('message', (m) => {
  chain = chain.then(async () => {
    try {
      parentPort.postMessage({ id: m.id, result: await ops[m.op](m) });
    } catch (err) {
      parentPort.postMessage({ id: m.id, error: fail(err) });
    }
  });
});
