/**
 * The real entry point as a child process, started like `npm start` (`node --import tsx src/main.ts`;
 * no `tsx` CLI wrapper, whose signal relay SIGKILLs a busy child after 60 ms): a bad environment value stops it
 * with one line naming the variable; SIGTERM lets an in-flight request finish, closes storage and
 * exits 0; data on the embedded PGlite store survives a restart.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/net.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-e2e-'));
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

interface Server {
  child: ChildProcess;
  base: string;
  lines: string[];
  exited: Promise<{ code: number | null; stderr: string }>;
  waitFor(re: RegExp, timeoutMs?: number): Promise<string>;
}

function start(env: Record<string, string>): Server {
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

describe('node --import tsx src/main.ts (npm start)', () => {
  it('exits 1 with one line naming the variable for a bad value', async () => {
    const s = start({ PORT: 'abc', DATA_DIR: dataDir });
    const { code, stderr } = await s.exited;
    expect(code).toBe(1);
    const lines = stderr.trim().split('\n').filter((l) => !/oidc-provider WARNING|Unsupported runtime/.test(l));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/PORT/);
  }, 180_000);

  it('finishes an in-flight request on SIGTERM, exits 0, and keeps the data for the next start', async () => {
    const port = String(await freePort());
    const env = { PORT: port, PUBLIC_URL: `http://127.0.0.1:${port}`, DATA_DIR: dataDir };
    const first = start(env);
    const ready = JSON.parse(await first.waitFor(/agent platform ready/));
    expect(ready.startup_ms).toBeGreaterThan(0);

    // a request (scrypt hashing takes a while) is in flight when SIGTERM arrives
    const creds = { email: 'persist@example.test', password: 'survives restarts' };
    const pending = fetch(`${first.base}/auth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(creds) });
    await first.waitFor(/"url":"\/auth\/register".*incoming request|incoming request.*"url":"\/auth\/register"/);
    first.child.kill('SIGTERM');
    const res = await pending;
    expect(res.status).toBe(201);
    const { code } = await first.exited;
    expect(code).toBe(0);
    expect(first.lines.some((l) => /shutting down/.test(l))).toBe(true);

    // same DATA_DIR: the user is still there
    const second = start(env);
    await second.waitFor(/agent platform ready/);
    const login = await fetch(`${second.base}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(creds) });
    expect(login.status).toBe(200);
    const { access_token } = (await login.json()) as { access_token: string };
    const me = await fetch(`${second.base}/v1/auth/me`, { headers: { authorization: `Bearer ${access_token}` } });
    expect(((await me.json()) as { email: string }).email).toBe(creds.email);
    second.child.kill('SIGINT');
    expect((await second.exited).code).toBe(0);
  }, 300_000);
});
