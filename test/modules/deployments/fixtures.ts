/**
 * Helpers of the deployment tests: real gzip tarballs built with the `tar` package, multipart
 * bodies for `app.inject`, agents created through the API, polling.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { Header, create } from 'tar';
import { gzipSync } from 'node:zlib';
import { call, type TestUser } from '../../helpers/app.js';
import { subscribeAgentTool } from '../../helpers/agents.js';

/**
 * One root for every temporary directory of this test worker (the suite runs without isolation,
 * so this module is evaluated once per worker, not once per file), removed when the worker exits.
 */
const TMP_ROOT = path.join(os.tmpdir(), `ap-dep-test-${process.pid}-${randomBytes(4).toString('hex')}`);
const removeRoot = () => fs.rmSync(TMP_ROOT, { recursive: true, force: true });
process.once('exit', removeRoot);

/** A fresh temporary directory, mode 0755 (traversable by the sandbox's unprivileged user, as DATA_DIR is in production). */
export function tempDir(prefix = 'd-'): string {
  if (!fs.existsSync(TMP_ROOT)) {
    fs.mkdirSync(TMP_ROOT, { mode: 0o755 });
    fs.chmodSync(TMP_ROOT, 0o755);
  }
  const dir = fs.mkdtempSync(path.join(TMP_ROOT, prefix));
  fs.chmodSync(dir, 0o755);
  return dir;
}

/**
 * Pack `files` (path → content; a `{ symlink }` value makes a symbolic link) into a .tar.gz with
 * the `tar` package. `prefix` puts everything under a top directory (e.g. `package` like `npm pack`).
 */
export async function tarball(
  files: Record<string, string | { symlink: string }>,
  opts: { prefix?: string } = {},
): Promise<Buffer> {
  const root = tempDir('ap-tar-');
  const base = opts.prefix ? path.join(root, opts.prefix) : root;
  for (const [rel, content] of Object.entries(files)) {
    const p = path.join(base, rel);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    if (typeof content === 'string') fs.writeFileSync(p, content);
    else fs.symlinkSync(content.symlink, p);
  }
  return pack(root, opts.prefix ? [opts.prefix] : fs.readdirSync(root));
}

/** Pack `paths` relative to `cwd` with the `tar` package (`preservePaths` keeps `../` and absolute names as given). */
export async function pack(cwd: string, paths: string[], preservePaths = false): Promise<Buffer> {
  const stream = create({ gzip: true, cwd, portable: true, preservePaths }, paths);
  const chunks: Buffer[] = [];
  for await (const c of stream as AsyncIterable<Buffer>) chunks.push(c);
  return Buffer.concat(chunks);
}

/** A raw tar entry (types the `tar` package will not pack from disk: devices, FIFOs, crafted links and paths). */
export interface RawEntry {
  path: string;
  type: 'CharacterDevice' | 'BlockDevice' | 'FIFO' | 'Link' | 'SymbolicLink' | 'File' | 'Directory';
  linkpath?: string;
  body?: string;
}

