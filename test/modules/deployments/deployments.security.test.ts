import net from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { probeNetworkIsolation } from '../../../src/sandbox/runner.js';
import {
  HANDLERS,
  agentToken,
  createAgent,
  deploy,
  deployReady,
  rawTarball,
  tarball,
  tempDir,
  type RawEntry,
} from './fixtures.js';

const dataDir = tempDir();
const { app, config } = await setupApp({ DATA_DIR: dataDir });
/** Sealed by bubblewrap (SANDBOX_ISOLATION=bwrap, the default): `/tmp` is the sandbox's own, so host paths below it are absent there. */
const sealed = config.sandbox.isolation === 'bwrap';
/** How a read or write of host path `p` is refused: by the permission model, or — below /tmp of a sealed sandbox, where the model admits the private tmpfs — by the path not existing there. */
const refused = (p: string, permission: string) =>
  sealed && p.startsWith('/tmp/')
    ? { ok: false, code: 'ENOENT', permission: null }
    : { ok: false, code: 'ERR_ACCESS_DENIED', permission };

const PROBE = `import fs from 'node:fs';
export default async function (input) {
  const attempt = async (fn) => { try { return { ok: true, value: await fn() }; } catch (e) { return { ok: false, code: e.code, permission: e.permission ?? null }; } };
  switch (input.op) {
    case 'read': return attempt(() => fs.readFileSync(input.path, 'utf8').slice(0, 100));
    case 'list': return attempt(() => fs.readdirSync(input.path));
    case 'write': return attempt(() => fs.writeFileSync(input.path, 'pwned'));
    case 'spawn': return attempt(async () => (await import('node:child_process')).execSync('id').toString());
    case 'worker': return attempt(async () => { const { Worker } = await import('node:worker_threads'); new Worker('1', { eval: true }); return 'started'; });
    case 'env': return Object.keys(process.env).sort();
    case 'uid': return [process.getuid(), process.getgid()];
    case 'connect': return new Promise(async (resolve) => {
      const s = (await import('node:net')).connect(input.port, '127.0.0.1');
      s.on('connect', () => { s.destroy(); resolve({ ok: true }); });
      s.on('error', (e) => resolve({ ok: false, code: e.code }));
    });
  }
}
`;

async function probeAgent() {
  const u = await createUser(app);
  const a = await createAgent(app, u);
  const d = await deployReady(app, u.headers, a.id, await tarball({ 'index.mjs': PROBE, 'data.txt': 'own file' }));
  const run = async (input: Record<string, unknown>) =>
    (await call(app, { method: 'POST', url: `/v2/agents/${a.id}/invoke`, headers: u.headers, payload: { input } }, 200))
      .body;
  return { u, a, d, run };
}

