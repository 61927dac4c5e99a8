/**
 * The program each sandbox process runs (passed with `-e`, so the process needs read access to
 * nothing but the artifact directory). ES module source, plain JavaScript.
 *
 * One process is one execution environment (AWS Lambda's model): it imports the entrypoint once,
 * then serves invocations one at a time until the host closes its stdin or kills it.
 *
 * argv: `<root> <entrypoint relative to root> <max output bytes> [<egress proxy socket> <undici entry>]`.
 * With an egress socket (the deployment declares `egress`, see `egress.ts`), before the module
 * loads: a relay on 127.0.0.1:<ephemeral> forwards each TCP connection to the host proxy's unix
 * socket; `HTTP_PROXY`/`HTTPS_PROXY` (and lower-case forms) point at it, and undici's
 * `ProxyAgent` becomes the global dispatcher, so the built-in `fetch` goes through the proxy.
 * Host → process, stdin, one JSON object per line:
 *   `{ "t": "invoke", "input": any, "context": { invocationId, agentId, deploymentId, version, deadline } }`
 *   `{ "t": "reply", "id": n, "ok": true, "value": any }` | `{ "t": "reply", "id": n, "ok": false, "error": { code, message, status?, errors?, details? } }`
 * Process → host, fd 3, one JSON object per line:
 *   `{ "t": "ready", "export": name }` once the module is loaded, or `{ "t": "load_failed", "error": … }` (then exit);
 *   `{ "t": "result", "status": "succeeded", "output_json": "<JSON text>" }` | `{ "t": "result", "status": "failed", "error": … }`;
 *   `{ "t": "call", "id": n, "op": "tools.execute" | …, "args": any }` (a platform call; answered by a `reply`);
 *   `{ "t": "log", "level": "info" | "warn" | "error", "message": string, "fields"?: object }`;
 *   `{ "t": "fatal", "error": … }` before exiting on an uncaught exception or unhandled rejection.
 * stdout / stderr are the handler's logs (the host timestamps each line).
 *
 * Everything on these channels is readable and writable by the deployed code too (same process):
 * the host treats every message as untrusted, and none carries a credential — platform calls are
 * authorised on the host, as the agent, for the invocation the environment is running.
 *
 * Error codes: `load_error` (the module threw or could not be imported), `invalid_handler` (no
 * function exported as `default` or `handler`), `handler_error`, `permission_denied` (Node's
 * permission model refused an operation: file outside the artifact, child process, worker, …),
 * `out_of_memory` (an allocation failed: the process hit its memory limit), `uncaught_exception`,
 * `unhandled_rejection`, `no_result` (the handler's promise can never settle), `output_too_large`,
 * `output_not_serializable`.
 */
