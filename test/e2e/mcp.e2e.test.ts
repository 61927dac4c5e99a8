/**
 * The platform as an MCP server, end to end over real sockets with the SDK's own `Client` +
 * `StreamableHTTPClientTransport`: list, search, describe, execute a tool of a published service
 * backed by a real loopback upstream, quota, memory, agent tokens, API keys, sessions of other
 * accounts, exposure of subscribed tools with `notifications/tools/list_changed`.
 */
import { randomBytes } from 'node:crypto';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it } from 'vitest';
import { createUser, setupApp } from '../helpers/app.js';
import { agentToken, createAgent } from '../helpers/agents.js';
import { expectHttp, httpCall, listen, newSession, publish, registerService, subscribe } from '../helpers/exec.js';
import { connectMcp } from '../helpers/mcp.js';
import { startToolUpstream } from '../helpers/tool-upstream.js';

const { app, ctx } = await setupApp({ QUOTA_FREE_DAY: '3', QUOTA_FREE_MONTH: '1000', MCP_LIST_CHANGED_POLL_MS: '150' });
const base = await listen(app);
const upstream = await startToolUpstream();
afterAll(() => upstream.close());

const owner = await createUser(app);
const tag = randomBytes(3).toString('hex');
const svc = await registerService(base, owner, {
  name: `mcp-items-${tag}`,
  display_name: 'Item Store',
  description: 'Look up stored items by their identifier',
  category: 'data',
  base_url: upstream.url,
  tools: [
    {
      name: 'get_item',
      description: 'Fetch one inventory item by id',
      method: 'GET',
      path: '/items/{id}',
      input_schema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
    },
  ],
});
await publish(ctx, svc.id);

