/**
 * The platform is never left without an admin: taking `admin` away from the only admin answers
 * 409 `last_admin` (an admin demoting themself included), and two admins demoting each other at
 * the same moment cannot both succeed. The app runs on a database of its own (a fresh PostgreSQL
 * database in the PostgreSQL pass), so "the only admin" means what it says.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { call, createUser, setupApp, type TestUser } from '../helpers/app.js';

/** A database of this file's own next to `TEST_DATABASE_URL`'s (dropped after); undefined on PGlite (in memory: already its own). */
async function ownDatabase(): Promise<string | undefined> {
  if (!process.env.TEST_DATABASE_URL) return undefined;
  const admin = new URL(process.env.TEST_DATABASE_URL);
  admin.pathname = '/postgres';
  const name = `last_admin_${randomBytes(4).toString('hex')}`;
  const run = async (q: string) => {
    const c = new pg.Client({ connectionString: admin.toString() });
    await c.connect();
    await c.query(q).finally(() => c.end());
  };
  await run(`CREATE DATABASE "${name}"`);
  afterAll(() => run(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`), 60_000);
  const url = new URL(process.env.TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

const databaseUrl = await ownDatabase();
const { app } = await setupApp({ DATABASE_URL: databaseUrl });

let survivor: TestUser | undefined;
const setRoles = (by: TestUser, target: TestUser, roles: string[]) =>
  app.inject({
    method: 'PUT',
    url: `/admin/users/${encodeURIComponent(target.subject)}/roles`,
    headers: by.headers,
    payload: { roles },
  });

const roles = async (u: TestUser): Promise<string[]> =>
  (await call(app, { method: 'GET', url: '/v1/auth/me', headers: u.headers }, 200)).body.roles;

describe('last admin', () => {
  it('two admins demoting each other at once: exactly one succeeds, one admin remains', async () => {
    const [a, b] = [await createUser(app, { roles: ['admin'] }), await createUser(app, { roles: ['admin'] })];
    const results = await Promise.all([setRoles(a, b, ['user']), setRoles(b, a, ['user'])]);
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 409]);
    expect(results.find((r) => r.statusCode === 409)!.json().code).toBe('last_admin');
    const still = await Promise.all([a, b].map(async (u) => (await roles(u)).includes('admin')));
    expect(still.filter(Boolean)).toHaveLength(1);
    survivor = still[0] ? a : b;
  });

  it('the only admin cannot lose admin (409 last_admin); with a second admin it can', async () => {
    const first = survivor!;
    const refused = await setRoles(first, first, ['user']);
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toMatchObject({ code: 'last_admin', detail: expect.stringMatching(/only admin/) });
    // Still an admin: it can act as one.
    const plain = await createUser(app);
    expect((await setRoles(first, plain, ['user', 'pro'])).statusCode).toBe(200);
    expect(await roles(first)).toContain('admin');
    // Changing the last admin's other roles while keeping admin is fine.
    expect((await setRoles(first, first, ['admin', 'enterprise'])).statusCode).toBe(200);

    const second = await createUser(app, { roles: ['admin'] });
    expect((await setRoles(second, first, ['user'])).statusCode).toBe(200);
    expect(await roles(first)).not.toContain('admin');
    // second is now the only admin
    const last = await setRoles(second, second, ['user', 'enterprise']);
    expect(last.statusCode).toBe(409);
    expect(last.json().code).toBe('last_admin');
  });
});
