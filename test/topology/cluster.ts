/**
 * A small production topology on loopback for the topology test: one fresh PostgreSQL database,
 * the shared Redis, two API processes (`PROCESS_ROLE=api`), one worker (`PROCESS_ROLE=worker`)
 * and HAProxy (Debian's `haproxy`) balancing the two APIs round robin with `/readyz` checks —
 * the layout `docs/operations.md` describes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from '../helpers/net.js';
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js';

/** The running topology. `lb` is the load balancer's URL (also `PUBLIC_URL` of every process). */
export interface Cluster {
  lb: string;
  apis: [ServerProcess, ServerProcess];
  worker: ServerProcess;
  /** Kill the worker with SIGKILL and wait for it to be gone. */
  killWorker(): Promise<void>;
  /** Start a new worker with the same environment; resolves when it is ready. */
  restartWorker(): Promise<ServerProcess>;
  close(): Promise<void>;
}

/** True when the topology can run: PostgreSQL and Redis given, and haproxy on PATH. */
export function topologyAvailable(): { ok: boolean; why: string } {
  if (!process.env.TEST_DATABASE_URL || !process.env.TEST_REDIS_URL)
    return { ok: false, why: 'needs TEST_DATABASE_URL and TEST_REDIS_URL' };
  const found =
    (process.env.PATH ?? '').split(':').some((d) => fs.existsSync(path.join(d, 'haproxy'))) ||
    fs.existsSync('/usr/sbin/haproxy');
  return found ? { ok: true, why: '' } : { ok: false, why: 'needs haproxy (apt-get install haproxy)' };
}

function haproxyConfig(lbPort: number, apiPorts: number[]): string {
  return [
    'global',
    '  maxconn 512',
    'defaults',
    '  mode http',
    '  timeout connect 2s',
    '  timeout client 60s',
    '  timeout server 60s',
    '  option http-server-close',
    'frontend api',
    `  bind 127.0.0.1:${lbPort}`,
    '  default_backend apis',
    'backend apis',
    '  balance roundrobin',
    '  option httpchk GET /readyz',
    ...apiPorts.map((p, i) => `  server api${i} 127.0.0.1:${p} check inter 1s fall 2 rise 1`),
    '',
  ].join('\n');
}

async function waitHttp(url: string, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      const r = await fetch(url);
      if (r.ok) return;
    } catch {
      /* not up yet */
    }
    if (Date.now() > until) throw new Error(`${url} did not answer 2xx within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Create a fresh database next to `TEST_DATABASE_URL`'s; returns its URL and a drop function. */
async function freshDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const base = new URL(process.env.TEST_DATABASE_URL!);
  const name = `topo_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const admin = new URL(base);
  admin.pathname = '/postgres';
  const run = async (sql: string) => {
    const c = new pg.Client({ connectionString: admin.toString() });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  await run(`CREATE DATABASE "${name}"`);
  const url = new URL(base);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => run(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`) };
}

/** Start the topology; `env` is added to every process (e.g. quotas). */
export async function startCluster(env: Record<string, string> = {}): Promise<Cluster> {
  const db = await freshDatabase();
  const [lbPort, portA, portB] = [await freePort(), await freePort(), await freePort()];
  const lb = `http://127.0.0.1:${lbPort}`;
  const tag = randomBytes(4).toString('hex');
  const dirs: string[] = [];
  const dataDir = () => {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-topo-'));
    fs.chmodSync(d, 0o755); // the sandbox's unprivileged user must traverse it, as in production
    dirs.push(d);
    return d;
  };
  // development, not test: a test-mode process gives its job queue a random prefix of its own,
  // and here three processes must share one queue.
  const common: Record<string, string> = {
    NODE_ENV: 'development',
    LOG_LEVEL: 'info',
    DATABASE_URL: db.url,
    REDIS_URL: process.env.TEST_REDIS_URL!,
    PUBLIC_URL: lb,
    JOBS_PREFIX: `topo-${tag}`,
    RATE_LIMIT_REDIS_PREFIX: `topo:${tag}:rl:`,
    ANALYTICS_REDIS_PREFIX: `topo:${tag}:rt:`,
    SECRETS_KEY: Buffer.alloc(32, 9).toString('base64'),
    AUTH_TEST_TOKENS: 'on',
    AUTH_TEST_ROLES: 'on',
    ALLOW_LOOPBACK_UPSTREAMS: 'on',
    ...env,
  };
  const workerEnv = { ...common, PROCESS_ROLE: 'worker', PORT: '0', DATA_DIR: dataDir() };
  // The first API runs the migrations (advisory lock); start it alone so the others find them done.
  const a = startServerProcess({ ...common, PROCESS_ROLE: 'api', PORT: String(portA), DATA_DIR: dataDir() });
  await a.waitFor(/agent platform ready/);
  const b = startServerProcess({ ...common, PROCESS_ROLE: 'api', PORT: String(portB), DATA_DIR: dataDir() });
  let worker = startServerProcess(workerEnv);
  await Promise.all([b.waitFor(/agent platform ready/), worker.waitFor(/agent platform worker ready/)]);

  const cfgDir = dataDir();
  const cfg = path.join(cfgDir, 'haproxy.cfg');
  fs.writeFileSync(cfg, haproxyConfig(lbPort, [portA, portB]));
  const haproxyBin = fs.existsSync('/usr/sbin/haproxy') ? '/usr/sbin/haproxy' : 'haproxy';
  const proxy: ChildProcess = spawn(haproxyBin, ['-db', '-f', cfg], { stdio: ['ignore', 'ignore', 'pipe'] });
  let proxyErr = '';
  proxy.stderr!.on('data', (d: Buffer) => (proxyErr += d.toString()));
  try {
    await waitHttp(`${lb}/readyz`, 15_000);
  } catch (err) {
    throw new Error(`${(err as Error).message}; haproxy: ${proxyErr}`);
  }

  const stop = async (p: ServerProcess) => {
    if (p.child.exitCode !== null || p.child.signalCode !== null) return;
    p.child.kill('SIGTERM');
    await Promise.race([p.exited, new Promise((r) => setTimeout(r, 10_000))]);
    if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
  };
  const cluster: Cluster = {
    lb,
    apis: [a, b],
    get worker() {
      return worker;
    },
    async killWorker() {
      worker.child.kill('SIGKILL');
      await worker.exited;
    },
    async restartWorker() {
      worker = startServerProcess(workerEnv);
      await worker.waitFor(/agent platform worker ready/);
      return worker;
    },
    async close() {
      proxy.kill('SIGTERM');
      await Promise.all([stop(a), stop(b), stop(worker)]);
      await db.drop().catch(() => undefined);
      for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
    },
  };
  return cluster;
}
