import { describe, expect, it } from 'vitest';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { basicAuth, createAgent, type TestAgent } from '../../helpers/agents.js';

const { app } = await setupApp();
const limited = await setupApp({ AGENT_TOKEN_RATE_LIMIT: '3' });

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const GRANT = 'grant_type=client_credentials';

/** POST /auth/agent/token and check the RFC 6749 §5.2 error shape. */
async function tokenError(
  opts: Omit<InjectOptions, 'method' | 'url'>,
  status: number,
  error: string,
  target: FastifyInstance = app,
) {
  const res = await target.inject({ method: 'POST', url: '/auth/agent/token', ...opts });
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.headers['cache-control']).toBe('no-store');
  expect(res.headers.pragma).toBe('no-cache');
  const body = res.json();
  expect(Object.keys(body).sort()).toEqual(['error', 'error_description']);
  expect(body.error).toBe(error);
  expect(body.error_description).toEqual(expect.any(String));
  if (error === 'invalid_client') expect(res.headers['www-authenticate']).toMatch(/^Basic realm="agent-platform"/);
  else expect(res.headers['www-authenticate']).toBeUndefined();
  return res;
}

describe('agents — invalid requests', () => {
  it('rejects invalid agent bodies with 400', async () => {
    const u = await createUser(app);
    const bad = [
      {},
      { name: '' },
      { name: 'x'.repeat(101) },
      { name: 'a', extra: 1 },
      { name: 'a', metadata: 'x' },
      { name: 'a', metadata: { big: 'x'.repeat(17 * 1024) } },
    ];
    for (const payload of bad) {
      const { body } = await call(app, { method: 'POST', url: '/v2/agents', headers: u.headers, payload }, 400);
      expect(body.code).toBe('validation_failed');
    }
    const a = await createAgent(app, u);
    for (const payload of [{ status: 'deleted' }, { name: '' }, { unknown: true }]) {
      await call(app, { method: 'PATCH', url: `/v2/agents/${a.id}`, headers: u.headers, payload }, 400);
    }
    for (const payload of [
      { grace_period_seconds: 86401 },
      { grace_period_seconds: -1 },
      { grace_period_seconds: 1.5 },
      { other: 1 },
    ]) {
      await call(app, { method: 'POST', url: `/v2/agents/${a.id}/rotate-secret`, headers: u.headers, payload }, 400);
    }
    await call(app, { method: 'GET', url: '/v2/agents?cursor=%%%', headers: u.headers }, 400);
    await call(app, { method: 'GET', url: '/v2/agents?limit=101', headers: u.headers }, 400);
  });

  it('answers 404 for unknown and deleted agents', async () => {
    const u = await createUser(app);
    const a = await createAgent(app, u);
    await call(app, { method: 'GET', url: '/v2/agents/agt_00000000000000000000000000', headers: u.headers }, 404);
    await call(app, { method: 'DELETE', url: `/v2/agents/${a.id}`, headers: u.headers }, 204);
    for (const [method, url, payload] of [
      ['GET', `/v2/agents/${a.id}`],
      ['PATCH', `/v2/agents/${a.id}`, { name: 'x' }],
      ['DELETE', `/v2/agents/${a.id}`],
      ['POST', `/v2/agents/${a.id}/rotate-secret`, {}],
      ['GET', `/v2/agents/${a.id}/tools`],
    ] as const) {
      const { body } = await call(app, { method, url, headers: u.headers, ...(payload ? { payload } : {}) }, 404);
      expect(body.code).toBe('not_found');
    }
  });
});

