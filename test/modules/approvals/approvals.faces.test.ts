/**
 * Human approval on every face, driven by an account policy `@approval("required")` on one tool:
 * REST answers 202 `approval_required`, the approved call re-submitted with `approval_id` runs
 * once, a second re-submission, other arguments and a denial are refused; MCP answers a text tool
 * error with the URL and retry hint (meta `execute_tool` and exposed `<service>__<tool>` tools) or,
 * for a client that declared URL-mode elicitation, the -32042 URL elicitation error; a deployed
 * agent catches `approval_required` with its id, or waits for the decision with `waitForApproval`.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UrlElicitationRequiredError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APPROVAL_META } from '../../../src/modules/mcp/tools.js';
import { agentToken, createAgent, subscribeAgentTool } from '../../helpers/agents.js';
import { call, createUser, setupApp, type TestUser } from '../../helpers/app.js';
import { execute, listen, newSession } from '../../helpers/exec.js';
import { connectMcp } from '../../helpers/mcp.js';
import { startToolUpstream, type ToolUpstream } from '../../helpers/tool-upstream.js';
import { deployReady, tarball, waitFor } from '../deployments/fixtures.js';

const { app, ctx } = await setupApp();

const HANDLER = `
export default async function (input, context) {
  try {
    const r = await context.tools.execute(input.service, 'create_item', input.args, input.options);
    return { ran: r.status, output: r.output };
  } catch (e) {
    return { name: e.name, code: e.code, status: e.status, approvalId: e.approvalId, approvalUrl: e.approvalUrl, expiresAt: e.expiresAt };
  }
}
`;

let base: string;
let upstream: ToolUpstream;
let u: TestUser;
let svc: { id: string; name: string };
let agent: { id: string; clientId: string; clientSecret: string };

beforeAll(async () => {
  base = await listen(app);
  upstream = await startToolUpstream();
  u = await createUser(app);
  const { body } = await call(
    app,
    {
      method: 'POST',
      url: '/owner/services',
      headers: u.headers,
      payload: {
        name: `appr-${Date.now().toString(36)}`,
        description: 'items',
        base_url: upstream.url,
        tools: [
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
            input_schema: { type: 'object' },
          },
        ],
      },
    },
    201,
  );
  svc = { id: body.id, name: body.name };
  await call(
    app,
    {
      method: 'POST',
      url: '/v1/policies',
      headers: u.headers,
      payload: {
        description: 'a person approves every create_item',
        source: `@approval("required")\nforbid (principal, action == Platform::Action::"execute", resource == Platform::Tool::"${svc.name}/create_item");`,
      },
    },
    201,
  );
  agent = await createAgent(app, u);
  await subscribeAgentTool(app, u, agent.id, svc.name);
}, 60_000);

afterAll(async () => {
  await upstream.close();
});

const decide = (id: string, how: 'approve' | 'deny', payload?: Record<string, unknown>) =>
  call(app, { method: 'POST', url: `/v1/approvals/${id}/${how}`, headers: u.headers, payload }, 200);

const posted = () => upstream.seen.filter((r) => r.method === 'POST' && r.url === '/items');

describe('approvals on every face', () => {
  it('REST: 202 approval_required, nothing sent; the approved call re-submitted runs once; reuse, other arguments and denial are refused', async () => {
    const sid = await newSession(base, u.headers);
    const before = posted().length;
    const held = await execute(base, u.headers, sid, {
      service: svc.name,
      tool: 'create_item',
      arguments: { name: 'a' },
    });
    expect(held.status).toBe(202);
    expect(held.headers.get('content-type')).toContain('application/problem+json');
    const id = held.body.approval_id as string;
    expect(held.body).toMatchObject({
      code: 'approval_required',
      status: 202,
      approval_id: expect.stringMatching(/^apr_/),
      approval_url: `${ctx.config.publicUrl}/console/approvals/${id}`,
      expires_at: expect.any(String),
    });
    expect(posted()).toHaveLength(before);
    // A tool no policy holds runs as before.
    expect(
      (await execute(base, u.headers, sid, { service: svc.name, tool: 'get_item', arguments: { id: '1' } })).status,
    ).toBe(200);

    const { body: approval } = await call(app, { method: 'GET', url: `/v1/approvals/${id}`, headers: u.headers }, 200);
    expect(approval).toMatchObject({ status: 'pending', tool_name: 'create_item', arguments: { name: 'a' } });
    expect(approval.policy_ids).toHaveLength(1);
    await decide(id, 'approve');

    const other = await execute(base, u.headers, sid, {
      service: svc.name,
      tool: 'create_item',
      arguments: { name: 'b' },
      approval_id: id,
    });
    expect([other.status, other.body.code]).toEqual([409, 'approval_invalid']);
    const ran = await execute(base, u.headers, sid, {
      service: svc.name,
      tool: 'create_item',
      arguments: { name: 'a' },
      approval_id: id,
    });
    expect(ran.status).toBe(200);
    expect(ran.body).toMatchObject({ status: 'succeeded', http_status: 201, output: { created: { name: 'a' } } });
    expect(posted()).toHaveLength(before + 1);
    const again = await execute(base, u.headers, sid, {
      service: svc.name,
      tool: 'create_item',
      arguments: { name: 'a' },
      approval_id: id,
    });
    expect([again.status, again.body.code, again.body.approval_status]).toEqual([409, 'approval_invalid', 'used']);
    expect(posted()).toHaveLength(before + 1);

    const held2 = await execute(base, u.headers, sid, {
      service: svc.name,
      tool: 'create_item',
      arguments: { name: 'c' },
    });
    await decide(held2.body.approval_id, 'deny', { reason: 'no more items' });
    const denied = await execute(base, u.headers, sid, {
      service: svc.name,
      tool: 'create_item',
      arguments: { name: 'c' },
      approval_id: held2.body.approval_id,
    });
    expect([denied.status, denied.body.code, denied.body.reason]).toEqual([403, 'approval_denied', 'no more items']);
    expect(posted()).toHaveLength(before + 1);
  });

  it('MCP without URL elicitation: a text tool error with the URL and the retry hint; execute_tool retries with approval_id, an exposed tool with _meta', async () => {
    const t = await agentToken(app, agent);
    const mcp = await connectMcp(base, t.headers, { query: '?expose_tools=true' });
    try {
      const held = await mcp.call('execute_tool', {
        service: svc.name,
        tool: 'create_item',
        arguments: { name: 'm1' },
      });
      expect(held.isError).toBe(true);
      const id = held.structuredContent.approval_id as string;
      expect(held.structuredContent).toMatchObject({
        code: 'approval_required',
        status: 202,
        approval_url: expect.any(String),
      });
      const text = (held.content as Array<{ type: string; text: string }>)[0].text;
      expect(text).toContain(held.structuredContent.approval_url);
      expect(text).toContain(`"approval_id": "${id}"`);
      const { body } = await call(app, { method: 'GET', url: `/v1/approvals/${id}`, headers: u.headers }, 200);
      expect(body.agent_id).toBe(agent.id);
      await decide(id, 'approve');
      const ran = await mcp.call('execute_tool', {
        service: svc.name,
        tool: 'create_item',
        arguments: { name: 'm1' },
        approval_id: id,
      });
      expect(ran.isError).toBeFalsy();
      expect(ran.structuredContent).toMatchObject({ status: 'succeeded', output: { created: { name: 'm1' } } });

      const exposed = `${svc.name}__create_item`;
      const held2 = await mcp.call(exposed, { name: 'm2' });
      expect(held2.isError).toBe(true);
      const id2 = held2.structuredContent.approval_id as string;
      expect((held2.content as Array<{ text: string }>)[0].text).toContain(APPROVAL_META);
      await decide(id2, 'approve');
      const ran2 = await mcp.client.callTool({
        name: exposed,
        arguments: { name: 'm2' },
        _meta: { [APPROVAL_META]: id2 },
      });
      expect(ran2.isError).toBeFalsy();
      const again = await mcp.client.callTool({
        name: exposed,
        arguments: { name: 'm2' },
        _meta: { [APPROVAL_META]: id2 },
      });
      expect(again.isError).toBe(true);
      expect((again.structuredContent as { code: string }).code).toBe('approval_invalid');
    } finally {
      await mcp.close();
    }
  });

  it('MCP with URL elicitation: the -32042 error names the approval page; the same call retried after approval runs', async () => {
    const t = await agentToken(app, agent);
    const client = new Client(
      { name: 'url-elicitation-client', version: '1.0.0' },
      { capabilities: { elicitation: { url: {} } } },
    );
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: t.headers } }),
    );
    try {
      const args = { service: svc.name, tool: 'create_item', arguments: { name: 'e1' } };
      const err = await client.callTool({ name: 'execute_tool', arguments: args }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(UrlElicitationRequiredError);
      const [elicitation] = (err as UrlElicitationRequiredError).elicitations;
      expect(elicitation).toMatchObject({
        mode: 'url',
        elicitationId: expect.stringMatching(/^apr_/),
        url: `${ctx.config.publicUrl}/console/approvals/${elicitation.elicitationId}`,
      });
      await decide(elicitation.elicitationId, 'approve');
      const ran = await client.callTool({ name: 'execute_tool', arguments: args });
      expect(ran.isError).toBeFalsy();
      expect(ran.structuredContent).toMatchObject({ status: 'succeeded', output: { created: { name: 'e1' } } });
    } finally {
      await client.close();
    }
  });

  it('a deployed agent catches approval_required with its id, or waits for the decision and then runs the call', async () => {
    const dep = await deployReady(app, u.headers, agent.id, await tarball({ 'index.mjs': HANDLER }));
    expect(dep.status).toBe('active');
    const invoke = async (input: unknown, timeout_ms = 10_000) =>
      (
        await call(
          app,
          { method: 'POST', url: `/v2/agents/${agent.id}/invoke`, headers: u.headers, payload: { input, timeout_ms } },
          200,
        )
      ).body;

    const caught = await invoke({ service: svc.name, args: { name: 'd1' } });
    expect(caught.output).toMatchObject({
      name: 'PlatformError',
      code: 'approval_required',
      status: 202,
      approvalId: expect.stringMatching(/^apr_/),
      approvalUrl: expect.stringContaining('/console/approvals/'),
      expiresAt: expect.any(String),
    });

    // Waits up to the deadline: no decision in time → the same catchable error.
    const timedOut = await invoke(
      { service: svc.name, args: { name: 'd2' }, options: { waitForApproval: true } },
      2_000,
    );
    expect(timedOut.output).toMatchObject({ code: 'approval_required', approvalId: expect.stringMatching(/^apr_/) });

    const before = posted().length;
    const waiting = invoke({ service: svc.name, args: { name: 'd3' }, options: { waitForApproval: true } }, 20_000);
    const pending = await waitFor(
      async () => {
        const { body } = await call(
          app,
          { method: 'GET', url: '/v1/approvals?status=pending', headers: u.headers },
          200,
        );
        return body.data.find((a: { arguments: { name?: string } }) => a.arguments.name === 'd3');
      },
      10_000,
      'the pending approval of d3',
    );
    expect(pending.agent_id).toBe(agent.id);
    await decide(pending.id, 'approve');
    const done = await waiting;
    expect(done.output).toEqual({
      ran: 'succeeded',
      output: { created: { name: 'd3' }, content_type: 'application/json' },
    });
    expect(posted()).toHaveLength(before + 1);
    expect(done.calls.map((c: { op: string }) => c.op)).toContain('approvals.get');
  }, 60_000);

  it('keys: a default key cannot decide, and the key that made a held call never decides it', async () => {
    const sid = await newSession(base, u.headers);
    const keyed = async (payload: Record<string, unknown>) =>
      (
        await call(
          app,
          { method: 'POST', url: '/api-keys', headers: u.headers, payload: { name: 'k', ...payload } },
          201,
        )
      ).body;
    // What agent code holds: a key made without scopes has every scope but approvals:decide.
    const plain = await keyed({});
    expect(plain.scopes).not.toContain('approvals:decide');
    expect(plain.scopes).toContain('tools:execute');
    // A key that asked for every scope by name, approvals:decide included.
    const all = await keyed({ scopes: [...plain.scopes, 'approvals:decide'] });
    const approve = (id: string, headers: Record<string, string>, status: number) =>
      call(app, { method: 'POST', url: `/v1/approvals/${id}/approve`, headers, payload: {} }, status);

    const held = await execute(base, { 'x-api-key': plain.key }, sid, {
      service: svc.name,
      tool: 'create_item',
      arguments: { name: 'k1' },
    });
    expect(held.status).toBe(202);
    // The answer tells the caller where a person decides, not how to approve it itself.
    expect(held.body.detail).toContain(held.body.approval_url);
    expect(held.body.detail).not.toContain('/approve');
    expect((await approve(held.body.approval_id, { 'x-api-key': plain.key }, 403)).body.code).toBe(
      'insufficient_scope',
    );

    const own = await execute(base, { 'x-api-key': all.key }, sid, {
      service: svc.name,
      tool: 'create_item',
      arguments: { name: 'k2' },
    });
    expect(own.status).toBe(202);
    const refused = await approve(own.body.approval_id, { 'x-api-key': all.key }, 403);
    expect(refused.body.code).toBe('forbidden');
    const { body: still } = await call(
      app,
      { method: 'GET', url: `/v1/approvals/${own.body.approval_id}`, headers: u.headers },
      200,
    );
    expect([still.status, still.decided_by]).toEqual(['pending', null]);

    // Another credential decides: the all-scopes key another key's call, the user's token its own.
    expect((await approve(held.body.approval_id, { 'x-api-key': all.key }, 200)).body.status).toBe('approved');
    await decide(own.body.approval_id, 'approve');
    const before = posted().length;
    const ran = await execute(base, { 'x-api-key': all.key }, sid, {
      service: svc.name,
      tool: 'create_item',
      arguments: { name: 'k2' },
      approval_id: own.body.approval_id,
    });
    expect(ran.status).toBe(200);
    expect(posted()).toHaveLength(before + 1);
  });
});
