/**
 * API key scopes and expiry: a key does only what its scopes name, and never creates a key or an
 * agent broader than itself (scopes it lacks, or a key outliving it). Keys made before scopes
 * existed (null column) keep every scope.
 */
import { eq } from 'drizzle-orm';
import type { InjectOptions } from 'fastify';
import { describe, expect, it } from 'vitest';
import { apiKeys } from '../../../src/db/schema/index.js';
import { call, createUser, setupApp, type TestUser } from '../../helpers/app.js';
import { AGENT, keyOf as createKey } from './fixtures.js';

const { app, ctx } = await setupApp();

const keyOf = (headers: Record<string, string>, payload: Record<string, unknown>) => createKey(app, headers, payload);

async function refused(
  opts: {
    method: 'GET' | 'POST' | 'PUT' | 'DELETE';
    url: string;
    headers: Record<string, string>;
    payload?: Record<string, unknown>;
  },
  status: number,
  code: string,
) {
  const res = await app.inject(opts as InjectOptions);
  expect(res.statusCode, res.body).toBe(status);
  expect(res.json().code).toBe(code);
  return res.json();
}

const inOneHour = () => new Date(Date.now() + 3600_000).toISOString();

describe('api key scopes — refusals', () => {
  it('managing keys needs api_keys:manage (403 insufficient_scope, naming the scope)', async () => {
    const u = await createUser(app);
    const k = await keyOf(u.headers, { scopes: ['tools:execute'] });
    const body = await refused(
      { method: 'POST', url: '/api-keys', headers: k.headers, payload: { name: 'x' } },
      403,
      'insufficient_scope',
    );
    expect(body.required_scope).toBe('api_keys:manage');
    await refused({ method: 'GET', url: '/api-keys', headers: k.headers }, 403, 'insufficient_scope');
    await refused({ method: 'DELETE', url: `/api-keys/${k.id}`, headers: k.headers }, 403, 'insufficient_scope');
    await call(app, { method: 'GET', url: '/v1/auth/me', headers: k.headers }, 200);
  });

  it('a key cannot create a key with a scope it lacks (403 exceeds_credential), nor one outliving it', async () => {
    const u = await createUser(app);
    const parent = await keyOf(u.headers, { scopes: ['api_keys:manage', 'memory:read'], expires_at: inOneHour() });
    const body = await refused(
      {
        method: 'POST',
        url: '/api-keys',
        headers: parent.headers,
        payload: { name: 'x', scopes: ['memory:read', 'tools:execute'] },
      },
      403,
      'exceeds_credential',
    );
    expect(body.missing_scopes).toEqual(['tools:execute']);
    const later = new Date(Date.now() + 2 * 3600_000).toISOString();
    const late = await refused(
      { method: 'POST', url: '/api-keys', headers: parent.headers, payload: { name: 'x', expires_at: later } },
      403,
      'exceeds_credential',
    );
    expect(late.max_expires_at).toBe(parent.expires_at);
    const { body: list } = await call(app, { method: 'GET', url: '/api-keys', headers: u.headers }, 200);
    expect(list.data).toHaveLength(1);
  });

  it('a key cannot create or rotate an agent broader than itself', async () => {
    const u = await createUser(app);
    const { body: a } = await call(
      app,
      { method: 'POST', url: '/v2/agents', headers: u.headers, payload: { name: 'a' } },
      201,
    );
    const narrow = await keyOf(u.headers, { scopes: ['agents:manage', 'memory:read'] });
    const body = await refused(
      { method: 'POST', url: '/v2/agents', headers: narrow.headers, payload: { name: 'x' } },
      403,
      'exceeds_credential',
    );
    expect(body.missing_scopes).toEqual(['memory:write', 'permissions:manage', 'tools:execute']);
    await refused(
      { method: 'POST', url: `/v2/agents/${a.id}/rotate-secret`, headers: narrow.headers, payload: {} },
      403,
      'exceeds_credential',
    );
    // Reading and updating its account's agents is agents:manage alone.
    await call(app, { method: 'GET', url: `/v2/agents/${a.id}`, headers: narrow.headers }, 200);
    const none = await keyOf(u.headers, { scopes: [...AGENT] });
    await refused(
      { method: 'POST', url: '/v2/agents', headers: none.headers, payload: { name: 'x' } },
      403,
      'insufficient_scope',
    );
    await refused({ method: 'GET', url: '/v2/agents', headers: none.headers }, 403, 'insufficient_scope');
    await refused({ method: 'DELETE', url: `/v2/agents/${a.id}`, headers: none.headers }, 403, 'insufficient_scope');
    // An agent's tools are agent management too: a key without agents:manage widens no agent's reach.
    for (const [method, url, payload] of [
      ['POST', `/v2/agents/${a.id}/tools/subscribe`, { service: 'any-service' }],
      ['POST', `/v2/agents/${a.id}/tools/accept-changes`, { service: 'any-service' }],
      ['DELETE', `/v2/agents/${a.id}/tools/unsubscribe`, { service: 'any-service' }],
      ['GET', `/v2/agents/${a.id}/tools`, undefined],
      ['GET', `/v2/agents/${a.id}/tools/changes`, undefined],
    ] as const) {
      await refused({ method, url, headers: none.headers, payload }, 403, 'insufficient_scope');
    }
    // With it, the same key reaches the agent's tools (the service is unknown: 404, not a scope refusal).
    await refused(
      {
        method: 'POST',
        url: `/v2/agents/${a.id}/tools/subscribe`,
        headers: narrow.headers,
        payload: { service: 'no-such' },
      },
      404,
      'not_found',
    );
    const { body: agents } = await call(app, { method: 'GET', url: '/v2/agents', headers: u.headers }, 200);
    expect(agents.data).toHaveLength(1);
  });

  it('grants need permissions:manage; another agent’s memory needs memory:read / memory:write', async () => {
    const u: TestUser = await createUser(app);
    const { body: a } = await call(
      app,
      { method: 'POST', url: '/v2/agents', headers: u.headers, payload: { name: 'a' } },
      201,
    );
    const { body: b } = await call(
      app,
      { method: 'POST', url: '/v2/agents', headers: u.headers, payload: { name: 'b' } },
      201,
    );
    const k = await keyOf(u.headers, { scopes: ['tools:execute'] });
    await refused(
      {
        method: 'POST',
        url: `/v2/agents/${a.id}/permissions`,
        headers: k.headers,
        payload: { grantee_agent_id: b.id, access: 'read' },
      },
      403,
      'insufficient_scope',
    );
    await refused({ method: 'GET', url: `/v2/agents/${a.id}/memory`, headers: k.headers }, 403, 'insufficient_scope');
    await refused(
      { method: 'PUT', url: `/v2/agents/${a.id}/memory/x`, headers: k.headers, payload: { value: 1 } },
      403,
      'insufficient_scope',
    );
    const reader = await keyOf(u.headers, { scopes: ['memory:read'] });
    await call(app, { method: 'GET', url: `/v2/agents/${a.id}/memory`, headers: reader.headers }, 200);
    await refused(
      { method: 'PUT', url: `/v2/agents/${a.id}/memory/x`, headers: reader.headers, payload: { value: 1 } },
      403,
      'insufficient_scope',
    );
  });

  it('an expired key is refused with 401 token_expired, also as a creator', async () => {
    const u = await createUser(app);
    const k = await keyOf(u.headers, { expires_at: new Date(Date.now() + 60_000).toISOString() });
    await ctx.db
      .update(apiKeys)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(apiKeys.id, k.id));
    await refused(
      { method: 'POST', url: '/api-keys', headers: k.headers, payload: { name: 'child' } },
      401,
      'token_expired',
    );
  });
});
