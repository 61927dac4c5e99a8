/**
 * `npm run cli -- users set-role <email> <role>` against the same storage as the server, and data
 * surviving a restart: register, close the app, change the role from the CLI, reopen, log in.
 * Uses PGlite on disk (or PostgreSQL when TEST_DATABASE_URL is set).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../../src/app.js';
import { runCli } from '../../../src/cli/index.js';
import { loadConfig } from '../../../src/config.js';
import { call, testEnv } from '../../helpers/app.js';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-cli-'));
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));
const env = testEnv({ DATA_DIR: dataDir, DATABASE_IN_MEMORY: 'off' });
const email = `cli-${Date.now()}@example.test`;

async function cli(...args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(
    args,
    env,
    (s) => out.push(s),
    (s) => err.push(s),
  );
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('CLI users set-role and restart persistence', () => {
  it('changes roles in the stored data; the server sees them after a restart', async () => {
    const first = await buildApp(loadConfig(env));
    await call(first.app, { method: 'POST', url: '/auth/register', payload: { email, password: 'cli password' } }, 201);
    await first.app.close();

    const set = await cli('users', 'set-role', email.toUpperCase(), 'pro');
    expect(set.code).toBe(0);
    expect(set.out).toMatch(/roles user, pro/);
    expect((await cli('users', 'show', email)).out).toMatch(/roles user, pro/);

    const second = await buildApp(loadConfig(env));
    try {
      const { body: tokens } = await call(
        second.app,
        { method: 'POST', url: '/auth/login', payload: { email, password: 'cli password' } },
        200,
      );
      const { body: me } = await call(
        second.app,
        { method: 'GET', url: '/v1/auth/me', headers: { authorization: `Bearer ${tokens.access_token}` } },
        200,
      );
      expect(me).toMatchObject({ email, roles: ['user', 'pro'], subscription: { tier: 'pro' } });
    } finally {
      await second.app.close();
    }
  }, 120_000);

  it('reports unknown users (exit 1) and usage errors (exit 2)', async () => {
    const unknown = await cli('users', 'set-role', 'nobody@example.test', 'admin');
    expect(unknown.code).toBe(1);
    expect(unknown.err).toMatch(/no user/);
    expect((await cli('users', 'set-role', email, 'root')).code).toBe(2);
    expect((await cli('users')).code).toBe(2);
    expect((await cli('users', 'set-role', email, 'pro', 'extra')).code).toBe(2);
  }, 60_000);
});
