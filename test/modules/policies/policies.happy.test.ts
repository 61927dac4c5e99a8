/**
 * Policies on tool calls, what works: CRUD with validation against the published Cedar schema
 * (errors with line and column), denial of an execution (403 policy_denied naming the policy, the
 * upstream never called), the enabled flag, the context (arguments, numbers, time, calls), the dry
 * run, approval through `@approval("required")`, and the decision log.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { and, eq, sql } from 'drizzle-orm';
import { execRows } from '../../../src/db/client.js';
import { tools } from '../../../src/db/schema/index.js';
import { callCounts } from '../../../src/modules/policies/authorize.js';
import { agentToken, createAgent, subscribeAgentTool } from '../../helpers/agents.js';
import { call, createUser, setupApp, type TestUser } from '../../helpers/app.js';
import { execute, finishedCall, listen, newSession, publish, registerService, subscribe } from '../../helpers/exec.js';
import { startToolUpstream, type ToolUpstream } from '../../helpers/tool-upstream.js';

const { app, ctx } = await setupApp({ QUOTA_FREE_DAY: '100000', QUOTA_FREE_MONTH: '100000' });

let base: string;
let upstream: ToolUpstream;
let svc: { id: string; name: string };

const TOOLS = [
  {
    name: 'get_item',
    description: 'Get an item',
    method: 'GET',
    path: '/items/{id}',
    input_schema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
  },
  {
    name: 'create_item',
    description: 'Create an item',
    method: 'POST',
    path: '/items',
    input_schema: { type: 'object', properties: { name: { type: 'string' }, amount: { type: 'integer' } } },
  },
  {
    name: 'delete_item',
    description: 'Delete an item',
    method: 'DELETE',
    path: '/items/{id}',
    input_schema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
  },
];

beforeAll(async () => {
  base = await listen(app);
  upstream = await startToolUpstream();
  const publisher = await createUser(app);
  svc = await registerService(base, publisher, {
    name: `pol-${Date.now().toString(36)}`,
    description: 'items',
    base_url: upstream.url,
    tools: TOOLS,
  });
  await publish(ctx, svc.id);
});

afterAll(async () => {
  await upstream.close();
});

async function subscribedUser(): Promise<{ u: TestUser; sid: string }> {
  const u = await createUser(app);
  await subscribe(base, u, svc.id);
  return { u, sid: await newSession(base, u.headers) };
}

async function createPolicy(u: TestUser, source: string, extra: Record<string, unknown> = {}) {
  return (
    await call(app, { method: 'POST', url: '/v1/policies', headers: u.headers, payload: { source, ...extra } }, 201)
  ).body;
}

describe('policies — happy paths', () => {
  it('publishes the Cedar schema', async () => {
    const u = await createUser(app);
    const { body } = await call(app, { method: 'GET', url: '/v1/policies/schema', headers: u.headers }, 200);
    expect(body.format).toBe('cedar');
    expect(body.schema).toContain('namespace Platform');
    expect(body.schema).toContain('action execute');
  });

  it('creates, lists, reads, updates and deletes a policy', async () => {
    const u = await createUser(app);
    const source = 'forbid(principal, action, resource) when { resource.tags.contains("destructive") };';
    const p = await createPolicy(u, source, { description: 'no deletes' });
    expect(p).toMatchObject({ scope: 'account', owner_id: u.userId, enabled: true, source, approval: false });
    expect(p.id).toMatch(/^pol_/);
    const { body: list } = await call(app, { method: 'GET', url: '/v1/policies', headers: u.headers }, 200);
    expect(list.data.map((x: { id: string }) => x.id)).toContain(p.id);
    const { body: one } = await call(app, { method: 'GET', url: `/v1/policies/${p.id}`, headers: u.headers }, 200);
    expect(one.description).toBe('no deletes');
    const { body: upd } = await call(
      app,
      { method: 'PATCH', url: `/v1/policies/${p.id}`, headers: u.headers, payload: { enabled: false } },
      200,
    );
    expect(upd.enabled).toBe(false);
    await call(app, { method: 'DELETE', url: `/v1/policies/${p.id}`, headers: u.headers }, 204);
    await call(app, { method: 'GET', url: `/v1/policies/${p.id}`, headers: u.headers }, 404);
  });

  it('denies a forbidden execution with 403 policy_denied naming the policy, before the upstream; toggling enabled takes effect at once', async () => {
    const { u, sid } = await subscribedUser();
    const p = await createPolicy(
      u,
      'forbid(principal, action, resource) when { resource.tags.contains("destructive") };',
    );
    const before = upstream.seenAt('/items').length;
    const denied = await execute(base, u.headers, sid, {
      service: svc.name,
      tool: 'delete_item',
      arguments: { id: '7' },
    });
    expect(denied.status).toBe(403);
    expect(denied.body).toMatchObject({ code: 'policy_denied', policy_ids: [p.id] });
    expect(denied.body.detail).toContain(p.id);
    expect(upstream.seenAt('/items').length).toBe(before);
    // A read-only tool is not concerned.
    const ok = await execute(base, u.headers, sid, { service: svc.name, tool: 'get_item', arguments: { id: '7' } });
    expect(ok.status).toBe(200);
    // Disabled: the delete reaches the upstream (which answers 404 for DELETE; any non-403 will do).
    await call(
      app,
      { method: 'PATCH', url: `/v1/policies/${p.id}`, headers: u.headers, payload: { enabled: false } },
      200,
    );
    const after = await execute(base, u.headers, sid, {
      service: svc.name,
      tool: 'delete_item',
      arguments: { id: '7' },
    });
    expect(after.body?.code).not.toBe('policy_denied');
  });

  it('reads arguments (strings and numbers), the principal and the tool', async () => {
    const { u, sid } = await subscribedUser();
    const agent = await createAgent(app, u);
    await subscribeAgentTool(app, u, agent.id, svc.name);
    const token = await agentToken(app, agent);
    const big = await createPolicy(
      u,
      `forbid(principal, action, resource == Platform::Tool::"${svc.name}/create_item") when { context.numbers.hasTag("amount") && context.numbers.getTag("amount") > 1000 };`,
    );
    const secret = await createPolicy(
      u,
      'forbid(principal, action, resource) when { context.arguments.hasTag("id") && context.arguments.getTag("id") like "secret-*" };',
    );
    const readOnlyAgents = await createPolicy(
      u,
      'forbid(principal is Platform::Agent, action, resource) unless { resource.tags.contains("read_only") };',
    );
    const small = await execute(base, u.headers, sid, {
      service: svc.name,
      tool: 'create_item',
      arguments: { amount: 5 },
    });
    expect(small.status).toBe(200);
    const large = await execute(base, u.headers, sid, {
      service: svc.name,
      tool: 'create_item',
      arguments: { amount: 5000 },
    });
    expect(large.body).toMatchObject({ code: 'policy_denied', policy_ids: [big.id] });
    const hidden = await execute(base, u.headers, sid, {
      service: svc.name,
      tool: 'get_item',
      arguments: { id: 'secret-1' },
    });
    expect(hidden.body).toMatchObject({ code: 'policy_denied', policy_ids: [secret.id] });
    // The agent may read but not write; the account itself may write.
    const asid = await newSession(base, token.headers);
    const read = await execute(base, token.headers, asid, {
      service: svc.name,
      tool: 'get_item',
      arguments: { id: '1' },
    });
    expect(read.status).toBe(200);
    const write = await execute(base, token.headers, asid, { service: svc.name, tool: 'create_item', arguments: {} });
    expect(write.body).toMatchObject({ code: 'policy_denied', policy_ids: [readOnlyAgents.id] });
  });

  it('caps calls per day with context.calls', async () => {
    const { u, sid } = await subscribedUser();
    const cap = await createPolicy(
      u,
      `forbid(principal, action, resource == Platform::Tool::"${svc.name}/get_item") when { context.calls.last_day >= 2 };`,
    );
    for (let i = 0; i < 2; i++) {
      const r = await execute(base, u.headers, sid, {
        service: svc.name,
        tool: 'get_item',
        arguments: { id: String(i) },
      });
      expect(r.status).toBe(200);
      await ctx.executionLog.drain();
    }
    const third = await execute(base, u.headers, sid, { service: svc.name, tool: 'get_item', arguments: { id: 'x' } });
    expect(third.body).toMatchObject({ code: 'policy_denied', policy_ids: [cap.id] });
  });

  it("counts the caller's executions in the last hour and day, exactly at the windows' edges", async () => {
    const { u, sid } = await subscribedUser();
    for (let i = 0; i < 3; i++)
      expect(
        (await execute(base, u.headers, sid, { service: svc.name, tool: 'get_item', arguments: { id: `${i}` } }))
          .status,
      ).toBe(200);
    await ctx.executionLog.drain();
    const [tool] = await ctx.db
      .select({ id: tools.id })
      .from(tools)
      .where(and(eq(tools.serviceId, svc.id), eq(tools.name, 'get_item')));
    const actor = { accountId: u.userId, agentId: null };
    expect(await callCounts(ctx, actor, tool.id)).toEqual({ last_hour: 3, last_day: 3 });
    // Older executions, recorded with their instants: two seconds after and before the start of
    // each window, in the minute the window starts in (what only an exact count of that minute
    // gets right), and an agent's. The statement's now() is under a second later than `now`, and
    // `now` is kept 3-55 s into its minute so both instants share the window's first minute.
    while (Date.now() % 60_000 < 3_000 || Date.now() % 60_000 > 55_000) await new Promise((r) => setTimeout(r, 500));
    const now = Date.now();
    const HOUR = 3_600_000;
    const at = [
      now - HOUR + 2_000,
      now - HOUR - 2_000,
      now - 24 * HOUR + 2_000,
      now - 24 * HOUR - 2_000,
      now - 30 * HOUR,
    ];
    const ago = (ms: number) => new Date(now - ms);
    const record = (when: Date, agentId: string | null = null) =>
      ctx.executionLog.add({
        ...finishedCall({
          sessionId: sid,
          userId: u.userId,
          agentId,
          serviceId: svc.id,
          toolId: tool.id,
          toolName: 'get_item',
        }),
        id: `exe_cnt_${Math.random().toString(36).slice(2)}`,
        at: when,
      });
    await Promise.all([...at.map((t) => record(new Date(t))), record(ago(2 * HOUR), 'agt_counted')]);
    await ctx.executionLog.drain();
    // The account counts its agents' calls too; an agent only its own.
    expect(await callCounts(ctx, actor, tool.id)).toEqual({ last_hour: 4, last_day: 7 });
    expect(await callCounts(ctx, { ...actor, agentId: 'agt_counted' }, tool.id)).toEqual({ last_hour: 0, last_day: 1 });
    expect(await callCounts(ctx, { ...actor, agentId: 'agt_none' }, tool.id)).toEqual({ last_hour: 0, last_day: 0 });
    // The counters agree with the executions they count.
    const [exact] = await execRows(
      ctx.db,
      sql`select count(*) filter (where created_at > now() - interval '1 hour')::int as last_hour,
                 count(*) filter (where created_at > now() - interval '1 day')::int as last_day
          from executions where tool_id = ${tool.id} and user_id = ${u.userId}`,
    );
    expect(await callCounts(ctx, actor, tool.id)).toEqual(exact);
  });

  it('dry-runs a call: decision, deciding policies, time in UTC, a draft policy', async () => {
    const u = await createUser(app);
    const hours = await createPolicy(
      u,
      'forbid(principal, action, resource) unless { context.time.weekday >= 1 && context.time.weekday <= 5 && context.time.hour >= 9 && context.time.hour < 17 };',
      { description: 'business hours' },
    );
    const run = async (payload: Record<string, unknown>) =>
      (await call(app, { method: 'POST', url: '/v1/policies/evaluate', headers: u.headers, payload }, 200)).body;
    // 2026-12-07 is a Monday.
    const monday = await run({
      service: svc.name,
      tool: 'get_item',
      arguments: { id: '1' },
      at: '2026-12-07T10:00:00Z',
    });
    expect(monday).toMatchObject({ decision: 'allow', policy_ids: [], evaluated: 1 });
    expect(monday.context.time).toMatchObject({ hour: 10, weekday: 1 });
    expect(monday.resource).toBe(`Platform::Tool::"${svc.name}/get_item"`);
    const sunday = await run({
      service: svc.name,
      tool: 'get_item',
      arguments: { id: '1' },
      at: '2026-12-06T10:00:00Z',
    });
    expect(sunday).toMatchObject({ decision: 'deny', policy_ids: [hours.id] });
    const draft = await run({
      service: svc.name,
      tool: 'delete_item',
      arguments: { id: '1' },
      at: '2026-12-07T10:00:00Z',
      source:
        '@approval("required") forbid(principal, action, resource) when { resource.tags.contains("destructive") };',
    });
    expect(draft).toMatchObject({ decision: 'approval', policy_ids: ['draft'], evaluated: 2 });
    // Nothing logged by dry runs.
    const { body: log } = await call(app, { method: 'GET', url: '/v1/policies/decisions', headers: u.headers }, 200);
    expect(log.data).toEqual([]);
  });

  it('holds a call for approval with @approval("required"); the approved call runs once with approval_id', async () => {
    const { u, sid } = await subscribedUser();
    const p = await createPolicy(
      u,
      '@approval("required") forbid(principal, action, resource) when { resource.tags.contains("destructive") };',
    );
    expect(p.approval).toBe(true);
    const body = { service: svc.name, tool: 'delete_item', arguments: { id: '9' } };
    const held = await execute(base, u.headers, sid, body);
    expect(held.status).toBe(202);
    expect(held.body.code).toBe('approval_required');
    const id = held.body.approval_id as string;
    const { body: apr } = await call(app, { method: 'GET', url: `/v1/approvals/${id}`, headers: u.headers }, 200);
    expect(apr.policy_ids).toEqual([p.id]);
    await call(app, { method: 'POST', url: `/v1/approvals/${id}/approve`, headers: u.headers }, 200);
    const ran = await execute(base, u.headers, sid, { ...body, approval_id: id });
    expect([200, 502]).toContain(ran.status); // the upstream answers DELETE as it likes; the call ran
    expect(ran.body.execution_id).toMatch(/^exe_/);
    const again = await execute(base, u.headers, sid, { ...body, approval_id: id });
    expect(again.body.code).toBe('approval_invalid');
  });

  it('logs every decision of a non-empty policy set, newest first, to its owner only', async () => {
    const { u, sid } = await subscribedUser();
    const p = await createPolicy(
      u,
      'forbid(principal, action, resource) when { resource.tags.contains("destructive") };',
    );
    await execute(base, u.headers, sid, { service: svc.name, tool: 'get_item', arguments: { id: '1' } });
    await execute(base, u.headers, sid, { service: svc.name, tool: 'delete_item', arguments: { id: '1' } });
    const { body } = await call(app, { method: 'GET', url: '/v1/policies/decisions', headers: u.headers }, 200);
    expect(body.data.map((d: { decision: string }) => d.decision)).toEqual(['deny', 'allow']);
    expect(body.data[0]).toMatchObject({
      principal: `Platform::User::"${u.userId}"`,
      tool: `${svc.name}/delete_item`,
      policy_ids: [p.id],
      agent_id: null,
    });
    const { body: denies } = await call(
      app,
      { method: 'GET', url: '/v1/policies/decisions?decision=deny', headers: u.headers },
      200,
    );
    expect(denies.data).toHaveLength(1);
    const other = await createUser(app);
    const { body: none } = await call(
      app,
      { method: 'GET', url: '/v1/policies/decisions', headers: other.headers },
      200,
    );
    expect(none.data).toEqual([]);
  });
});