describe('POST /auth/agent/token — every RFC 6749 error', () => {
  let a: TestAgent;
  it('setup', async () => {
    a = await createAgent(app, await createUser(app));
  });

  it('invalid_request: grant_type missing or empty', async () => {
    await tokenError(
      { headers: FORM, payload: `client_id=${a.clientId}&client_secret=${a.clientSecret}` },
      400,
      'invalid_request',
    );
    await tokenError(
      { headers: FORM, payload: `grant_type=&client_id=${a.clientId}&client_secret=${a.clientSecret}` },
      400,
      'invalid_request',
    );
    await tokenError({ headers: { authorization: basicAuth(a.clientId, a.clientSecret) } }, 400, 'invalid_request');
  });

  it('unsupported_grant_type', async () => {
    for (const g of ['password', 'authorization_code', 'refresh_token', 'CLIENT_CREDENTIALS']) {
      await tokenError(
        { headers: { ...FORM, authorization: basicAuth(a.clientId, a.clientSecret) }, payload: `grant_type=${g}` },
        400,
        'unsupported_grant_type',
      );
    }
  });

  it('invalid_request: a parameter sent twice (§3.2)', async () => {
    await tokenError(
      { headers: FORM, payload: `${GRANT}&${GRANT}&client_id=${a.clientId}&client_secret=${a.clientSecret}` },
      400,
      'invalid_request',
    );
    await tokenError(
      {
        headers: FORM,
        payload: `${GRANT}&client_id=${a.clientId}&client_id=${a.clientId}&client_secret=${a.clientSecret}`,
      },
      400,
      'invalid_request',
    );
  });

  it('invalid_request: two client authentication methods at once (§2.3)', async () => {
    await tokenError(
      {
        headers: { ...FORM, authorization: basicAuth(a.clientId, a.clientSecret) },
        payload: `${GRANT}&client_id=${a.clientId}&client_secret=${a.clientSecret}`,
      },
      400,
      'invalid_request',
    );
    await tokenError(
      {
        headers: { authorization: basicAuth(a.clientId, a.clientSecret) },
        payload: { grant_type: 'client_credentials', client_secret: a.clientSecret },
      },
      400,
      'invalid_request',
    );
  });

  it('invalid_request: client_id in the body differs from the Basic credentials', async () => {
    await tokenError(
      {
        headers: { ...FORM, authorization: basicAuth(a.clientId, a.clientSecret) },
        payload: `${GRANT}&client_id=agc_other`,
      },
      400,
      'invalid_request',
    );
  });

  it('invalid_request: malformed bodies, wrong types, unsupported media types', async () => {
    await tokenError(
      { headers: { 'content-type': 'application/json' }, payload: '{"grant_type":' },
      400,
      'invalid_request',
    );
    await tokenError(
      { payload: { grant_type: 42, client_id: a.clientId, client_secret: a.clientSecret } },
      400,
      'invalid_request',
    );
    await tokenError(
      { payload: { grant_type: 'client_credentials', client_id: [a.clientId], client_secret: a.clientSecret } },
      400,
      'invalid_request',
    );
    await tokenError(
      { headers: { 'content-type': 'application/json' }, payload: '["grant_type"]' },
      400,
      'invalid_request',
    );
    await tokenError({ headers: { 'content-type': 'text/plain' }, payload: GRANT }, 400, 'invalid_request');
  });

  it('invalid_client: no client authentication, or only half of it', async () => {
    await tokenError({ headers: FORM, payload: GRANT }, 401, 'invalid_client');
    await tokenError({ headers: FORM, payload: `${GRANT}&client_id=${a.clientId}` }, 401, 'invalid_client');
    await tokenError({ headers: FORM, payload: `${GRANT}&client_secret=${a.clientSecret}` }, 401, 'invalid_client');
    await tokenError(
      { headers: { ...FORM, authorization: basicAuth(a.clientId, '') }, payload: GRANT },
      401,
      'invalid_client',
    );
  });

  it('invalid_client: wrong secret, unknown client, secret of another client', async () => {
    const other = await createAgent(app, await createUser(app));
    const wrong = a.clientSecret.slice(0, -1) + (a.clientSecret.endsWith('A') ? 'B' : 'A');
    await tokenError(
      { headers: FORM, payload: `${GRANT}&client_id=${a.clientId}&client_secret=${wrong}` },
      401,
      'invalid_client',
    );
    await tokenError(
      { headers: { ...FORM, authorization: basicAuth(a.clientId, wrong) }, payload: GRANT },
      401,
      'invalid_client',
    );
    await tokenError(
      {
        headers: FORM,
        payload: `${GRANT}&client_id=agc_00000000000000000000000000000000&client_secret=${a.clientSecret}`,
      },
      401,
      'invalid_client',
    );
    await tokenError(
      { headers: FORM, payload: `${GRANT}&client_id=${a.clientId}&client_secret=${other.clientSecret}` },
      401,
      'invalid_client',
    );
    await tokenError(
      { headers: FORM, payload: `${GRANT}&client_id=${a.clientId}&client_secret=not-a-secret` },
      401,
      'invalid_client',
    );
  });

  it('invalid_client: malformed or non-Basic Authorization headers', async () => {
    for (const authorization of [
      'Basic !!!',
      `Basic ${Buffer.from('no-colon').toString('base64')}`,
      `Bearer ${a.clientSecret}`,
      `Basic ${Buffer.from('%zz:%zz').toString('base64')}`,
    ]) {
      await tokenError({ headers: { ...FORM, authorization }, payload: GRANT }, 401, 'invalid_client');
    }
  });

  it('invalid_scope: unknown or wrongly-cased scopes', async () => {
    for (const scope of ['admin', 'memory:read admin', 'MEMORY:READ']) {
      await tokenError(
        { payload: { grant_type: 'client_credentials', client_id: a.clientId, client_secret: a.clientSecret, scope } },
        400,
        'invalid_scope',
      );
    }
  });

  it('invalid_client: disabled and deleted agents', async () => {
    const u = await createUser(app);
    const b = await createAgent(app, u);
    const post = {
      payload: { grant_type: 'client_credentials', client_id: b.clientId, client_secret: b.clientSecret },
    };
    await call(
      app,
      { method: 'PATCH', url: `/v2/agents/${b.id}`, headers: u.headers, payload: { status: 'disabled' } },
      200,
    );
    await tokenError(post, 401, 'invalid_client');
    await call(
      app,
      { method: 'PATCH', url: `/v2/agents/${b.id}`, headers: u.headers, payload: { status: 'active' } },
      200,
    );
    await call(app, { method: 'POST', url: '/auth/agent/token', ...post }, 200);
    await call(app, { method: 'DELETE', url: `/v2/agents/${b.id}`, headers: u.headers }, 204);
    await tokenError(post, 401, 'invalid_client');
  });

  it('rate limits attempts per client_id (429 with Retry-After), not across clients', async () => {
    const u = await createUser(limited.app);
    const x = await createAgent(limited.app, u);
    const y = await createAgent(limited.app, u);
    const bad = { headers: FORM, payload: `${GRANT}&client_id=${x.clientId}&client_secret=wrong` };
    for (let i = 0; i < 3; i++) await tokenError(bad, 401, 'invalid_client', limited.app);
    const res = await tokenError(
      { headers: { ...FORM, authorization: basicAuth(x.clientId, x.clientSecret) }, payload: GRANT },
      429,
      'rate_limited',
      limited.app,
    );
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    await call(
      limited.app,
      {
        method: 'POST',
        url: '/auth/agent/token',
        headers: FORM,
        payload: `${GRANT}&client_id=${y.clientId}&client_secret=${y.clientSecret}`,
      },
      200,
    );
  });
});