describe(`MCP server — users (${ctx.database.engine})`, () => {
  it('answers 401 with the resource metadata URL and serves RFC 9728 metadata', async () => {
    const res = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{}',
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(
      /^Bearer resource_metadata="http:\/\/localhost:\d+\/\.well-known\/oauth-protected-resource\/mcp", realm=/,
    );
    const { body } = await expectHttp(base, 'GET', '/.well-known/oauth-protected-resource/mcp', 200);
    expect(body).toMatchObject({
      resource: `${ctx.config.publicUrl}/mcp`,
      authorization_servers: [`${ctx.config.publicUrl}/idp`],
      bearer_methods_supported: ['header'],
    });
    const root = await expectHttp(base, 'GET', '/.well-known/oauth-protected-resource', 200);
    expect(root.body).toEqual(body);
  });

  it('lists, searches, describes and executes a tool; the connection gets one platform session named after the client', async () => {
    const user = await createUser(app);
    await subscribe(base, user, svc.id);
    const mcp = await connectMcp(base, user.headers, { name: 'Claude Test Client' });
    try {
      expect(mcp.client.getServerVersion()).toMatchObject({ name: 'agent-platform' });
      expect(mcp.transport.sessionId).toMatch(/^mcs_/);
      const { tools } = await mcp.client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual([
        'describe_tool',
        'execute_tool',
        'recall',
        'remember',
        'search_tools',
      ]);
      expect(tools.find((t) => t.name === 'execute_tool')!.inputSchema).toMatchObject({
        type: 'object',
        required: ['service', 'tool'],
      });

      const found = await mcp.call('search_tools', { query: 'inventory item', limit: 5 });
      expect(found.isError).toBeFalsy();
      const hit = found.structuredContent.tools.find((t: any) => t.service === svc.name);
      expect(hit).toMatchObject({
        name: 'get_item',
        description: 'Fetch one inventory item by id',
        input_schema: { required: ['id'] },
      });
      expect(JSON.parse((found.content[0] as { text: string }).text)).toEqual(found.structuredContent);

      const described = await mcp.call('describe_tool', { service: svc.name, tool: 'get_item' });
      expect(described.structuredContent).toMatchObject({
        name: 'get_item',
        method: 'GET',
        service: { name: svc.name, display_name: 'Item Store' },
      });

      const run = await mcp.call('execute_tool', { service: svc.name, tool: 'get_item', arguments: { id: 'abc' } });
      expect(run.isError).toBeFalsy();
      expect(run.structuredContent).toMatchObject({ status: 'succeeded', http_status: 200, output: { id: 'abc' } });
      expect(upstream.seenAt('/items/abc')).toHaveLength(1);
      const sid = run.structuredContent.session_id;
      const again = await mcp.call('execute_tool', { service: svc.name, tool: 'get_item', arguments: { id: 'def' } });
      expect(again.structuredContent.session_id).toBe(sid);
      const { body: session } = await expectHttp(base, 'GET', `/v1/agents/${sid}`, 200, { headers: user.headers });
      expect(session).toMatchObject({ name: 'Claude Test Client', execution_count: 2 });
    } finally {
      await mcp.close();
    }
  });

  it('turns platform problems into tool errors and unknown tools into JSON-RPC errors', async () => {
    const user = await createUser(app);
    const mcp = await connectMcp(base, user.headers);
    try {
      const unsubscribed = await mcp.call('execute_tool', {
        service: svc.name,
        tool: 'get_item',
        arguments: { id: 'x' },
      });
      expect(unsubscribed.isError).toBe(true);
      expect(unsubscribed.structuredContent).toMatchObject({ code: 'not_subscribed', status: 403 });
      expect((unsubscribed.content[0] as { text: string }).text).toMatch(/^not_subscribed: /);

      const bad = await mcp.call('execute_tool', { service: svc.name });
      expect(bad.isError).toBe(true);
      expect(bad.structuredContent).toMatchObject({ code: 'validation_failed', errors: [{ pointer: '/tool' }] });

      const missing = await mcp.call('describe_tool', { service: svc.name, tool: 'nope' });
      expect(missing.structuredContent).toMatchObject({ code: 'not_found', status: 404 });

      await expect(mcp.call('no_such_tool', {})).rejects.toThrow(/Unknown tool: no_such_tool/);
      await expect(mcp.call('memory_get', { key: 'k' })).rejects.toThrow(/Unknown tool/);
    } finally {
      await mcp.close();
    }
  });

  it('surfaces the quota (429) as a tool error with its retry time, and does not call the upstream', async () => {
    const user = await createUser(app);
    await subscribe(base, user, svc.id);
    const mcp = await connectMcp(base, user.headers);
    try {
      for (let i = 0; i < 3; i++)
        expect(
          (await mcp.call('execute_tool', { service: svc.name, tool: 'get_item', arguments: { id: `q${tag}${i}` } }))
            .isError,
        ).toBeFalsy();
      const over = await mcp.call('execute_tool', {
        service: svc.name,
        tool: 'get_item',
        arguments: { id: `q${tag}x` },
      });
      expect(over.isError).toBe(true);
      expect(over.structuredContent).toMatchObject({ code: 'quota_exceeded', status: 429 });
      expect(over.structuredContent.retry_after_seconds).toBeGreaterThan(0);
      expect(upstream.seenAt(`/items/q${tag}x`)).toHaveLength(0);
    } finally {
      await mcp.close();
    }
  });

  it('remembers and recalls in the user memory, with an API key as well', async () => {
    const user = await createUser(app);
    const { body: key } = await expectHttp(base, 'POST', '/api-keys', 201, {
      headers: user.headers,
      body: { name: 'mcp' },
    });
    const mcp = await connectMcp(base, { 'x-api-key': key.key });
    try {
      const stored = await mcp.call('remember', {
        content: 'The staging database password rotates every Tuesday',
        metadata: { topic: 'ops' },
      });
      expect(stored.isError).toBeFalsy();
      expect(stored.structuredContent).toMatchObject({
        content: 'The staging database password rotates every Tuesday',
        metadata: { topic: 'ops' },
      });
      const found = await mcp.call('recall', { query: 'when does the staging password rotate', limit: 3 });
      expect(found.structuredContent.memories[0]).toMatchObject({ id: stored.structuredContent.id });
      const { body: list } = await expectHttp(base, 'GET', '/memory', 200, { headers: user.headers });
      expect(list.data.map((m: any) => m.id)).toContain(stored.structuredContent.id);
      const blank = await mcp.call('remember', { content: '   ' });
      expect(blank.structuredContent).toMatchObject({ code: 'validation_failed' });
    } finally {
      await mcp.close();
    }
  });

  it("refuses another account's session id and another account's MCP session", async () => {
    const alice = await createUser(app);
    const bob = await createUser(app);
    await subscribe(base, bob, svc.id);
    const aliceSession = await newSession(base, alice.headers);
    const bobMcp = await connectMcp(base, bob.headers);
    const aliceMcp = await connectMcp(base, alice.headers);
    try {
      const res = await bobMcp.call('execute_tool', {
        service: svc.name,
        tool: 'get_item',
        arguments: { id: 'steal' },
        session_id: aliceSession,
      });
      expect(res.structuredContent).toMatchObject({ code: 'not_found', status: 404 });
      expect(upstream.seenAt('/items/steal')).toHaveLength(0);

      // Bob presenting Alice's Mcp-Session-Id: 404, as for an unknown session.
      const hijack = await httpCall(base, 'POST', '/mcp', {
        headers: {
          ...bob.headers,
          accept: 'application/json, text/event-stream',
          'mcp-session-id': aliceMcp.transport.sessionId!,
          'mcp-protocol-version': '2025-06-18',
        },
        body: { jsonrpc: '2.0', id: 7, method: 'tools/list', params: {} },
      });
      expect(hijack.status).toBe(404);
      expect(hijack.body).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: -32001 } });
      const del = await httpCall(base, 'DELETE', '/mcp', {
        headers: { ...bob.headers, 'mcp-session-id': aliceMcp.transport.sessionId! },
      });
      expect(del.status).toBe(404);
      expect((await aliceMcp.client.listTools()).tools.length).toBeGreaterThan(0);
    } finally {
      await bobMcp.close();
      await aliceMcp.close();
    }
  });

  it('ends a session with DELETE (its platform session is closed)', async () => {
    const user = await createUser(app);
    await subscribe(base, user, svc.id);
    const mcp = await connectMcp(base, user.headers);
    const run = await mcp.call('execute_tool', { service: svc.name, tool: 'get_item', arguments: { id: 'z' } });
    const sessionId = mcp.transport.sessionId!;
    await mcp.transport.terminateSession();
    await mcp.close();
    const after = await httpCall(base, 'POST', '/mcp', {
      headers: {
        ...user.headers,
        accept: 'application/json, text/event-stream',
        'mcp-session-id': sessionId,
        'mcp-protocol-version': '2025-06-18',
      },
      body: { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} },
    });
    expect(after.status).toBe(404);
    const { body: s } = await expectHttp(base, 'GET', `/v1/agents/${run.structuredContent.session_id}`, 200, {
      headers: user.headers,
    });
    expect(s.status).toBe('closed');
  });
});