export const BOOTSTRAP_SOURCE = String.raw`
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
const [root, entry, maxOutputArg, egressSocket, undiciEntry] = process.argv.slice(1);
const maxOutput = Number(maxOutputArg);
const writeSync = fs.writeSync;
const stringify = JSON.stringify;
const parse = JSON.parse;
const exit = process.exit.bind(process);
const stdin = process.stdin;
function send(msg) {
  const buf = Buffer.from(stringify(msg) + '\n');
  let off = 0;
  while (off < buf.length) {
    try { off += writeSync(3, buf, off); } catch (e) { if (e && e.code !== 'EAGAIN') break; }
  }
}
function describe(e, code) {
  const err = e instanceof Error ? e : null;
  const oom = err && err.name === 'RangeError' && /allocation failed|out of memory/i.test(String(err.message));
  const out = { code: err && err.code === 'ERR_ACCESS_DENIED' ? 'permission_denied' : oom ? 'out_of_memory' : code, name: err ? String(err.name) : typeof e, message: err ? String(err.message) : String(e) };
  if (err && typeof err.stack === 'string') out.stack = err.stack.slice(0, 4096);
  if (err && err.permission) out.permission = String(err.permission);
  if (err && err.resource) out.resource = String(err.resource);
  return out;
}
let running = false;
const fatal = (code) => (e) => { send({ t: 'fatal', error: describe(e, code) }); exit(1); };
process.on('uncaughtException', fatal('uncaught_exception'));
process.on('unhandledRejection', fatal('unhandled_rejection'));
if (egressSocket) {
  const net = await import('node:net');
  const relay = net.createServer((c) => {
    const up = net.connect(egressSocket);
    c.on('error', () => up.destroy());
    up.on('error', () => c.destroy());
    c.pipe(up);
    up.pipe(c);
  });
  await new Promise((resolve) => relay.listen(0, '127.0.0.1', resolve));
  relay.unref();
  const proxyUrl = 'http://127.0.0.1:' + relay.address().port;
  for (const k of ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy']) process.env[k] = proxyUrl;
  const undici = await import(pathToFileURL(undiciEntry).href);
  const u = undici.default || undici;
  u.setGlobalDispatcher(new u.ProxyAgent(proxyUrl));
}
let mod;
try {
  mod = await import(pathToFileURL(path.join(root, entry)).href);
} catch (e) {
  send({ t: 'load_failed', error: describe(e, 'load_error') });
  exit(0);
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
if (!fn) {
  send({ t: 'load_failed', error: { code: 'invalid_handler', message: 'the entrypoint must export a function as "default" or "handler"' } });
  exit(0);
}

// Platform calls: a promise per call, settled by the host's reply. While an invocation runs with
// no call pending, stdin is unref'd so a handler whose promise can never settle empties the event
// loop ('beforeExit' -> no_result) instead of hanging until its timeout.
const pending = new Map();
let seq = 0;
const holdLoop = () => { if (running && pending.size === 0) stdin.unref(); else stdin.ref(); };
function call(op, args) {
  if (!running) return Promise.reject(Object.assign(new Error('platform calls are only possible while an invocation runs'), { code: 'invalid_state' }));
  return new Promise((resolve, reject) => {
    const id = ++seq;
    pending.set(id, { resolve, reject });
    holdLoop();
    send({ t: 'call', id, op, args });
  });
}
function reply(msg) {
  const p = pending.get(msg.id);
  if (!p) return;
  pending.delete(msg.id);
  holdLoop();
  if (msg.ok) p.resolve(msg.value);
  else {
    const e = msg.error || {};
    const err = new Error(String(e.message || 'platform call failed'));
    err.name = 'PlatformError';
    err.code = String(e.code || 'platform_error');
    if (typeof e.status === 'number') err.status = e.status;
    if (e.errors) err.errors = e.errors;
    if (e.details && typeof e.details === 'object') {
      err.details = e.details;
      if (typeof e.details.approval_id === 'string') {
        err.approvalId = e.details.approval_id;
        if (typeof e.details.approval_url === 'string') err.approvalUrl = e.details.approval_url;
        if (typeof e.details.expires_at === 'string') err.expiresAt = e.details.expires_at;
      }
    }
    p.reject(err);
  }
}
const log = (level) => (message, fields) => {
  if (!running) return;
  const m = typeof message === 'string' ? message : stringify(message);
  send({ t: 'log', level, message: String(m).slice(0, 8192), fields: fields && typeof fields === 'object' ? fields : undefined });
};
// context.tools.execute(service, tool, args, { timeout_ms?, approvalId?, waitForApproval? }): a call
// held for a person's approval rejects with code 'approval_required' and err.approvalId; with
// waitForApproval it polls the approval instead (250 ms doubling to 2 s) until a decision or the
// deadline, then re-submits with the approval id (denied / expired reject as the platform answers).
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
async function executeTool(service, tool, args, options) {
  const { waitForApproval, approvalId, ...rest } = options || {};
  const body = { ...rest, service, tool, arguments: args === undefined ? {} : args };
  if (approvalId !== undefined) body.approval_id = approvalId;
  if (waitForApproval !== true) return call('tools.execute', body);
  try {
    return await call('tools.execute', body);
  } catch (e) {
    if (!e || e.code !== 'approval_required' || typeof e.approvalId !== 'string') throw e;
    for (let pause = 250; ; pause = Math.min(pause * 2, 2000)) {
      const left = deadline - Date.now();
      if (left <= pause + 50) throw e;
      await sleep(pause);
      const state = await call('approvals.get', { id: e.approvalId });
      if (state && state.status !== 'pending') return call('tools.execute', { ...body, approval_id: e.approvalId });
    }
  }
}
let deadline = 0;
const platform = Object.freeze({
  tools: Object.freeze({
    execute: executeTool,
    search: (query, options) => call('tools.search', { query, ...(options || {}) }),
  }),
  memory: Object.freeze({
    get: (key) => call('memory.get', { key }),
    put: (key, value, options) => call('memory.put', { key, value, ...(options || {}) }),
    delete: (key, options) => call('memory.delete', { key, ...(options || {}) }),
    list: (options) => call('memory.list', { ...(options || {}) }),
    read: (agentId, key) => call('memory.read', { agentId, key }),
  }),
  userMemory: Object.freeze({
    search: (query, options) => call('userMemory.search', { query, ...(options || {}) }),
    add: (content, options) => call('userMemory.add', { content, ...(options || {}) }),
  }),
  log: Object.freeze({ info: log('info'), warn: log('warn'), error: log('error') }),
});

function result(msg) {
  running = false;
  for (const p of pending.values()) p.reject(Object.assign(new Error('the invocation ended'), { code: 'invalid_state' }));
  pending.clear();
  stdin.ref();
  send({ t: 'result', ...msg });
}
process.on('beforeExit', () => {
  if (running) result({ status: 'failed', error: { code: 'no_result', message: 'the handler returned a promise that never settled' } });
});
async function invoke(msg) {
  if (running) return;
  running = true;
  holdLoop();
  const c = msg.context || {};
  deadline = typeof c.deadline === 'number' ? c.deadline : 0;
  const context = Object.freeze({ ...c, getRemainingTimeInMillis: () => Math.max(0, (c.deadline || 0) - Date.now()), ...platform });
  let out;
  try {
    out = await fn(msg.input === undefined ? null : msg.input, context);
  } catch (e) {
    if (running) result({ status: 'failed', error: describe(e, 'handler_error') });
    return;
  }
  if (!running) return;
  let json;
  try { json = stringify(out === undefined ? null : out); } catch (e) { result({ status: 'failed', error: describe(e, 'output_not_serializable') }); return; }
  if (json === undefined) json = 'null';
  if (Buffer.byteLength(json) > maxOutput) { result({ status: 'failed', error: { code: 'output_too_large', message: 'the handler result is larger than ' + maxOutput + ' bytes' } }); return; }
  result({ status: 'succeeded', output_json: json });
}
let buffered = '';
stdin.setEncoding('utf8');
stdin.on('data', (chunk) => {
  buffered += chunk;
  let nl;
  while ((nl = buffered.indexOf('\n')) >= 0) {
    const line = buffered.slice(0, nl);
    buffered = buffered.slice(nl + 1);
    let msg;
    try { msg = parse(line); } catch { continue; }
    if (msg && msg.t === 'invoke') invoke(msg);
    else if (msg && msg.t === 'reply') reply(msg);
  }
});
stdin.on('end', () => exit(0));
send({ t: 'ready', export: fn.name || 'default' });
`;
