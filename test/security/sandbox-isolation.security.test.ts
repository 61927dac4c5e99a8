/**
 * Deployed code is sealed off the host's file system (bubblewrap, `src/sandbox/isolation.ts`):
 * host Unix sockets — a world-writable one this test starts, and in the PostgreSQL pass the real
 * database socket — are unreachable from a handler while the test process itself reaches them;
 * `/proc` of the sandbox lists only its own processes; its root holds only the runtime, the
 * artifact and a private /tmp. Real deployments through the HTTP API.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../helpers/app.js';
import { createAgent, deployReady, processesWithEnv, tarball, tempDir } from '../modules/deployments/fixtures.js';

const dataDir = tempDir();
const { app, config } = await setupApp({ DATA_DIR: dataDir });

const PROBE = `import fs from 'node:fs';
import net from 'node:net';
export default async function (input) {
  const attempt = (fn) => { try { return { ok: true, value: fn() }; } catch (e) { return { ok: false, code: e.code }; } };
  switch (input.op) {
    case 'unix': return new Promise((resolve) => {
      const s = net.connect(input.path);
      s.on('connect', () => { s.destroy(); resolve({ ok: true }); });
      s.on('error', (e) => resolve({ ok: false, code: e.code }));
    });
    case 'tmp': fs.writeFileSync('/tmp/scratch', input.text); return fs.readFileSync('/tmp/scratch', 'utf8');
    case 'proc': return attempt(() => fs.readdirSync('/proc'));
    case 'pid': return process.pid;
    case 'hold': return new Promise((r) => setTimeout(() => r('held'), input.ms));
  }
}
`;

/** A world-writable Unix socket server in a temp dir, answering "hello". */
async function socketServer(): Promise<{ path: string; server: net.Server }> {
  const dir = tempDir('sock-');
  fs.chmodSync(dir, 0o777);
  const p = path.join(dir, 'open.sock');
  const server = net.createServer((s) => {
    s.on('error', () => {});
    s.end('hello');
  });
  await new Promise<void>((r) => server.listen(p, () => r()));
  fs.chmodSync(p, 0o777);
  return { path: p, server };
}

/** Can this (the test's) process connect to the Unix socket `p`? */
function hostConnects(p: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(p, () => (s.destroy(), resolve(true)));
    s.on('error', () => resolve(false));
  });
}

const mark = randomBytes(6).toString('hex');
const u = await createUser(app);
const agent = await createAgent(app, u);
await deployReady(app, u.headers, agent.id, await tarball({ 'index.mjs': PROBE }), {
  env: JSON.stringify({ AP_SANDBOX_MARK: mark }),
});
const run = async (input: Record<string, unknown>) =>
  (
    await call(
      app,
      { method: 'POST', url: `/v2/agents/${agent.id}/invoke`, headers: u.headers, payload: { input } },
      200,
    )
  ).body;

afterAll(() => app.close());

describe.skipIf(config.sandbox.isolation !== 'bwrap')('sandbox: sealed off the host file system (bubblewrap)', () => {
  it('a handler cannot reach a world-writable Unix socket on the host; the test process can', async () => {
    const { path: sock, server } = await socketServer();
    try {
      expect(await hostConnects(sock)).toBe(true);
      const r = await run({ op: 'unix', path: sock });
      expect(r.status).toBe('succeeded');
      expect(r.output).toEqual({ ok: false, code: 'ENOENT' });
    } finally {
      server.close();
    }
  });

  it.skipIf(!process.env.TEST_DATABASE_URL)(
    'a handler cannot reach the PostgreSQL socket; the test process can',
    async () => {
      const pg = '/var/run/postgresql/.s.PGSQL.5432';
      expect(await hostConnects(pg)).toBe(true);
      const r = await run({ op: 'unix', path: pg });
      expect(r.output).toEqual({ ok: false, code: 'ENOENT' });
    },
  );

  it('has a private writable /tmp, and its pid is that of a new PID namespace', async () => {
    expect((await run({ op: 'tmp', text: 'scratch ok' })).output).toBe('scratch ok');
    expect(fs.existsSync('/tmp/scratch') && fs.readFileSync('/tmp/scratch', 'utf8') === 'scratch ok').toBe(false);
    expect((await run({ op: 'pid' })).output).toBeLessThanOrEqual(2);
    // Node's permission model still refuses /proc to the handler (the second wall).
    expect((await run({ op: 'proc' })).output).toEqual({ ok: false, code: 'ERR_ACCESS_DENIED' });
  });

  it('seen from the host: its /proc lists only its own processes, its root only the runtime, the artifact, /tmp', async () => {
    // Keep the environment busy while the host looks into it through /proc/<pid>/root.
    const held = run({ op: 'hold', ms: 1500 });
    let node: number | undefined;
    for (let i = 0; i < 100 && !node; i++) {
      node = processesWithEnv('AP_SANDBOX_MARK', mark).find((p) =>
        fs.readFileSync(`/proc/${p}/status`, 'utf8').match(/^NSpid:\s+\d+\s+2$/m),
      );
      if (!node) await new Promise((r) => setTimeout(r, 20));
    }
    expect(node, 'the sandbox node process (pid 2 of its namespace)').toBeDefined();
    const root = `/proc/${node}/root`;
    const pids = fs.readdirSync(path.join(root, 'proc')).filter((n) => /^\d+$/.test(n));
    expect(pids.sort()).toEqual(['1', '2']);
    const cmd = (p: string) => fs.readFileSync(path.join(root, 'proc', p, 'cmdline'), 'latin1').split('\0')[0];
    expect(path.basename(cmd('1'))).toBe('bwrap');
    expect(cmd('2')).toBe(process.execPath);
    const top = fs.readdirSync(root).sort();
    expect(
      top.every((n) => ['app', 'dev', 'lib', 'lib32', 'lib64', 'libx32', 'proc', 'tmp', 'usr'].includes(n)),
      top.join(','),
    ).toBe(true);
    for (const hostPath of [
      'etc/passwd',
      'var/run/postgresql',
      'run/postgresql',
      path.relative('/', dataDir),
      path.relative('/', path.resolve('package.json')),
    ]) {
      expect(fs.existsSync(path.join(root, hostPath)), hostPath).toBe(false);
    }
    expect(fs.readdirSync(path.join(root, 'app'))).toEqual(['index.mjs']);
    expect((await held).output).toBe('held');
  });
});
