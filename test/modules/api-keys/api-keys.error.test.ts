/** API keys — invalid input. */
import { describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../../helpers/app.js';

const { app } = await setupApp();

describe('api keys — errors', () => {
  it.each([
    ['a missing name', {}, '/name'],
    ['an unknown field', { name: 'x', owner: 'me' }, '/owner'],
    ['an unknown scope', { name: 'x', scopes: ['all'] }, '/scopes/0'],
    ['a repeated scope', { name: 'x', scopes: ['tools:execute', 'tools:execute'] }, '/scopes'],
    ['scopes that are not a list', { name: 'x', scopes: 'tools:execute' }, '/scopes'],
    ['a wrong type', { name: 7 }, '/name'],
    ['a malformed expiry', { name: 'x', expires_at: 'tomorrow' }, '/expires_at'],
    ['an expiry in the past', { name: 'x', expires_at: '2020-01-01T00:00:00Z' }, '/expires_at'],
  ])('rejects %s with 400 validation_failed', async (_what, payload, pointer) => {
    const u = await createUser(app);
    const { body } = await call(app, { method: 'POST', url: '/api-keys', headers: u.headers, payload }, 400);
    expect(body.code).toBe('validation_failed');
    expect(body.errors.map((e: { pointer: string }) => e.pointer)).toContain(pointer);
  });

  it('404s an unknown key and a key revoked twice', async () => {
    const u = await createUser(app);
    await call(app, { method: 'DELETE', url: '/api-keys/key_nope', headers: u.headers }, 404);
    const { body: k } = await call(
      app,
      { method: 'POST', url: '/api-keys', headers: u.headers, payload: { name: 'once' } },
      201,
    );
    await call(app, { method: 'DELETE', url: `/api-keys/${k.id}`, headers: u.headers }, 204);
    const { body } = await call(app, { method: 'DELETE', url: `/api-keys/${k.id}`, headers: u.headers }, 404);
    expect(body.code).toBe('not_found');
  });

  it('rejects a bad cursor and limit', async () => {
    const u = await createUser(app);
    await call(app, { method: 'GET', url: '/api-keys?limit=0', headers: u.headers }, 400);
    await call(app, { method: 'GET', url: '/api-keys?limit=101', headers: u.headers }, 400);
  });
});
