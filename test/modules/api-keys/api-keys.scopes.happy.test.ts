/**
 * API key scopes and expiry, what works: keys with scopes, narrower children of a key, keys made
 * before scopes existed (null column: every scope), agents created by a key holding every agent scope.
 * (The refusals are in api-keys.scopes.security.test.ts.)
 */
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { apiKeys } from '../../../src/db/schema/index.js';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { AGENT, keyOf as createKey } from './fixtures.js';

const { app, ctx } = await setupApp();

const EVERY = [
  'memory:read',
  'memory:write',
  'permissions:manage',
  'tools:execute',
  'agents:manage',
  'api_keys:manage',
  'approvals:decide',
  'policies:manage',
];
/** A key made without `scopes`: every scope but the opt-in approvals:decide and policies:manage (ADR 0973). */
const DEFAULT = EVERY.filter((s) => s !== 'approvals:decide' && s !== 'policies:manage');

const keyOf = (headers: Record<string, string>, payload: Record<string, unknown>) => createKey(app, headers, payload);

const inOneHour = () => new Date(Date.now() + 3600_000).toISOString();

describe('api key scopes — happy paths', () => {
  it('a key gets the scopes it was created with, in vocabulary order; without scopes every one but the opt-in ones', async () => {
    const u = await createUser(app);
    expect((await keyOf(u.headers, {})).scopes).toEqual(DEFAULT);
    expect((await keyOf(u.headers, { scopes: EVERY })).scopes).toEqual(EVERY);
    const k = await keyOf(u.headers, { scopes: ['tools:execute', 'memory:read'] });
    expect(k.scopes).toEqual(['memory:read', 'tools:execute']);
    const { body } = await call(app, { method: 'GET', url: '/api-keys', headers: u.headers }, 200);
    expect(body.data.find((x: { id: string }) => x.id === k.id).scopes).toEqual(['memory:read', 'tools:execute']);
    // A key without any scope still authenticates (and reaches what scopes do not narrow).
    const none = await keyOf(u.headers, { scopes: [] });
    await call(app, { method: 'GET', url: '/v1/auth/me', headers: none.headers }, 200);
  });

  it('a key creates narrower keys; without scopes a child inherits its creator key’s, and its expiry', async () => {
    const u = await createUser(app);
    const parent = await keyOf(u.headers, {
      scopes: ['api_keys:manage', 'memory:read', 'tools:execute'],
      expires_at: inOneHour(),
    });
    const inherited = await keyOf(parent.headers, {});
    expect(inherited.scopes).toEqual(['memory:read', 'tools:execute', 'api_keys:manage']);
    expect(inherited.expires_at).toBe(parent.expires_at);
    const narrow = await keyOf(parent.headers, {
      scopes: ['memory:read'],
      expires_at: new Date(Date.now() + 60_000).toISOString(),
    });
    expect(narrow.scopes).toEqual(['memory:read']);
    expect(Date.parse(narrow.expires_at!)).toBeLessThan(Date.parse(parent.expires_at!));
  });

  it('a key made before scopes existed (null scopes) keeps every scope: it creates keys and agents', async () => {
    const u = await createUser(app);
    const old = await keyOf(u.headers, {});
    await ctx.db.update(apiKeys).set({ scopes: null }).where(eq(apiKeys.id, old.id));
    const { body } = await call(app, { method: 'GET', url: '/api-keys', headers: old.headers }, 200);
    expect(body.data.find((x: { id: string }) => x.id === old.id).scopes).toEqual(EVERY);
    expect((await keyOf(old.headers, {})).scopes).toEqual(DEFAULT);
    expect((await keyOf(old.headers, { scopes: ['approvals:decide'] })).scopes).toEqual(['approvals:decide']);
    await call(app, { method: 'POST', url: '/v2/agents', headers: old.headers, payload: { name: 'a' } }, 201);
  });

  it('a key with agents:manage and every agent scope creates and rotates agents', async () => {
    const u = await createUser(app);
    const k = await keyOf(u.headers, { scopes: ['agents:manage', ...AGENT] });
    const { body: a } = await call(
      app,
      { method: 'POST', url: '/v2/agents', headers: k.headers, payload: { name: 'a' } },
      201,
    );
    await call(app, { method: 'POST', url: `/v2/agents/${a.id}/rotate-secret`, headers: k.headers, payload: {} }, 200);
    await call(app, { method: 'GET', url: `/v2/agents/${a.id}`, headers: k.headers }, 200);
  });
});
