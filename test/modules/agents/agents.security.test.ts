import { describe, expect, it, vi } from 'vitest';
import { SignJWT, generateKeyPair } from 'jose';
import { eq } from 'drizzle-orm';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { agentToken, createAgent } from '../../helpers/agents.js';
import { agentSecrets, agents } from '../../../src/db/schema/index.js';

const { app, ctx } = await setupApp();

describe('agents — security', () => {
  it('gives a user of another account 404 on every /v2/agents/:id… route', async () => {
    const owner = await createUser(app);
    const intruder = await createUser(app);
    const a = await createAgent(app, owner);
    const b = await createAgent(app, intruder);
    const routes: Array<[string, string, unknown?]> = [
      ['GET', `/v2/agents/${a.id}`],
      ['PATCH', `/v2/agents/${a.id}`, { name: 'pwned' }],
      ['DELETE', `/v2/agents/${a.id}`],
      ['POST', `/v2/agents/${a.id}/rotate-secret`, {}],
      ['POST', `/v2/agents/${a.id}/tools/subscribe`, { service: 'anything' }],
      ['DELETE', `/v2/agents/${a.id}/tools/unsubscribe?service=anything`],
      ['GET', `/v2/agents/${a.id}/tools`],
      ['POST', `/v2/agents/${a.id}/permissions`, { grantee_agent_id: b.id, access: 'write' }],
      ['GET', `/v2/agents/${a.id}/permissions`],
      ['GET', `/v2/agents/${a.id}/grants`],
      ['DELETE', `/v2/agents/${a.id}/permissions/prm_00000000000000000000000000`],
      ['GET', `/v2/agents/${a.id}/memory`],
      ['PUT', `/v2/agents/${a.id}/memory/k`, { value: 1 }],
      ['GET', `/v2/agents/${a.id}/memory/audit`],
    ];
    for (const [method, url, payload] of routes) {
      const res = await app.inject({
        method: method as 'GET',
        url,
        headers: intruder.headers,
        ...(payload !== undefined ? { payload: payload as object } : {}),
      });
      expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(404);
      expect(res.json().code).toBe('not_found');
    }
    // Nothing changed for the owner.
    const { body } = await call(app, { method: 'GET', url: `/v2/agents/${a.id}`, headers: owner.headers }, 200);
    expect(body).toMatchObject({ name: 'test agent', status: 'active' });
    expect(body.secrets).toHaveLength(1);
    await agentToken(app, a);
    const { body: list } = await call(
      app,
      { method: 'GET', url: '/v2/agents?include_deleted=true', headers: intruder.headers },
      200,
    );
    expect(list.data.map((x: { id: string }) => x.id)).toEqual([b.id]);
  });

  it('stores client secrets only as scrypt hashes and never shows them again', async () => {
    const u = await createUser(app);
    const a = await createAgent(app, u);
    const rows = await ctx.db.select().from(agentSecrets).where(eq(agentSecrets.agentId, a.id));
    expect(rows).toHaveLength(1);
    expect(rows[0].secretHash).toMatch(/^scrypt\$/);
    expect(rows[0].secretHash).not.toContain(a.clientSecret);
    for (const url of [`/v2/agents/${a.id}`, '/v2/agents']) {
      const res = await app.inject({ method: 'GET', url, headers: u.headers });
      expect(res.body).not.toContain(a.clientSecret);
      expect(res.body).not.toContain('scrypt');
    }
  });

  it('keeps agent management for users: agent tokens get 403', async () => {
    const u = await createUser(app);
    const a = await createAgent(app, u);
    const t = await agentToken(app, a);
    for (const [method, url] of [
      ['POST', '/v2/agents'],
      ['GET', '/v2/agents'],
      ['GET', `/v2/agents/${a.id}`],
      ['POST', `/v2/agents/${a.id}/rotate-secret`],
      ['DELETE', `/v2/agents/${a.id}`],
    ] as const) {
      const res = await app.inject({
        method,
        url,
        headers: t.headers,
        ...(method === 'POST' ? { payload: { name: 'x' } } : {}),
      });
      expect(res.statusCode, `${method} ${url}`).toBe(403);
      expect(res.json().code).toBe('forbidden');
    }
    await call(app, { method: 'GET', url: `/v2/agents/${a.id}`, headers: u.headers }, 200);
  });

  it('rotation without grace kills the old secret and every older token at once', async () => {
    const u = await createUser(app);
    const a = await createAgent(app, u);
    const old = await agentToken(app, a);
    await call(app, { method: 'GET', url: '/v2/memory', headers: old.headers }, 200); // cached liveness
    const { body: rotated } = await call(
      app,
      { method: 'POST', url: `/v2/agents/${a.id}/rotate-secret`, headers: u.headers },
      200,
    );
    expect(rotated.secrets).toHaveLength(1);
    const res = await app.inject({ method: 'GET', url: '/v2/memory', headers: old.headers });
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('invalid_token');
    expect(res.headers['www-authenticate']).toContain('error="invalid_token"');
    const refused = await app.inject({
      method: 'POST',
      url: '/auth/agent/token',
      payload: { grant_type: 'client_credentials', client_id: a.clientId, client_secret: a.clientSecret },
    });
    expect(refused.statusCode).toBe(401);
    expect(refused.json().error).toBe('invalid_client');
    const fresh = await agentToken(app, { clientId: a.clientId, clientSecret: rotated.client_secret });
    await call(app, { method: 'GET', url: '/v2/memory', headers: fresh.headers }, 200);
  });

  it('a grace period ends: then the old secret and its tokens fail', async () => {
    const u = await createUser(app);
    const a = await createAgent(app, u);
    const old = await agentToken(app, a);
    const { body: rotated } = await call(
      app,
      {
        method: 'POST',
        url: `/v2/agents/${a.id}/rotate-secret`,
        headers: u.headers,
        payload: { grace_period_seconds: 1 },
      },
      200,
    );
    await call(app, { method: 'GET', url: '/v2/memory', headers: old.headers }, 200);
    await new Promise((r) => setTimeout(r, 1100));
    expect((await app.inject({ method: 'GET', url: '/v2/memory', headers: old.headers })).statusCode).toBe(401);
    const refused = await app.inject({
      method: 'POST',
      url: '/auth/agent/token',
      payload: { grant_type: 'client_credentials', client_id: a.clientId, client_secret: a.clientSecret },
    });
    expect(refused.json().error).toBe('invalid_client');
    const { body: view } = await call(app, { method: 'GET', url: `/v2/agents/${a.id}`, headers: u.headers }, 200);
    expect(view.secrets.map((s: { id: string }) => s.id)).toEqual([rotated.secrets[0].id]);
  });

  it('a second rotation without grace ends a running grace period too', async () => {
    const u = await createUser(app);
    const a = await createAgent(app, u);
    const t0 = await agentToken(app, a);
    const { body: r1 } = await call(
      app,
      {
        method: 'POST',
        url: `/v2/agents/${a.id}/rotate-secret`,
        headers: u.headers,
        payload: { grace_period_seconds: 3600 },
      },
      200,
    );
    const t1 = await agentToken(app, { clientId: a.clientId, clientSecret: r1.client_secret });
    await call(
      app,
      {
        method: 'POST',
        url: `/v2/agents/${a.id}/rotate-secret`,
        headers: u.headers,
        payload: { grace_period_seconds: 0 },
      },
      200,
    );
    for (const t of [t0, t1])
      expect((await app.inject({ method: 'GET', url: '/v2/memory', headers: t.headers })).statusCode).toBe(401);
  });

  it('delete and disable kill tokens at once', async () => {
    const u = await createUser(app);
    const a = await createAgent(app, u);
    const t = await agentToken(app, a);
    await call(app, { method: 'GET', url: '/v2/memory', headers: t.headers }, 200);
    await call(
      app,
      { method: 'PATCH', url: `/v2/agents/${a.id}`, headers: u.headers, payload: { status: 'disabled' } },
      200,
    );
    const { body: e1 } = await call(app, { method: 'GET', url: '/v2/memory', headers: t.headers }, 401);
    expect(e1.code).toBe('invalid_token');
    await call(
      app,
      { method: 'PATCH', url: `/v2/agents/${a.id}`, headers: u.headers, payload: { status: 'active' } },
      200,
    );
    await call(app, { method: 'GET', url: '/v2/memory', headers: t.headers }, 200);
    await call(app, { method: 'DELETE', url: `/v2/agents/${a.id}`, headers: u.headers }, 204);
    const { body: e2 } = await call(app, { method: 'GET', url: '/v2/memory', headers: t.headers }, 401);
    expect(e2.code).toBe('invalid_token');
    const { body: v } = await call(app, { method: 'POST', url: '/v1/auth/validate', headers: t.headers }, 200);
    expect(v).toEqual({ valid: false, code: 'invalid_token' });
  });

  it('a cached refusal is re-checked, so a change made elsewhere is honoured at once', async () => {
    const u = await createUser(app);
    const a = await createAgent(app, u);
    const t = await agentToken(app, a);
    await call(
      app,
      { method: 'PATCH', url: `/v2/agents/${a.id}`, headers: u.headers, payload: { status: 'disabled' } },
      200,
    );
    await call(app, { method: 'GET', url: '/v2/memory', headers: t.headers }, 401); // refusal now cached
    // Re-enabled behind this instance's back (as another instance would): no eviction here.
    await ctx.db.update(agents).set({ status: 'active' }).where(eq(agents.id, a.id));
    await call(app, { method: 'GET', url: '/v2/memory', headers: t.headers }, 200);
  });

  it('refuses forged and tampered agent tokens', async () => {
    const u = await createUser(app);
    const a = await createAgent(app, u);
    const b = await createAgent(app, u);
    const t = await agentToken(app, a);
    const [h, p, s] = t.token.split('.');
    const payload = JSON.parse(Buffer.from(p, 'base64url').toString());
    const tampered = `${h}.${Buffer.from(JSON.stringify({ ...payload, sub: b.id })).toString('base64url')}.${s}`;
    const { privateKey } = await generateKeyPair('RS256');
    const forged = await new SignJWT({ ...payload })
      .setProtectedHeader({ alg: 'RS256', kid: JSON.parse(Buffer.from(h, 'base64url').toString()).kid })
      .sign(privateKey);
    const none = `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${p}.`;
    for (const token of [tampered, forged, none]) {
      const res = await app.inject({ method: 'GET', url: '/v2/memory', headers: { authorization: `Bearer ${token}` } });
      expect(res.statusCode).toBe(401);
      expect(res.json().code).toBe('invalid_token');
    }
  });

  it('a token answered from memory still expires on time, and only its exact header form is', async () => {
    const u = await createUser(app);
    const a = await createAgent(app, u);
    const t = await agentToken(app, a);
    // Twice: the second request is answered from memory (auth fast path).
    for (let i = 0; i < 2; i++) await call(app, { method: 'GET', url: '/v2/memory', headers: t.headers }, 200);
    // Other spellings of the same credential take the full path and are accepted as before.
    for (const authorization of [`bearer ${t.token}`, `Bearer  ${t.token} `, `BEARER\t${t.token}`]) {
      await call(app, { method: 'GET', url: '/v2/memory', headers: { authorization } }, 200);
    }
    // X-API-Key wins over a known bearer token.
    const { body: e0 } = await call(
      app,
      { method: 'GET', url: '/v2/memory', headers: { ...t.headers, 'x-api-key': 'apk_nope' } },
      401,
    );
    expect(e0.code).toBe('invalid_token');
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 2 * 3600_000 });
    try {
      const { body: e1 } = await call(app, { method: 'GET', url: '/v2/memory', headers: t.headers }, 401);
      expect(e1.code).toBe('token_expired');
    } finally {
      vi.useRealTimers();
    }
  });

  it('gives user tokens 403 agent_token_required on agent memory', async () => {
    const u = await createUser(app);
    const res = await app.inject({ method: 'GET', url: '/v2/memory', headers: u.headers });
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe('agent_token_required');
  });
});

describe.runIf(process.env.TEST_DATABASE_URL && process.env.TEST_REDIS_URL)('agents — several instances', () => {
  it('a rotation on one instance refuses old tokens on another (Redis eviction)', async () => {
    const other = await setupApp();
    const u = await createUser(app);
    const a = await createAgent(app, u);
    const t = await agentToken(app, a);
    await call(other.app, { method: 'GET', url: '/v2/memory', headers: t.headers }, 200); // cached on the other instance
    const { body: rotated } = await call(
      app,
      { method: 'POST', url: `/v2/agents/${a.id}/rotate-secret`, headers: u.headers },
      200,
    );
    // A token of the new secret works on the other instance at once (a cached refusal is re-checked).
    const fresh = await agentToken(app, { clientId: a.clientId, clientSecret: rotated.client_secret });
    await call(other.app, { method: 'GET', url: '/v2/memory', headers: fresh.headers }, 200);
    let status = 200;
    for (let i = 0; i < 20 && status === 200; i++) {
      await new Promise((r) => setTimeout(r, 25));
      status = (await other.app.inject({ method: 'GET', url: '/v2/memory', headers: t.headers })).statusCode;
    }
    expect(status).toBe(401);
  });
});
