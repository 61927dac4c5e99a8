/**
 * The program each sandbox process runs (passed with `-e`, so the process needs read access to
 * nothing but the artifact directory). ES module source, plain JavaScript.
 *
 * argv: `<mode: load|invoke> <root> <entrypoint relative to root> <max output bytes>`.
 * stdin: `{ "input": any, "context": { invocationId, agentId, deploymentId, version, deadline } }`.
 * fd 3: exactly one JSON message, then the process exits:
 *   `{ "status": "succeeded", "output_json": "<JSON text>" }` or
 *   `{ "status": "failed", "error": { code, name?, message, stack?, permission?, resource? } }`.
 * stdout / stderr are the handler's logs (the parent timestamps each line).
 *
 * Error codes: `load_error` (the module threw or could not be imported), `invalid_handler` (no
 * function exported as `default` or `handler`), `handler_error`, `permission_denied` (Node's
 * permission model refused an operation: file outside the artifact, child process, worker, …),
 * `uncaught_exception`, `unhandled_rejection`, `output_too_large`, `output_not_serializable`.
 */
export const BOOTSTRAP_SOURCE = String.raw`
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
const [mode, root, entry, maxOutputArg] = process.argv.slice(1);
const maxOutput = Number(maxOutputArg);
const writeSync = fs.writeSync;
const stringify = JSON.stringify;
const exit = process.exit.bind(process);
let done = false;
function finish(msg) {
  if (done) return;
  done = true;
  const buf = Buffer.from(stringify(msg));
  let off = 0;
  while (off < buf.length) {
    try { off += writeSync(3, buf, off); } catch (e) { if (e && e.code !== 'EAGAIN') break; }
  }
  exit(0);
}
function describe(e, code) {
  const err = e instanceof Error ? e : null;
  const out = { code: err && err.code === 'ERR_ACCESS_DENIED' ? 'permission_denied' : code, name: err ? String(err.name) : typeof e, message: err ? String(err.message) : String(e) };
  if (err && typeof err.stack === 'string') out.stack = err.stack.slice(0, 4096);
  if (err && err.permission) out.permission = String(err.permission);
  if (err && err.resource) out.resource = String(err.resource);
  return out;
}
process.on('uncaughtException', (e) => finish({ status: 'failed', error: describe(e, 'uncaught_exception') }));
process.on('unhandledRejection', (e) => finish({ status: 'failed', error: describe(e, 'unhandled_rejection') }));
let payload;
try { payload = JSON.parse(fs.readFileSync(0, 'utf8') || '{}'); } catch (e) { payload = {}; }
let mod;
try {
  mod = await import(pathToFileURL(path.join(root, entry)).href);
} catch (e) {
  finish({ status: 'failed', error: describe(e, 'load_error') });
}
const pick = (m) => {
  if (!m) return null;
  if (typeof m.default === 'function') return m.default;
  if (typeof m.handler === 'function') return m.handler;
  if (m.default && typeof m.default.handler === 'function') return m.default.handler;
  if (m.default && typeof m.default.default === 'function') return m.default.default;
  return null;
};
const fn = pick(mod);
if (!done && !fn) finish({ status: 'failed', error: { code: 'invalid_handler', message: 'the entrypoint must export a function as "default" or "handler"' } });
if (!done && mode === 'load') finish({ status: 'succeeded', output_json: stringify({ export: fn.name || 'default' }) });
if (!done) {
  const c = payload.context || {};
  const context = Object.freeze({ ...c, getRemainingTimeInMillis: () => Math.max(0, (c.deadline || 0) - Date.now()) });
  let out;
  try {
    out = await fn(payload.input === undefined ? null : payload.input, context);
  } catch (e) {
    finish({ status: 'failed', error: describe(e, 'handler_error') });
  }
  if (!done) {
    let json;
    try { json = stringify(out === undefined ? null : out); } catch (e) { finish({ status: 'failed', error: describe(e, 'output_not_serializable') }); }
    if (!done && json === undefined) json = 'null';
    if (!done && Buffer.byteLength(json) > maxOutput) finish({ status: 'failed', error: { code: 'output_too_large', message: 'the handler result is larger than ' + maxOutput + ' bytes' } });
    finish({ status: 'succeeded', output_json: json });
  }
}
`;