describe(`MCP server — agents and exposed tools (${ctx.database.engine})`, () => {
  it('serves agent tokens: key/value memory tools, grants, and the agent subscription rule', async () => {
    const user = await createUser(app);
    await subscribe(base, user, svc.id);
    const agent = await createAgent(app, user);
    const other = await createAgent(app, user, { name: 'other agent' });
    const { headers } = await agentToken(app, agent);
    const mcp = await connectMcp(base, headers);
    try {
      const names = (await mcp.client.listTools()).tools.map((t) => t.name);
      expect(names).toEqual(
        expect.arrayContaining(['memory_get', 'memory_put', 'memory_delete', 'memory_list', 'execute_tool']),
      );

      expect((await mcp.call('memory_put', { key: 'plan', value: { step: 1 } })).structuredContent).toMatchObject({
        key: 'plan',
        version: 1,
        created: true,
      });
      expect((await mcp.call('memory_get', { key: 'plan' })).structuredContent).toMatchObject({ value: { step: 1 } });
      expect((await mcp.call('memory_list', {})).structuredContent.entries.map((e: any) => e.key)).toEqual(['plan']);
      expect((await mcp.call('memory_delete', { key: 'plan' })).isError).toBeFalsy();
      expect((await mcp.call('memory_get', { key: 'plan' })).structuredContent).toMatchObject({ code: 'not_found' });

      // Another agent's memory needs a grant (same rule and audit as REST).
      await expectHttp(base, 'PUT', `/v2/agents/${other.id}/memory/shared%2Fnote`, 201, {
        headers: user.headers,
        body: { value: 'hi' },
      });
      expect(
        (await mcp.call('memory_get', { key: 'shared/note', agent_id: other.id })).structuredContent,
      ).toMatchObject({ code: 'permission_required', status: 403 });
      await expectHttp(base, 'POST', `/v2/agents/${other.id}/permissions`, 201, {
        headers: user.headers,
        body: { grantee_agent_id: agent.id, access: 'read', key_prefix: 'shared/' },
      });
      expect(
        (await mcp.call('memory_get', { key: 'shared/note', agent_id: other.id })).structuredContent,
      ).toMatchObject({ key: 'shared/note', value: 'hi' });

      // The agent itself must be subscribed to the service, as over REST.
      const refused = await mcp.call('execute_tool', { service: svc.name, tool: 'get_item', arguments: { id: 'ag' } });
      expect(refused.structuredContent).toMatchObject({ code: 'not_subscribed' });
      await expectHttp(base, 'POST', `/v2/agents/${agent.id}/tools/subscribe`, 201, {
        headers: user.headers,
        body: { service: svc.name },
      });
      const ok = await mcp.call('execute_tool', { service: svc.name, tool: 'get_item', arguments: { id: 'ag' } });
      expect(ok.structuredContent).toMatchObject({ status: 'succeeded', output: { id: 'ag' } });
      const { body: s } = await expectHttp(base, 'GET', `/v1/agents/${ok.structuredContent.session_id}`, 200, {
        headers: user.headers,
      });
      expect(s.agent_id).toBe(agent.id);
    } finally {
      await mcp.close();
    }
  });

  it('an agent token without tools:execute gets a tool error; user tokens never see agent tools', async () => {
    const user = await createUser(app);
    const agent = await createAgent(app, user);
    const { headers } = await agentToken(app, agent, 'memory:read');
    const mcp = await connectMcp(base, headers);
    try {
      expect(
        (await mcp.call('execute_tool', { service: svc.name, tool: 'get_item', arguments: { id: 'x' } }))
          .structuredContent,
      ).toMatchObject({ code: 'insufficient_scope' });
      expect((await mcp.call('memory_put', { key: 'a', value: 1 })).structuredContent).toMatchObject({
        code: 'insufficient_scope',
      });
    } finally {
      await mcp.close();
    }
  });

  it('lists subscribed tools as <service>__<tool> and notifies tools/list_changed when subscriptions change', async () => {
    const user = await createUser(app);
    await subscribe(base, user, svc.id);
    const second = await registerService(base, owner, {
      name: `mcp-second-${tag}`,
      description: 'second',
      base_url: upstream.url,
      tools: [
        { name: 'fast', description: 'Fast answer', method: 'GET', path: '/fast', input_schema: { type: 'object' } },
      ],
    });
    await publish(ctx, second.id);
    const mcp = await connectMcp(base, user.headers, { query: '?expose_tools=true' });
    try {
      const exposed = `${svc.name}__get_item`;
      const { tools } = await mcp.client.listTools();
      expect(tools.find((t) => t.name === exposed)).toMatchObject({
        description: 'Fetch one inventory item by id',
        inputSchema: { type: 'object', required: ['id'] },
      });
      expect(tools.some((t) => t.name.startsWith(second.name))).toBe(false);
      const run = await mcp.call(exposed, { id: 'exp' });
      expect(run.structuredContent).toMatchObject({ status: 'succeeded', output: { id: 'exp' } });
      expect((await mcp.call(exposed, {})).structuredContent).toMatchObject({ code: 'validation_failed' });

      const changed = new Promise<void>((resolve) =>
        mcp.client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()),
      );
      // Let the GET stream open before the change.
      await new Promise((r) => setTimeout(r, 400));
      await subscribe(base, user, second.id);
      await changed;
      const after = (await mcp.client.listTools()).tools.map((t) => t.name);
      expect(after).toContain(`${second.name}__fast`);
    } finally {
      await mcp.close();
    }
  });
});