/** A .tar.gz of raw entries, each header built with the `tar` package's `Header`. */
export function rawTarball(entries: RawEntry[]): Buffer {
  const blocks: Buffer[] = [];
  for (const e of entries) {
    const body = Buffer.from(e.body ?? '');
    const h = new Header({
      path: e.path,
      type: e.type,
      mode: 0o644,
      size: body.length,
      mtime: new Date(0),
      uid: 0,
      gid: 0,
      linkpath: e.linkpath,
    });
    const block = Buffer.alloc(512);
    h.encode(block, 0);
    blocks.push(block);
    if (body.length) blocks.push(body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return gzipSync(Buffer.concat(blocks));
}

/** Build a multipart/form-data body for `app.inject`. */
export function multipart(
  parts: Array<{ name: string; value: string } | { name: string; filename: string; content: Buffer; type?: string }>,
): { payload: Buffer; headers: Record<string, string> } {
  const boundary = `----ap${randomBytes(8).toString('hex')}`;
  const chunks: Buffer[] = [];
  for (const p of parts) {
    if ('content' in p) {
      chunks.push(
        Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"; filename="${p.filename}"\r\nContent-Type: ${p.type ?? 'application/gzip'}\r\n\r\n`,
        ),
      );
      chunks.push(p.content, Buffer.from('\r\n'));
    } else {
      chunks.push(
        Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"\r\n\r\n${p.value}\r\n`),
      );
    }
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(chunks), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

/** Create an agent of `user` through the API. */
export async function createAgent(
  app: FastifyInstance,
  user: TestUser,
  name = `agent-${randomBytes(3).toString('hex')}`,
): Promise<{ id: string; clientId: string; clientSecret: string }> {
  const { body } = await call(
    app,
    { method: 'POST', url: '/v2/agents', headers: user.headers, payload: { name } },
    201,
  );
  return { id: body.id, clientId: body.client_id, clientSecret: body.client_secret };
}

/** An agent access token (client_credentials, client_secret_post). */
export async function agentToken(
  app: FastifyInstance,
  agent: { clientId: string; clientSecret: string },
): Promise<{ authorization: string }> {
  const { body } = await call(
    app,
    {
      method: 'POST',
      url: '/auth/agent/token',
      payload: { grant_type: 'client_credentials', client_id: agent.clientId, client_secret: agent.clientSecret },
    },
    200,
  );
  return { authorization: `Bearer ${body.access_token}` };
}

/** POST the artifact to /v2/agents/:id/deploy; returns the raw response. */
export async function deploy(
  app: FastifyInstance,
  headers: Record<string, string>,
  agentId: string,
  artifact: Buffer,
  fields: Record<string, string> = {},
) {
  const form = multipart([
    { name: 'artifact', filename: 'agent.tar.gz', content: artifact },
    ...Object.entries(fields).map(([name, value]) => ({ name, value })),
  ]);
  return app.inject({
    method: 'POST',
    url: `/v2/agents/${agentId}/deploy`,
    headers: { ...headers, ...form.headers },
    payload: form.payload,
  });
}

/** Poll `fn` until it returns a truthy value (or throw after `ms`). */
export async function waitFor<T>(
  fn: () => Promise<T | null | undefined | false>,
  ms = 10_000,
  what = 'condition',
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Deploy and wait until the prepare step settles; returns the final deployment record. */
export async function deployReady(
  app: FastifyInstance,
  headers: Record<string, string>,
  agentId: string,
  artifact: Buffer,
  fields: Record<string, string> = {},
): Promise<any> {
  const res = await deploy(app, headers, agentId, artifact, fields);
  if (res.statusCode !== 202) throw new Error(`deploy: expected 202, got ${res.statusCode}: ${res.body}`);
  const id = res.json().id as string;
  return waitFor(
    async () => {
      const { body } = await call(
        app,
        { method: 'GET', url: `/v2/agents/${agentId}/deployments?limit=100`, headers },
        200,
      );
      const d = body.data.find((x: any) => x.id === id);
      return d && d.status !== 'preparing' ? d : null;
    },
    15_000,
    `deployment ${id} to be prepared`,
  );
}

/**
 * An agent of `user` subscribed to the service named `service` (`POST /v2/agents/:id/tools/subscribe`),
 * with `handler` deployed as its `index.mjs` and active — the deployed-agent face of a tool test.
 * @returns the agent (id and client credentials)
 * @throws when the deployment does not become active
 */
export async function deployedToolAgent(
  app: FastifyInstance,
  user: TestUser,
  service: string,
  handler: string,
): Promise<{ id: string; clientId: string; clientSecret: string }> {
  const agent = await createAgent(app, user);
  await subscribeAgentTool(app, user, agent.id, service);
  const dep = await deployReady(app, user.headers, agent.id, await tarball({ 'index.mjs': handler }));
  if (dep.status !== 'active') throw new Error(`deployment of ${agent.id}: ${dep.status} ${JSON.stringify(dep.error)}`);
  return agent;
}

/** Handler sources used across the tests. */
export const HANDLERS = {
  echo: `export default async function handler(input, context) {
  console.log('echo called', JSON.stringify(input));
  console.error('to stderr');
  return { echo: input, version: context.version, invocationId: context.invocationId, remaining: context.getRemainingTimeInMillis() > 0 };
}
`,
  versioned: (v: string) => `export async function handler(input) { return { v: ${JSON.stringify(v)}, input }; }\n`,
  throws: `export default async function () { console.log('about to fail'); throw new TypeError('handler exploded'); }\n`,
  loops: `export default async function () { console.log('spinning'); for (;;) {} }\n`,
  /** Runs `input.tool` of `input.service` with `input.args`; a refusal comes back as data: `{ ok: false, code, status, message, details }`. */
  catchingTool: `export default async function (input, context) {
  try {
    const r = await context.tools.execute(input.service, input.tool, input.args);
    return { ok: true, status: r.status };
  } catch (e) {
    return { ok: false, code: e.code, status: e.status, message: e.message, details: e.details ?? null };
  }
}
`,
  reads: `import fs from 'node:fs';
export default async function (input) { return fs.readFileSync(input.path, 'utf8'); }
`,
};

/**
 * Host pids of the sandbox processes whose environment holds `NAME=value` (a marker variable the
 * test deployed with): every process of the environment's tree inherits it. Reads `/proc/<pid>/environ`.
 */
export function processesWithEnv(name: string, value: string): number[] {
  const needle = `\0${name}=${value}\0`;
  const out: number[] = [];
  for (const n of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(n)) continue;
    try {
      if (`\0${fs.readFileSync(`/proc/${n}/environ`, 'latin1')}`.includes(needle)) out.push(Number(n));
    } catch {
      /* gone, or not ours */
    }
  }
  return out;
}

/** utime + stime of `pid` in clock ticks (fields 14 and 15 of /proc/<pid>/stat), null when gone. */
export function cpuTicks(pid: number): number | null {
  try {
    const s = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return Number(f[11]) + Number(f[12]);
  } catch {
    return null;
  }
}
