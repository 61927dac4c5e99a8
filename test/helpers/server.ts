/**
 * The real entry point as a child process, started like `npm start` (`node --import tsx src/main.ts`;
 * no `tsx` CLI wrapper, whose signal relay SIGKILLs a busy child after 60 ms). Used by the e2e
 * process tests and by the SDK/CLI tests, which talk to it over a loopback port.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { testEnv } from './app.js';
import { freePort } from './net.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

export interface ServerProcess {
  child: ChildProcess;
  base: string;
  lines: string[];
  exited: Promise<{ code: number | null; stderr: string }>;
  waitFor(re: RegExp, timeoutMs?: number): Promise<string>;
}

/** Start `src/main.ts` with exactly `env` (plus PATH, HOME, NODE_ENV=test, LOG_LEVEL=info, HOST=127.0.0.1). */
export function startServer(env: Record<string, string>): ServerProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? '/tmp', NODE_ENV: 'test', LOG_LEVEL: 'info', HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let stderr = '';
  const waiters: Array<{ re: RegExp; resolve: (l: string) => void }> = [];
  let buf = '';
  child.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      lines.push(line);
      for (const w of [...waiters]) if (w.re.test(line)) waiters.splice(waiters.indexOf(w), 1) && w.resolve(line);
    }
  });
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<{ code: number | null; stderr: string }>((resolve) => child.on('exit', (code) => resolve({ code, stderr })));
  return {
    child,
    base: `http://127.0.0.1:${env.PORT}`,
    lines,
    exited,
    waitFor(re, timeoutMs = 150_000) {
      const hit = lines.find((l) => re.test(l));
      if (hit) return Promise.resolve(hit);
      return new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`timeout waiting for ${re}; stderr: ${stderr}; stdout: ${lines.join('\n')}`)), timeoutMs);
        waiters.push({ re, resolve: (l) => (clearTimeout(t), resolve(l)) });
        void exited.then(({ code }) => reject(new Error(`server exited ${code} before ${re}: ${stderr}`)));
      });
    },
  };
}

/**
 * A ready server on a free loopback port with the test environment ({@link testEnv}: PGlite in
 * memory, or the engines of TEST_DATABASE_URL / TEST_REDIS_URL) and its own data directory.
 * `stop()` sends SIGTERM, waits for the exit and removes the directory.
 */
export async function startTestServer(overrides: Record<string, string> = {}): Promise<ServerProcess & { stop(): Promise<void> }> {
  const port = String(await freePort());
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-srv-'));
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(testEnv({ LOG_LEVEL: 'info', PORT: port, PUBLIC_URL: `http://127.0.0.1:${port}`, DATA_DIR: dataDir, ...overrides }))) if (v !== undefined) env[k] = v;
  const server = startServer(env);
  await server.waitFor(/agent platform ready/);
  return {
    ...server,
    async stop() {
      if (server.child.exitCode === null) {
        server.child.kill('SIGTERM');
        await server.exited;
      }
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
