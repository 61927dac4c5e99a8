/**
 * One policy, every face: a `forbid` of the account denies the same call on REST, the MCP
 * `execute_tool` meta tool and the exposed `<service>__<tool>` tool (official SDK client), and in
 * a deployed agent's handler (`context.tools.execute` in the sandbox, through the broker) — with
 * `policy_denied` and the policy's id, and without reaching the upstream; an allowed call still
 * runs on each face.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createUser, setupApp, type TestUser } from '../../helpers/app.js';
import { execute, listen, newSession, subscribe } from '../../helpers/exec.js';
import { connectMcp, type McpConnection } from '../../helpers/mcp.js';
import { publishItemsService } from './fixtures.js';
import { startToolUpstream, type ToolUpstream } from '../../helpers/tool-upstream.js';
import { deployedToolAgent, HANDLERS } from '../deployments/fixtures.js';

const { app, ctx } = await setupApp({ QUOTA_FREE_DAY: '100000', QUOTA_FREE_MONTH: '100000' });

const HANDLER = HANDLERS.catchingTool;

let base: string;
let upstream: ToolUpstream;
let svc: { id: string; name: string };
let u: TestUser;
let sid: string;
let mcp: McpConnection;
let agentId: string;
let policyId: string;

beforeAll(async () => {
  base = await listen(app);
  upstream = await startToolUpstream();
  svc = await publishItemsService(app, ctx, base, 'polfaces', upstream.url);
  u = await createUser(app);
  await subscribe(base, u, svc.id);
  sid = await newSession(base, u.headers);
  const { body: p } = await call(
    app,
    {
      method: 'POST',
      url: '/v1/policies',
      headers: u.headers,
      payload: {
        description: 'nobody deletes',
        source: 'forbid(principal, action, resource) when { resource.tags.contains("destructive") };',
      },
    },
    201,
  );
  policyId = p.id;
  mcp = await connectMcp(base, u.headers, { query: '?expose_tools=true' });
  agentId = (await deployedToolAgent(app, u, svc.name, HANDLER)).id;
}, 180_000);

afterAll(async () => {
  await mcp?.close();
  await upstream?.close();
});

const deletes = () => upstream.seen.filter((r) => r.method === 'DELETE').length;

async function invoke(input: Record<string, unknown>) {
  const { body } = await call(
    app,
    { method: 'POST', url: `/v2/agents/${agentId}/invoke`, headers: u.headers, payload: { input } },
    200,
  );
  return body;
}

describe('policies on every face', () => {
  it('REST: 403 policy_denied naming the policy', async () => {
    const before = deletes();
    const r = await execute(base, u.headers, sid, { service: svc.name, tool: 'delete_item', arguments: { id: '1' } });
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ code: 'policy_denied', policy_ids: [policyId] });
    expect(deletes()).toBe(before);
  });

  it('MCP execute_tool (meta) and the exposed tool: a tool error with policy_denied', async () => {
    const before = deletes();
    const meta = await mcp.call('execute_tool', { service: svc.name, tool: 'delete_item', arguments: { id: '1' } });
    expect(meta.isError).toBe(true);
    expect(meta.structuredContent?.code).toBe('policy_denied');
    expect(JSON.stringify(meta.content)).toContain(policyId);
    const exposed = await mcp.call(`${svc.name}__delete_item`, { id: '1' });
    expect(exposed.isError).toBe(true);
    expect(exposed.structuredContent?.code).toBe('policy_denied');
    expect(JSON.stringify(exposed.content)).toContain(policyId);
    expect(deletes()).toBe(before);
    const allowed = await mcp.call(`${svc.name}__get_item`, { id: '1' });
    expect(allowed.isError).toBeFalsy();
  });

  it('deployed agent: context.tools.execute rejects with policy_denied', async () => {
    const before = deletes();
    const inv = await invoke({ service: svc.name, tool: 'delete_item', args: { id: '1' } });
    expect(inv.status).toBe('succeeded');
    expect(inv.output).toMatchObject({ ok: false, code: 'policy_denied', status: 403 });
    expect(inv.output.message).toContain(policyId);
    expect(deletes()).toBe(before);
    const fine = await invoke({ service: svc.name, tool: 'get_item', args: { id: '1' } });
    expect(fine.output).toMatchObject({ ok: true, status: 'succeeded' });
  });

  it('logs the decisions of every face, the agent’s under its id', async () => {
    const { body } = await call(
      app,
      { method: 'GET', url: '/v1/policies/decisions?decision=deny', headers: u.headers },
      200,
    );
    expect(body.data.length).toBeGreaterThanOrEqual(4);
    expect(body.data.some((d: { agent_id: string | null }) => d.agent_id === agentId)).toBe(true);
    expect(body.data.every((d: { policy_ids: string[] }) => d.policy_ids[0] === policyId)).toBe(true);
  });
});
