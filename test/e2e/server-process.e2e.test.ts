/**
 * The real entry point as a child process (`node --import tsx src/main.ts`; no `tsx` CLI wrapper,
 * whose signal relay SIGKILLs a busy child after 60 ms): a bad environment value stops it with one
 * line naming the variable. Started through `npm start` itself (npm → `sh -c exec node …`):
 * SIGTERM and SIGINT sent to npm reach the server, which lets an in-flight request finish, closes
 * storage, frees the port and exits 0; each request is one log line; data on the embedded PGlite
 * store survives a restart.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/net.js';
import { ROOT, startServerProcess as start } from '../helpers/server-process.js';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-e2e-'));

/** Command lines of every live descendant of process `pid` (Linux /proc). */
function descendants(pid: number): string[] {
  const parent = new Map<number, number>();
  for (const d of fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      parent.set(Number(d), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      /* gone meanwhile */
    }
  }
  const out: string[] = [];
  const walk = (p: number): void => {
    for (const [child, pp] of parent) {
      if (pp !== p) continue;
      try {
        out.push(fs.readFileSync(`/proc/${child}/cmdline`, 'utf8').replaceAll('\0', ' '));
      } catch {
        continue;
      }
      walk(child);
    }
  };
  walk(pid);
  return out;
}
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

describe('node --import tsx src/main.ts (npm start)', () => {
  it('exits 1 with one line naming the variable for a bad value', async () => {
    const s = start({ PORT: 'abc', DATA_DIR: dataDir });
    const { code, stderr } = await s.exited;
    expect(code).toBe(1);
    const lines = stderr
      .trim()
      .split('\n')
      .filter((l) => !/oidc-provider WARNING|Unsupported runtime/.test(l));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/PORT/);
  }, 180_000);

  it('npm start: SIGTERM to npm finishes an in-flight request and frees the port, one log line per request, data kept for the next start', async () => {
    const port = String(await freePort());
    const env = { PORT: port, PUBLIC_URL: `http://127.0.0.1:${port}`, DATA_DIR: dataDir };
    // debug: the arrival of a request is logged ("request received"), so the test knows it is in flight
    const first = start({ ...env, LOG_LEVEL: 'debug' }, { via: 'npm' });
    const ready = JSON.parse(await first.waitFor(/agent platform ready/));
    expect(ready.startup_ms).toBeGreaterThan(0);
    // The bundle runs through scripts/bundle-loader.mjs: without a usable code cache this start
    // writes one once warm, and the next start compiles from it.
    expect(['none', 'used', 'rejected']).toContain(ready.code_cache);
    const cache = path.join(ROOT, 'dist', 'main.cjs.cache');
    for (let i = 0; i < 600 && !fs.existsSync(cache); i++) await new Promise((r) => setTimeout(r, 100));
    expect(fs.statSync(cache).size).toBeGreaterThan(100_000);
    // the server runs alone: the esbuild service that built dist/ (when it was stale) was stopped
    const tree = descendants(first.child.pid!);
    expect(tree.some((c) => /scripts\/start\.mjs/.test(c))).toBe(true);
    expect(tree.filter((c) => /esbuild/.test(c))).toEqual([]);

    // a request (scrypt hashing takes a while) is in flight when SIGTERM reaches npm
    const creds = { email: 'persist@example.test', password: 'survives restarts' };
    const pending = fetch(`${first.base}/auth/register?code=query-secret`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(creds),
    });
    await first.waitFor(/"url":"\/auth\/register.*request received/);
    first.child.kill('SIGTERM');
    const res = await pending;
    expect(res.status).toBe(201);
    const { code } = await first.exited;
    expect(code).toBe(0);
    expect(first.lines.some((l) => /"signal":"SIGTERM".*shutting down/.test(l))).toBe(true);
    // the server itself is gone (not left running behind npm): the port is free
    await expect(fetch(`${first.base}/healthz`)).rejects.toThrow();

    // one info line for the request: route, status, duration, request id; no secret
    const info = first.lines
      .map((l) => JSON.parse(l))
      .filter((l) => l.level >= 30 && l.req?.url?.startsWith('/auth/register'));
    expect(info).toHaveLength(1);
    expect(info[0]).toMatchObject({
      msg: 'request',
      route: '/auth/register',
      res: { statusCode: 201 },
      reqId: res.headers.get('x-request-id'),
      req: { method: 'POST', url: '/auth/register?code=[redacted]' },
    });
    expect(info[0].responseTime).toBeGreaterThan(0);
    expect(first.lines.join('\n')).not.toMatch(/survives restarts|query-secret/);

    // same DATA_DIR: the user is still there (SIGINT through npm this time)
    const second = start(env, { via: 'npm' });
    expect(JSON.parse(await second.waitFor(/agent platform ready/))).toMatchObject({ code_cache: 'used' });
    const login = await fetch(`${second.base}/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(creds),
    });
    expect(login.status).toBe(200);
    const { access_token } = (await login.json()) as { access_token: string };
    const me = await fetch(`${second.base}/v1/auth/me`, { headers: { authorization: `Bearer ${access_token}` } });
    expect(((await me.json()) as { email: string }).email).toBe(creds.email);
    second.child.kill('SIGINT');
    expect((await second.exited).code).toBe(0);
  }, 300_000);
});