describe('deployments — sandbox isolation', () => {
  it('reads only its own artifact: /etc/passwd, the data dir and the platform source are refused', async () => {
    const { run, d } = await probeAgent();
    const own = await run({ op: 'read', path: 'data.txt' });
    expect(own.output).toEqual({ ok: true, value: 'own file' });
    for (const p of [
      '/etc/passwd',
      path.join(dataDir, 'secrets.key'),
      config.sandbox.dir,
      path.resolve('package.json'),
      path.join(config.sandbox.dir, d.artifact.sha256, '..'),
    ]) {
      const r = await run({ op: p === config.sandbox.dir ? 'list' : 'read', path: p });
      expect(r.status, p).toBe('succeeded');
      expect(r.output, p).toEqual(refused(p, 'FileSystemRead'));
    }
    // An uncaught permission error surfaces as failed / permission_denied.
    const u = await createUser(app);
    const a = await createAgent(app, u);
    await deployReady(app, u.headers, a.id, await tarball({ 'index.mjs': HANDLERS.reads }));
    const { body } = await call(
      app,
      {
        method: 'POST',
        url: `/v2/agents/${a.id}/invoke`,
        headers: u.headers,
        payload: { input: { path: '/etc/passwd' } },
      },
      200,
    );
    expect(body).toMatchObject({
      status: 'failed',
      error: { code: 'permission_denied', permission: 'FileSystemRead', resource: '/etc/passwd' },
    });
  });

  it('cannot write files, spawn processes or start workers', async () => {
    const { run } = await probeAgent();
    expect((await run({ op: 'write', path: path.join(dataDir, 'x') })).output).toMatchObject(
      refused(dataDir, 'FileSystemWrite'),
    );
    expect((await run({ op: 'write', path: '/etc/x' })).output).toMatchObject({
      ok: false,
      code: 'ERR_ACCESS_DENIED',
      permission: 'FileSystemWrite',
    });
    expect((await run({ op: 'write', path: 'x' })).output).toMatchObject({
      ok: false,
      code: 'ERR_ACCESS_DENIED',
      permission: 'FileSystemWrite',
    });
    expect((await run({ op: 'spawn' })).output).toMatchObject({
      ok: false,
      code: 'ERR_ACCESS_DENIED',
      permission: 'ChildProcess',
    });
    expect((await run({ op: 'worker' })).output).toMatchObject({
      ok: false,
      code: 'ERR_ACCESS_DENIED',
      permission: 'WorkerThreads',
    });
  });

  it.skipIf(process.getuid?.() !== 0)('runs as an unprivileged user (nobody) when the server is root', async () => {
    const { run } = await probeAgent();
    expect((await run({ op: 'uid' })).output).toEqual([65534, 65534]);
  });

  it('sees a minimal environment (no platform secrets)', async () => {
    process.env.AP_TEST_SECRET_SHOULD_NOT_LEAK = 'leak';
    const { run } = await probeAgent();
    const r = await run({ op: 'env' });
    // bwrap sets PWD to the working directory, /app.
    expect(r.output).toEqual(sealed ? ['LANG', 'NODE_ENV', 'PWD', 'TZ'] : ['LANG', 'NODE_ENV', 'TZ']);
  });

  it.skipIf(!probeNetworkIsolation())(
    'has no network when the host supports namespaces (not even the platform on loopback)',
    async () => {
      const server = net.createServer((s) => s.end()).listen(0, '127.0.0.1');
      await new Promise((r) => server.once('listening', r));
      try {
        const { run } = await probeAgent();
        const port = (server.address() as net.AddressInfo).port;
        const r = await run({ op: 'connect', port });
        expect(r.output.ok).toBe(false);
        expect(['ENETUNREACH', 'ECONNREFUSED', 'EADDRNOTAVAIL']).toContain(r.output.code);
      } finally {
        server.close();
      }
    },
  );
});

describe('deployments — malicious archives are rejected at deploy', () => {
  it('symlinks that escape, absolute paths, device files, hardlinks outside, link chains', async () => {
    const u = await createUser(app);
    const a = await createAgent(app, u);
    const index: RawEntry = { path: 'index.js', type: 'File', body: 'x' };
    const cases: Array<[string, Buffer, RegExp]> = [
      [
        'symlink to /etc/passwd',
        await tarball({ 'index.js': 'module.exports = async () => 1;', pw: { symlink: '/etc/passwd' } }),
        /absolute/,
      ],
      [
        'symlink to ../../',
        await tarball({ 'index.js': 'module.exports = async () => 1;', 'lib/up': { symlink: '../../..' } }),
        /outside/,
      ],
      ['absolute entry path', rawTarball([index, { path: '/abs.js', type: 'File', body: 'x' }]), /absolute/],
      ['character device', rawTarball([index, { path: 'dev', type: 'CharacterDevice' }]), /CharacterDevice/],
      ['block device', rawTarball([index, { path: 'blk', type: 'BlockDevice' }]), /BlockDevice/],
      ['FIFO', rawTarball([index, { path: 'fifo', type: 'FIFO' }]), /FIFO/],
      ['hardlink outside', rawTarball([index, { path: 'h', type: 'Link', linkpath: '../../etc/passwd' }]), /\.\./],
      [
        'hardlink to a non-member',
        rawTarball([index, { path: 'h', type: 'Link', linkpath: 'etc/passwd' }]),
        /earlier regular file/,
      ],
      [
        'link through link',
        rawTarball([
          index,
          { path: 'd', type: 'SymbolicLink', linkpath: '.' },
          { path: 'x', type: 'Directory' },
          { path: 'l', type: 'SymbolicLink', linkpath: 'd/x/../..' },
        ]),
        /through another symbolic link/,
      ],
      [
        'entry below a symlink',
        rawTarball([
          index,
          { path: 'd', type: 'SymbolicLink', linkpath: '.' },
          { path: 'd/evil.js', type: 'File', body: 'x' },
        ]),
        /below the symbolic link/,
      ],
      ['../ in a nested path', rawTarball([index, { path: 'a/../../evil.js', type: 'File', body: 'x' }]), /\.\./],
      [
        'duplicate path',
        rawTarball([index, { path: 'index.js', type: 'SymbolicLink', linkpath: 'x' }]),
        /more than once/,
      ],
    ];
    for (const [name, art, why] of cases) {
      const res = await deploy(app, u.headers, a.id, art, { entrypoint: 'index.js' });
      expect(res.statusCode, name).toBe(400);
      expect(res.json().code, name).toBe('invalid_artifact');
      expect(res.json().detail, name).toMatch(why);
    }
    const { body } = await call(app, { method: 'GET', url: `/v2/agents/${a.id}/deployments`, headers: u.headers }, 200);
    expect(body.data).toEqual([]);
  });

  it('accepts a symlink that stays inside the artifact', async () => {
    const u = await createUser(app);
    const a = await createAgent(app, u);
    const d = await deployReady(
      app,
      u.headers,
      a.id,
      await tarball({
        'lib/real.mjs': 'export default async () => "via link";',
        'index.mjs': { symlink: 'lib/real.mjs' },
      }),
    );
    expect(d.status).toBe('active');
    const { body } = await call(
      app,
      { method: 'POST', url: `/v2/agents/${a.id}/invoke`, headers: u.headers, payload: {} },
      200,
    );
    expect(body.output).toBe('via link');
  });
});

