/**
 * The real entry point (`node --import tsx src/main.ts`) as a child process for the log-capture
 * and durability tests: its stdout (pino JSON lines) and stderr are kept whole, and it listens on
 * a free loopback port. On PGlite it runs in memory; with TEST_DATABASE_URL / TEST_REDIS_URL set,
 * on those servers.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { freePort } from '../helpers/net.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** A running server process. */
export interface ServerProcess {
  child: ChildProcess;
  base: string;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  /** SIGTERM (graceful) or SIGKILL, and wait for the exit. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** Start the server with `env` on top of the test defaults; resolves once it logged "agent platform ready". */
export async function startServer(env: Record<string, string | undefined> = {}, timeoutMs = 240_000): Promise<ServerProcess> {
  const port = env.PORT ?? String(await freePort());
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME ?? '/tmp',
      NODE_ENV: 'test',
      HOST: '127.0.0.1',
      PORT: port,
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      ...(process.env.TEST_DATABASE_URL ? { DATABASE_URL: process.env.TEST_DATABASE_URL } : { DATABASE_IN_MEMORY: 'on' }),
      ...(process.env.TEST_REDIS_URL ? { REDIS_URL: process.env.TEST_REDIS_URL } : {}),
      SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
      ALLOW_LOOPBACK_UPSTREAMS: 'on',
      ...env,
    } as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const until = Date.now() + timeoutMs;
  while (!out.includes('agent platform ready')) {
    if (child.exitCode !== null) throw new Error(`server exited ${child.exitCode}: ${out.slice(-2000)}`);
    if (Date.now() > until) {
      child.kill('SIGKILL');
      throw new Error(`server did not start in ${timeoutMs} ms: ${out.slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    child,
    base: `http://127.0.0.1:${port}`,
    output: () => out,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal);
      await exited;
    },
  };
}

/** `fetch` JSON against `base`; returns status and parsed body (text when not JSON). */
export async function http(base: string, method: string, url: string, opts: { headers?: Record<string, string>; body?: unknown; form?: FormData } = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(`${base}${url}`, {
    method,
    headers: { ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}), ...opts.headers },
    body: opts.form ?? (opts.body !== undefined ? JSON.stringify(opts.body) : undefined),
  });
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) };
  } catch {
    return { status: res.status, body: text };
  }
}
