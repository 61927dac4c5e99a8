/**
 * POST /v1/agents/:id/execute end to end: the app on a real socket, a real upstream API on
 * loopback, services registered through the registry API, subscriptions through /subscriptions.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { topTools, usageTotals } from '../../src/modules/sessions/service.js';
import { createUser, setupApp, type TestUser } from '../helpers/app.js';
import {
  execute,
  expectHttp,
  listen,
  newSession,
  publish,
  registerService,
  subscribe,
  type RegisteredService,
} from '../helpers/exec.js';
import { startToolUpstream, type ToolUpstream } from '../helpers/tool-upstream.js';

const { app, ctx } = await setupApp({ QUOTA_FREE_DAY: '50' });
const base = await listen(app);

const ITEM_SCHEMA = {
  type: 'object',
  properties: {
    id: { type: 'string', minLength: 1 },
    q: { type: 'string' },
    tags: { type: 'array', items: { type: 'string' } },
    limit: { type: 'integer', minimum: 1 },
  },
  required: ['id'],
  additionalProperties: false,
};
const EMPTY = { type: 'object', properties: {} };

function manifest(upstream: ToolUpstream, extra: Record<string, unknown> = {}) {
  return {
    base_url: upstream.url,
    description: 'test upstream',
    auth: { type: 'bearer', secret: 'upstream-token-123' },
    tools: [
      { name: 'get_item', description: 'Get an item', method: 'GET', path: '/items/{id}', input_schema: ITEM_SCHEMA },
      {
        name: 'create_item',
        description: 'Create an item',
        method: 'POST',
        path: '/items',
        input_schema: {
          type: 'object',
          properties: { name: { type: 'string' }, qty: { type: 'integer' } },
          required: ['name'],
        },
      },
      ...['missing', 'boom', 'hang', 'big', 'text', 'malformed'].map((n) => ({
        name: n,
        description: n,
        method: 'GET',
        path: `/${n}`,
        input_schema: EMPTY,
      })),
    ],
    ...extra,
  };
}

let upstream: ToolUpstream;
let owner: TestUser;
let user: TestUser;
let svc: RegisteredService;
let sessionId: string;
let subscriptionId: string;

beforeAll(async () => {
  upstream = await startToolUpstream();
  owner = await createUser(app);
  user = await createUser(app);
  svc = await registerService(base, owner, { name: `items-${Date.now().toString(36)}`, ...manifest(upstream) });
  await publish(ctx, svc.id);
  subscriptionId = (await subscribe(base, user, svc.id)).id;
  sessionId = await newSession(base, user.headers, { name: 'e2e' });
});

describe('execute — HTTP tools', () => {
  it('GET with path and query parameters, credential injected, quota headers set', async () => {
    const before = upstream.seen.length;
    const a = await execute(base, user.headers, sessionId, {
      service: svc.name,
      tool: 'get_item',
      arguments: { id: 'a b/c', q: 'x y', tags: ['t1', 't2'], limit: 5 },
    });
    expect(a.status).toBe(200);
    expect(a.body).toMatchObject({ status: 'succeeded', http_status: 200 });
    expect(a.body.execution_id).toMatch(/^exe_[0-9a-z]{26}$/);
    expect(a.body.error).toBeUndefined();
    expect(a.body.output).toEqual({
      id: 'a b/c',
      query: { q: 'x y', tags: ['t1', 't2'], limit: '5' },
      auth: { authorization: 'Bearer upstream-token-123', 'x-api-key': null },
    });
    expect(typeof a.body.duration_ms).toBe('number');
    expect(a.headers.get('x-quota-limit')).toBe('50');
    const remaining = Number(a.headers.get('x-quota-remaining'));
    expect(remaining).toBeLessThan(50);
    expect(Number(a.headers.get('x-quota-reset'))).toBeGreaterThan(Date.now() / 1000);

    expect(upstream.seen.length).toBe(before + 1);
    const r = upstream.seen[upstream.seen.length - 1];
    expect(r.method).toBe('GET');
    expect(r.url).toBe('/items/a%20b%2Fc?q=x+y&tags=t1&tags=t2&limit=5');
    expect(r.body.length).toBe(0);
    expect(r.headers['x-agent-platform-request-id']).toBe(a.body.execution_id);
    expect(r.headers['x-agent-platform-user']).toMatch(/^psu_[0-9a-f]{32}$/);
    expect(r.headers['x-agent-platform-user']).not.toContain(user.userId);
    expect(r.headers['x-agent-platform-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);

    // The next call counts one more.
    const b = await execute(base, user.headers, sessionId, {
      service: svc.id,
      tool: svc.tools.find((t) => t.name === 'get_item')!.id,
      arguments: { id: '1' },
    });
    expect(b.status).toBe(200);
    expect(Number(b.headers.get('x-quota-remaining'))).toBe(remaining - 1);
  });

  it('POST with a JSON body', async () => {
    const a = await execute(base, user.headers, sessionId, {
      service: svc.name,
      tool: 'create_item',
      arguments: { name: 'widget', qty: 3 },
    });
    expect(a.status).toBe(200);
    expect(a.body).toMatchObject({
      status: 'succeeded',
      http_status: 201,
      output: { created: { name: 'widget', qty: 3 }, content_type: 'application/json' },
    });
    const r = upstream.seenAt('/items').at(-1)!;
    expect(r.method).toBe('POST');
    expect(r.url).toBe('/items');
    expect(JSON.parse(r.body.toString())).toEqual({ name: 'widget', qty: 3 });
  });

  it('answers 200 with status failed for upstream 404 and 500 (text body kept as text)', async () => {
    const nf = await execute(base, user.headers, sessionId, { service: svc.name, tool: 'missing' });
    expect(nf.status).toBe(200);
    expect(nf.body).toMatchObject({
      status: 'failed',
      http_status: 404,
      output: { error: 'no such thing' },
      error: { code: 'upstream_status' },
    });
    const boom = await execute(base, user.headers, sessionId, { service: svc.name, tool: 'boom', arguments: {} });
    expect(boom.status).toBe(200);
    expect(boom.body).toMatchObject({ status: 'failed', http_status: 500, output: 'internal kaboom' });
    expect(boom.body.error.message).toContain('500');
  });

  it('returns non-JSON bodies as text', async () => {
    const a = await execute(base, user.headers, sessionId, { service: svc.name, tool: 'text' });
    expect(a.status).toBe(200);
    expect(a.body).toMatchObject({ status: 'succeeded', http_status: 200, output: 'hello, plain world' });
  });

  it('times out a hanging upstream with 504 and records the execution', async () => {
    const started = Date.now();
    const a = await execute(base, user.headers, sessionId, { service: svc.name, tool: 'hang', timeout_ms: 300 });
    expect(a.status).toBe(504);
    expect(a.body.code).toBe('upstream_timeout');
    expect(a.body.execution_id).toMatch(/^exe_/);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(a.headers.get('x-quota-limit')).toBe('50');
    const { body: s } = await expectHttp(base, 'GET', `/v1/agents/${sessionId}`, 200, { headers: user.headers });
    const rec = s.executions.find((e: { id: string }) => e.id === a.body.execution_id);
    expect(rec).toMatchObject({
      status: 'failed',
      http_status: null,
      error: { code: 'upstream_timeout' },
      tool_name: 'hang',
    });
  });

  it('refuses an oversize body (1 MiB cap) and malformed JSON with 502', async () => {
    const big = await execute(base, user.headers, sessionId, { service: svc.name, tool: 'big' });
    expect(big.status).toBe(502);
    expect(big.body.code).toBe('upstream_error');
    expect(big.body.detail).toMatch(/larger than/);
    const bad = await execute(base, user.headers, sessionId, { service: svc.name, tool: 'malformed' });
    expect(bad.status).toBe(502);
    expect(bad.body.code).toBe('upstream_error');
    expect(bad.body.detail).toMatch(/malformed JSON/);
  });

  it('rejects arguments that fail the schema with 400 and pointers; nothing is sent, nothing counted', async () => {
    const before = upstream.seen.length;
    const { body: q0 } = await expectHttp(base, 'GET', `/subscriptions/${subscriptionId}/quotas`, 200, {
      headers: user.headers,
    });
    const a = await execute(base, user.headers, sessionId, {
      service: svc.name,
      tool: 'get_item',
      arguments: { limit: 0, colour: 'red' },
    });
    expect(a.status).toBe(400);
    expect(a.body.code).toBe('validation_failed');
    const pointers = a.body.errors.map((e: { pointer: string }) => e.pointer).sort();
    expect(pointers).toEqual(['/arguments/colour', '/arguments/id', '/arguments/limit']);
    const wrongType = await execute(base, user.headers, sessionId, {
      service: svc.name,
      tool: 'get_item',
      arguments: { id: 42 },
    });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.errors[0].pointer).toBe('/arguments/id');
    expect(upstream.seen.length).toBe(before);
    const { body: q1 } = await expectHttp(base, 'GET', `/subscriptions/${subscriptionId}/quotas`, 200, {
      headers: user.headers,
    });
    expect(q1.windows[0].used).toBe(q0.windows[0].used);
  });

  it('records executions on the session (newest first) and feeds the usage counters', async () => {
    const sid = await newSession(base, user.headers);
    const a = await execute(base, user.headers, sid, { service: svc.name, tool: 'get_item', arguments: { id: 'one' } });
    const b = await execute(base, user.headers, sid, { service: svc.name, tool: 'missing' });
    expect([a.status, b.status]).toEqual([200, 200]);
    const { body: s } = await expectHttp(base, 'GET', `/v1/sessions/${sid}`, 200, { headers: user.headers });
    expect(s.execution_count).toBe(2);
    expect(s.last_activity_at).toBeTruthy();
    expect(s.executions.map((e: { id: string }) => e.id)).toEqual([b.body.execution_id, a.body.execution_id]);
    expect(s.executions[1]).toMatchObject({
      session_id: sid,
      service_id: svc.id,
      tool_name: 'get_item',
      arguments: { id: 'one' },
      status: 'succeeded',
      http_status: 200,
      output: { id: 'one' },
      error: null,
      agent_id: null,
    });
    const top = await topTools(ctx, { userId: user.userId, limit: 20 });
    const getItem = top.find((t) => t.tool_name === 'get_item')!;
    expect(getItem.service_id).toBe(svc.id);
    expect(getItem.calls).toBeGreaterThanOrEqual(3);
    expect(getItem.successes).toBe(getItem.calls);
    const missing = top.find((t) => t.tool_name === 'missing')!;
    expect(missing.failures).toBe(missing.calls);
    const totals = await usageTotals(ctx, { userId: user.userId, serviceId: svc.id });
    expect(totals.calls).toBe(top.reduce((n, t) => n + t.calls, 0));
  });
});

describe('execute — who may call what', () => {
  it('refuses a canceled subscription with 403 and sends nothing', async () => {
    const u = await createUser(app);
    const sub = await subscribe(base, u, svc.id);
    const sid = await newSession(base, u.headers);
    expect((await execute(base, u.headers, sid, { service: svc.name, tool: 'text' })).status).toBe(200);
    await expectHttp(base, 'DELETE', `/subscriptions/${sub.id}`, 200, { headers: u.headers });
    const before = upstream.seen.length;
    const a = await execute(base, u.headers, sid, { service: svc.name, tool: 'text' });
    expect(a.status).toBe(403);
    expect(a.body.code).toBe('not_subscribed');
    // Also when the arguments are wrong: the subscription is checked first.
    const b = await execute(base, u.headers, sid, { service: svc.name, tool: 'get_item', arguments: {} });
    expect(b.status).toBe(403);
    expect(upstream.seen.length).toBe(before);
  });

  it('refuses callers without a subscription (403) and hides unpublished services of others (404)', async () => {
    const u = await createUser(app);
    const sid = await newSession(base, u.headers);
    const a = await execute(base, u.headers, sid, { service: svc.name, tool: 'text' });
    expect(a.status).toBe(403);
    expect(a.body.code).toBe('not_subscribed');
    const draft = await registerService(base, owner, {
      name: `draft-${Date.now().toString(36)}`,
      ...manifest(upstream),
    });
    const b = await execute(base, u.headers, sid, { service: draft.name, tool: 'text' });
    expect(b.status).toBe(404);
    expect(b.body.code).toBe('not_found');
    const c = await execute(base, u.headers, sid, { service: svc.name, tool: 'no_such_tool' });
    expect(c.status).toBe(404);
  });

  it('lets the owner execute its own services in any state, without quota', async () => {
    const draft = await registerService(base, owner, { name: `own-${Date.now().toString(36)}`, ...manifest(upstream) });
    const sid = await newSession(base, owner.headers);
    const a = await execute(base, owner.headers, sid, {
      service: draft.name,
      tool: 'get_item',
      arguments: { id: 'mine' },
    });
    expect(a.status).toBe(200);
    expect(a.body.output.id).toBe('mine');
    expect(a.headers.get('x-quota-limit')).toBeNull();
  });

  it("refuses executions in a closed session (409) and in another user's session (404)", async () => {
    const sid = await newSession(base, user.headers);
    await expectHttp(base, 'POST', `/v1/sessions/${sid}/close`, 200, { headers: user.headers });
    const before = upstream.seen.length;
    const a = await execute(base, user.headers, sid, { service: svc.name, tool: 'text' });
    expect(a.status).toBe(409);
    expect(a.body.code).toBe('session_closed');
    const other = await createUser(app);
    await subscribe(base, other, svc.id);
    const b = await execute(base, other.headers, sessionId, { service: svc.name, tool: 'text' });
    expect(b.status).toBe(404);
    expect(upstream.seen.length).toBe(before);
  });

  it('injects header and query credentials', async () => {
    const h = await registerService(base, owner, {
      name: `hdr-${Date.now().toString(36)}`,
      ...manifest(upstream, { auth: { type: 'header', name: 'X-Api-Key', secret: 'k-123' } }),
    });
    const q = await registerService(base, owner, {
      name: `qry-${Date.now().toString(36)}`,
      ...manifest(upstream, { auth: { type: 'query', name: 'api_key', secret: 'q-456' } }),
    });
    const sid = await newSession(base, owner.headers);
    const a = await execute(base, owner.headers, sid, { service: h.name, tool: 'get_item', arguments: { id: 'h' } });
    expect(a.body.output.auth).toEqual({ authorization: null, 'x-api-key': 'k-123' });
    const b = await execute(base, owner.headers, sid, {
      service: q.name,
      tool: 'get_item',
      arguments: { id: 'q', q: 'z' },
    });
    expect(b.body.output.query).toEqual({ q: 'z', api_key: 'q-456' });
    expect(b.body.output.auth.authorization).toBeNull();
  });
});

describe('execute — argument injection', () => {
  it('keeps path parameters inside the tool path and platform headers out of reach', async () => {
    const before = upstream.seen.length;
    for (const id of ['..', '.']) {
      const a = await execute(base, user.headers, sessionId, {
        service: svc.name,
        tool: 'get_item',
        arguments: { id },
      });
      expect(a.status, id).toBe(400);
      expect(a.body.errors[0].pointer).toBe('/arguments/id');
    }
    expect(upstream.seen.length).toBe(before);
    const b = await execute(base, user.headers, sessionId, {
      service: svc.name,
      tool: 'get_item',
      arguments: { id: '../../admin?x=1#f' },
    });
    expect(b.status).toBe(200);
    expect(upstream.seen.at(-1)!.url).toBe('/items/..%2F..%2Fadmin%3Fx%3D1%23f');
  });
});