describe('deployments — who may call', () => {
  it('another account gets 404 on every route; so does a sibling agent token; no auth → 401', async () => {
    const owner = await createUser(app);
    const a = await createAgent(app, owner);
    const sibling = await createAgent(app, owner);
    const d = await deployReady(app, owner.headers, a.id, await tarball({ 'index.mjs': HANDLERS.echo }));
    const { body: inv } = await call(
      app,
      { method: 'POST', url: `/v2/agents/${a.id}/invoke`, headers: owner.headers, payload: {} },
      200,
    );
    const other = await createUser(app);
    const siblingToken = await agentToken(app, sibling);
    const art = await tarball({ 'index.mjs': HANDLERS.echo });
    const base = `/v2/agents/${a.id}`;
    const routes: Array<{ method: 'GET' | 'POST'; url: string; payload?: Record<string, unknown> }> = [
      { method: 'POST', url: `${base}/invoke`, payload: {} },
      { method: 'GET', url: `${base}/deployments` },
      { method: 'POST', url: `${base}/deployments/rollback`, payload: {} },
      { method: 'POST', url: `${base}/deployments/stop` },
      { method: 'POST', url: `${base}/deployments/redeploy`, payload: {} },
      { method: 'GET', url: `${base}/executions` },
      { method: 'GET', url: `${base}/executions/${inv.id}` },
    ];
    for (const headers of [other.headers, siblingToken]) {
      for (const r of routes) {
        const res = await app.inject({ ...r, headers });
        expect(res.statusCode, `${r.method} ${r.url}`).toBe(404);
        expect(res.json().code).toBe('not_found');
      }
      const res = await deploy(app, headers, a.id, art);
      expect(res.statusCode).toBe(404);
    }
    for (const r of routes) expect((await app.inject(r)).statusCode, `${r.method} ${r.url}`).toBe(401);
    // nothing changed for the owner
    const { body } = await call(app, { method: 'GET', url: `${base}/deployments`, headers: owner.headers }, 200);
    expect(body.data.map((x: any) => [x.id, x.status])).toEqual([[d.id, 'active']]);
    // the executions of one agent are not visible under another agent's path
    const r = await app.inject({
      method: 'GET',
      url: `/v2/agents/${sibling.id}/executions/${inv.id}`,
      headers: owner.headers,
    });
    expect(r.statusCode).toBe(404);
  });

  it('never returns environment values', async () => {
    const u = await createUser(app);
    const a = await createAgent(app, u);
    const d = await deployReady(app, u.headers, a.id, await tarball({ 'index.mjs': HANDLERS.echo }), {
      env: JSON.stringify({ SECRET: 'hunter2' }),
    });
    expect(d.env_keys).toEqual(['SECRET']);
    const { res } = await call(app, { method: 'GET', url: `/v2/agents/${a.id}/deployments`, headers: u.headers }, 200);
    expect(res.body).not.toContain('hunter2');
  });
});
