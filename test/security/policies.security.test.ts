/**
 * Policies, what is refused: another account's policy answers 404 (read, write, delete) and never
 * binds this account; only admins write global policies, which then bind everyone; agents cannot
 * manage policies; an API key needs `policies:manage` (given only by name) to write them; texts that do not parse or
 * do not match the schema answer 400 with the position; permit statements and several statements
 * are refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentToken, createAgent } from '../helpers/agents.js';
import { call, createUser, setupApp, type TestUser } from '../helpers/app.js';
import { execute, listen, newSession, subscribe } from '../helpers/exec.js';
import { publishItemsService } from '../modules/policies/fixtures.js';
import { startToolUpstream, type ToolUpstream } from '../helpers/tool-upstream.js';

const { app, ctx } = await setupApp({ QUOTA_FREE_DAY: '100000', QUOTA_FREE_MONTH: '100000' });

let base: string;
let upstream: ToolUpstream;
let svc: { id: string; name: string };
const FORBID_ALL = (name: string) => `forbid(principal, action, resource == Platform::Tool::"${name}/get_item");`;

beforeAll(async () => {
  base = await listen(app);
  upstream = await startToolUpstream();
  svc = await publishItemsService(app, ctx, base, 'polsec', upstream.url);
});

afterAll(async () => {
  await upstream.close();
});

async function subscribed(): Promise<{ u: TestUser; sid: string }> {
  const u = await createUser(app);
  await subscribe(base, u, svc.id);
  return { u, sid: await newSession(base, u.headers) };
}

const post = (headers: Record<string, string>, payload: Record<string, unknown>, status: number) =>
  call(app, { method: 'POST', url: '/v1/policies', headers, payload }, status);

describe('policies — security', () => {
  it('needs authentication on every route', async () => {
    for (const [method, url] of [
      ['GET', '/v1/policies'],
      ['POST', '/v1/policies'],
      ['GET', '/v1/policies/schema'],
      ['POST', '/v1/policies/evaluate'],
      ['GET', '/v1/policies/decisions'],
      ['GET', '/v1/policies/pol_x'],
      ['PATCH', '/v1/policies/pol_x'],
      ['DELETE', '/v1/policies/pol_x'],
    ] as const) {
      const res = await app.inject({ method, url, payload: method === 'GET' || method === 'DELETE' ? undefined : {} });
      expect(res.statusCode, `${method} ${url}`).toBe(401);
    }
  });

  it("hides another account's policy (404 on read, update, delete; absent from lists) and it never binds this account", async () => {
    const alice = await subscribed();
    const bob = await subscribed();
    const { body: p } = await post(alice.u.headers, { source: FORBID_ALL(svc.name) }, 201);
    for (const [method, payload] of [
      ['GET', undefined],
      ['PATCH', { enabled: false }],
      ['DELETE', undefined],
    ] as const)
      await call(app, { method, url: `/v1/policies/${p.id}`, headers: bob.u.headers, payload }, 404);
    const { body: list } = await call(app, { method: 'GET', url: '/v1/policies', headers: bob.u.headers }, 200);
    expect(list.data.map((x: { id: string }) => x.id)).not.toContain(p.id);
    const denied = await execute(base, alice.u.headers, alice.sid, {
      service: svc.name,
      tool: 'get_item',
      arguments: { id: '1' },
    });
    expect(denied.body).toMatchObject({ code: 'policy_denied', policy_ids: [p.id] });
    const fine = await execute(base, bob.u.headers, bob.sid, {
      service: svc.name,
      tool: 'get_item',
      arguments: { id: '1' },
    });
    expect(fine.status).toBe(200);
    // Still there and enabled for its owner.
    const { body: mine } = await call(
      app,
      { method: 'GET', url: `/v1/policies/${p.id}`, headers: alice.u.headers },
      200,
    );
    expect(mine.enabled).toBe(true);
  });

  it('lets only admins write global policies, which bind every account and are read-only to others', async () => {
    const plain = await createUser(app);
    const { body: refused } = await post(plain.headers, { source: FORBID_ALL(svc.name), scope: 'global' }, 403);
    expect(refused.code).toBe('insufficient_role');
    const admin = await createUser(app, { roles: ['admin'] });
    const tool = `${svc.name}/get_item`;
    const { body: g } = await post(
      admin.headers,
      {
        source: `forbid(principal, action, resource == Platform::Tool::"${tool}") when { context.arguments.hasTag("id") && context.arguments.getTag("id") == "global-block" };`,
        scope: 'global',
      },
      201,
    );
    try {
      const { u, sid } = await subscribed();
      const r = await execute(base, u.headers, sid, {
        service: svc.name,
        tool: 'get_item',
        arguments: { id: 'global-block' },
      });
      expect(r.body).toMatchObject({ code: 'policy_denied', policy_ids: [g.id] });
      const { body: seen } = await call(app, { method: 'GET', url: `/v1/policies/${g.id}`, headers: u.headers }, 200);
      expect(seen.scope).toBe('global');
      const { body: noWrite } = await call(
        app,
        { method: 'PATCH', url: `/v1/policies/${g.id}`, headers: u.headers, payload: { enabled: false } },
        403,
      );
      expect(noWrite.code).toBe('insufficient_role');
      await call(app, { method: 'DELETE', url: `/v1/policies/${g.id}`, headers: u.headers }, 403);
    } finally {
      await call(app, { method: 'DELETE', url: `/v1/policies/${g.id}`, headers: admin.headers }, 204);
    }
  });

  it('refuses agents on every policy route, and API keys without policies:manage on writes (a default key too)', async () => {
    const u = await createUser(app);
    const agent = await createAgent(app, u);
    const token = await agentToken(app, agent);
    const res = await app.inject({ method: 'GET', url: '/v1/policies', headers: token.headers });
    expect(res.statusCode).toBe(403);
    const { body: key } = await call(
      app,
      { method: 'POST', url: '/api-keys', headers: u.headers, payload: { name: 'k', scopes: ['tools:execute'] } },
      201,
    );
    const { body } = await post({ 'x-api-key': key.key }, { source: FORBID_ALL(svc.name) }, 403);
    expect(body.code).toBe('insufficient_scope');
    // What agent code is usually given: a key made without scopes. It may not loosen its own rules.
    const { body: plain } = await call(
      app,
      { method: 'POST', url: '/api-keys', headers: u.headers, payload: { name: 'p' } },
      201,
    );
    expect(plain.scopes).not.toContain('policies:manage');
    const { body: bound } = await post(u.headers, { source: FORBID_ALL(svc.name) }, 201);
    for (const [method, payload] of [
      ['PATCH', { enabled: false }],
      ['DELETE', undefined],
    ] as const) {
      const res = await app.inject({
        method,
        url: `/v1/policies/${bound.id}`,
        headers: { 'x-api-key': plain.key },
        payload,
      });
      expect([res.statusCode, res.json().code]).toEqual([403, 'insufficient_scope']);
    }
    expect((await post({ 'x-api-key': plain.key }, { source: FORBID_ALL(svc.name) }, 403)).body.code).toBe(
      'insufficient_scope',
    );
    // Named at creation, the scope lets a key write policies.
    const { body: manager } = await call(
      app,
      { method: 'POST', url: '/api-keys', headers: u.headers, payload: { name: 'm', scopes: ['policies:manage'] } },
      201,
    );
    await call(
      app,
      {
        method: 'PATCH',
        url: `/v1/policies/${bound.id}`,
        headers: { 'x-api-key': manager.key },
        payload: { enabled: false },
      },
      200,
    );
  });

  it('answers 400 validation_failed with line and column for syntax and schema errors, and refuses permit and several statements', async () => {
    const u = await createUser(app);
    const { body: syntax } = await post(
      u.headers,
      { source: 'forbid(principal, action, resource)\nwhen { resource.tags.contains("x") ;' },
      400,
    );
    expect(syntax.code).toBe('validation_failed');
    expect(syntax.cedar_errors[0]).toMatchObject({ line: 2 });
    expect(syntax.cedar_errors[0].column).toBeGreaterThan(1);
    expect(syntax.errors[0].pointer).toBe('/source');
    const { body: schema } = await post(
      u.headers,
      { source: 'forbid(principal, action, resource) when { context.argumentz.hasTag("x") };' },
      400,
    );
    expect(schema.detail).toContain('schema');
    expect(schema.cedar_errors[0]).toMatchObject({ line: 1, column: 44 });
    expect(schema.cedar_errors[0].help).toContain('arguments');
    const { body: permit } = await post(u.headers, { source: 'permit(principal, action, resource);' }, 400);
    expect(permit.detail).toContain('forbid');
    await post(u.headers, { source: 'forbid(principal, action, resource); forbid(principal, action, resource);' }, 400);
    await post(u.headers, { source: 'forbid(principal == ?principal, action, resource);' }, 400);
    // The dry run's draft is validated the same way.
    const { body: draft } = await call(
      app,
      {
        method: 'POST',
        url: '/v1/policies/evaluate',
        headers: u.headers,
        payload: { service: svc.name, tool: 'get_item', source: 'nonsense' },
      },
      400,
    );
    expect(draft.code).toBe('validation_failed');
  });

  it("does not dry-run as another account's agent, nor on a service the account cannot see", async () => {
    const u = await createUser(app);
    const other = await createUser(app);
    const theirs = await createAgent(app, other);
    await call(
      app,
      {
        method: 'POST',
        url: '/v1/policies/evaluate',
        headers: u.headers,
        payload: { service: svc.name, tool: 'get_item', agent_id: theirs.id },
      },
      404,
    );
    await call(
      app,
      {
        method: 'POST',
        url: '/v1/policies/evaluate',
        headers: u.headers,
        payload: { service: 'no-such-service', tool: 'x' },
      },
      404,
    );
  });
});
