/**
 * The real entry point as a child process, started like `npm start` (`node --import tsx src/main.ts`;
 * no `tsx` CLI wrapper, whose signal relay SIGKILLs a busy child after 60 ms): a bad environment value stops it
 * with one line naming the variable; SIGTERM lets an in-flight request finish, closes storage and
 * exits 0; data on the embedded PGlite store survives a restart.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/net.js';
import { startServerProcess as start } from '../helpers/server-process.js';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-e2e-'));
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

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
