/**
 * The agent runtime end to end (issue 14): handlers that act through the platform as their agent
 * (tools, KV memory with ETags, user memory, structured logs), warm environments across
 * invocations, and live logs over SSE.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createUser, setupApp, type TestUser } from '../../helpers/app.js';
import { startToolUpstream, type ToolUpstream } from '../../helpers/tool-upstream.js';
import { listen } from '../../helpers/exec.js';
import { createAgent, deployedToolAgent, deployReady, tarball, waitFor } from './fixtures.js';

const HANDLER = `
let invocations = 0;
export default async function (input, context) {
  invocations++;
  switch (input.op) {
    case 'tool': return context.tools.execute(input.service, input.tool, input.args);
    case 'tool-refused':
      try { await context.tools.execute(input.service, 'create_item', {}); return 'not refused'; }
      catch (e) { return { name: e.name, code: e.code, status: e.status, message: e.message }; }
    case 'search': return context.tools.search(input.q);
    case 'kv': {
      const a = await context.memory.put('k', { n: 1 });
      const got = await context.memory.get('k');
      const b = await context.memory.put('k', { n: 2 }, { if_match: a.etag });
      let conflict;
      try { await context.memory.put('k', { n: 3 }, { if_match: a.etag }); } catch (e) { conflict = { code: e.code, status: e.status }; }
      const list = await context.memory.list({ prefix: 'k' });
      await context.memory.delete('k', { if_match: b.etag });
      let missing;
      try { await context.memory.get('k'); } catch (e) { missing = e.code; }
      return { created: a.created, first: got.value, etags: [a.etag, b.etag], conflict, listed: list.data.map((e) => e.key), missing };
    }
    case 'user-memory': {
      await context.userMemory.add('The deploy window is Tuesday at noon');
      return context.userMemory.search('deploy window Tuesday', { threshold: 0 });
    }
    case 'log':
      context.log.info('starting', { step: 1 });
      console.log('plain line');
      context.log.warn('careful');
      return 'logged';
    case 'slow-log':
      console.log('first');
      await new Promise((r) => setTimeout(r, 600));
      console.log('second');
      return 'done';
    case 'count': return invocations;
    case 'spy': {
      // Everything the code can observe: its environment, argv, context, and the raw replies on stdin.
      const raw = [];
      const listener = (c) => raw.push(String(c));
      process.stdin.on('data', listener);
      await context.memory.put('spy', 1);
      await context.tools.execute(input.service, 'get_item', { id: '1' });
      await context.tools.search('item');
      process.stdin.off('data', listener);
      return { env: process.env, argv: process.argv, context: Object.keys(context), ctx: JSON.stringify(context), raw };
    }
    default: return null;
  }
}
`;

let app: FastifyInstance;
let sealed = false;
let base: string;
let u: TestUser;
let agentId: string;
let upstream: ToolUpstream;
let svc: { id: string; name: string };

beforeAll(async () => {
  let config;
  ({ app, config } = await setupApp());
  sealed = config.sandbox.isolation === 'bwrap';
  base = await listen(app);
  u = await createUser(app);
  upstream = await startToolUpstream();
  const { body } = await call(
    app,
    {
      method: 'POST',
      url: '/owner/services',
      headers: u.headers,
      payload: {
        name: `rt-${Date.now()}`,
        display_name: 'Items',
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
  agentId = (await deployedToolAgent(app, u, svc.name, HANDLER)).id;
}, 180_000);

afterAll(async () => {
  await upstream?.close();
  await app?.close();
});

const invoke = async (input: unknown) =>
  (
    await call(
      app,
      { method: 'POST', url: `/v2/agents/${agentId}/invoke`, headers: u.headers, payload: { input } },
      200,
    )
  ).body;

describe('agent runtime', () => {
  it('executes a subscribed tool as the agent, recorded in the invocation and in a session', async () => {
    const inv = await invoke({ op: 'tool', service: svc.name, tool: 'get_item', args: { id: '42' } });
    expect(inv.status).toBe('succeeded');
    expect(inv.output).toMatchObject({
      status: 'succeeded',
      http_status: 200,
      output: { id: '42' },
      execution_id: expect.stringMatching(/^exe_/),
    });
    expect(inv.calls).toEqual([
      expect.objectContaining({
        op: 'tools.execute',
        target: `${svc.name}/get_item`,
        status: 'ok',
        execution_id: inv.output.execution_id,
        duration_ms: expect.any(Number),
      }),
    ]);
    expect(upstream.seenAt('/items/42')).toHaveLength(1);
    // The execution is the agent's, in the invocation's session.
    const { body: sessions } = await call(
      app,
      { method: 'GET', url: '/v1/sessions?limit=50', headers: u.headers },
      200,
    );
    const s = sessions.data.find((x: any) => x.metadata?.invocation_id === inv.id);
    expect(s).toMatchObject({ agent_id: agentId, execution_count: 1 });
  });

  it('a tool the agent is not subscribed to is refused with a normal, catchable error', async () => {
    const other = await createUser(app);
    const { body } = await call(
      app,
      {
        method: 'POST',
        url: '/owner/services',
        headers: other.headers,
        payload: {
          name: `rt-o-${Date.now()}`,
          display_name: 'O',
          description: 'o',
          base_url: upstream.url,
          tools: [
            { name: 'create_item', description: 'c', method: 'POST', path: '/items', input_schema: { type: 'object' } },
          ],
        },
      },
      201,
    );
    const inv = await invoke({ op: 'tool-refused', service: body.name });
    expect(inv.status).toBe('succeeded');
    expect(inv.output).toMatchObject({ name: 'PlatformError', code: 'not_found', status: 404 });
    // The owner's own service, without an agent subscription: 403 not_subscribed.
    const { body: mine } = await call(
      app,
      {
        method: 'POST',
        url: '/owner/services',
        headers: u.headers,
        payload: {
          name: `rt-u-${Date.now()}`,
          display_name: 'U',
          description: 'u',
          base_url: upstream.url,
          tools: [
            { name: 'create_item', description: 'c', method: 'POST', path: '/items', input_schema: { type: 'object' } },
          ],
        },
      },
      201,
    );
    const unsub = await invoke({ op: 'tool-refused', service: mine.name });
    expect(unsub.output).toMatchObject({ name: 'PlatformError', code: 'not_subscribed', status: 403 });
    expect(unsub.calls).toEqual([
      expect.objectContaining({ op: 'tools.execute', status: 'error', error: 'not_subscribed' }),
    ]);
    const own = await invoke({ op: 'tool-refused', service: svc.name });
    // create_item of its own subscribed service is allowed: proves the refusal above is about the service.
    expect(own.output).toBe('not refused');
  });

  it('KV memory: put/get/list/delete with ETags; a stale If-Match is a 412 conflict', async () => {
    const inv = await invoke({ op: 'kv' });
    expect(inv.status).toBe('succeeded');
    expect(inv.output).toEqual({
      created: true,
      first: { n: 1 },
      etags: ['"1"', '"2"'],
      conflict: { code: 'precondition_failed', status: 412 },
      listed: ['k'],
      missing: 'not_found',
    });
    expect(inv.calls.map((c: any) => `${c.op}:${c.status}`)).toEqual([
      'memory.put:ok',
      'memory.get:ok',
      'memory.put:ok',
      'memory.put:error',
      'memory.list:ok',
      'memory.delete:ok',
      'memory.get:error',
    ]);
  });

  it("adds to and searches the owner's memory", async () => {
    const inv = await invoke({ op: 'user-memory' });
    expect(inv.status).toBe('succeeded');
    expect(inv.output.data?.[0] ?? inv.output.results?.[0]).toMatchObject({
      content: 'The deploy window is Tuesday at noon',
    });
    const { body } = await call(app, { method: 'GET', url: '/memory?limit=50', headers: u.headers }, 200);
    expect(
      body.data.some((m: any) => m.content === 'The deploy window is Tuesday at noon' && m.agent_id === agentId),
    ).toBe(true);
  });

  it('structured context.log lines sit beside stdout in the logs', async () => {
    const inv = await invoke({ op: 'log' });
    // Lines of one stream keep their order; across streams they are ordered as the host received them.
    expect(inv.logs.filter((l: any) => l.stream === 'platform')).toEqual([
      expect.objectContaining({ level: 'info', message: 'starting', fields: { step: 1 } }),
      expect.objectContaining({ level: 'warn', message: 'careful' }),
    ]);
    expect(inv.logs.filter((l: any) => l.stream === 'stdout')).toEqual([
      expect.objectContaining({ message: 'plain line' }),
    ]);
  });

  it('keeps module state across warm invocations; reports cold and warm starts', async () => {
    const a = await invoke({ op: 'count' });
    const b = await invoke({ op: 'count' });
    expect(b.output).toBe(a.output + 1);
    expect(b.cold).toBe(false);
    const { body: list } = await call(
      app,
      { method: 'GET', url: `/v2/agents/${agentId}/executions?limit=100`, headers: u.headers },
      200,
    );
    expect(list.data.filter((x: any) => x.cold === true).length).toBeGreaterThanOrEqual(1);
    // A redeploy drains the environments: the next invocation starts fresh.
    await call(
      app,
      { method: 'POST', url: `/v2/agents/${agentId}/deployments/redeploy`, headers: u.headers, payload: {} },
      202,
    );
    for (let i = 0; i < 400; i++) {
      const { body } = await call(
        app,
        { method: 'GET', url: `/v2/agents/${agentId}/deployments`, headers: u.headers },
        200,
      );
      if (body.data[0].status === 'active') break;
      await new Promise((r) => setTimeout(r, 25));
    }
    const c = await invoke({ op: 'count' });
    expect(c).toMatchObject({ cold: true, output: 1 });
  });

  it('a synchronous invocation is stored when it ends, or as running once it outlasts SANDBOX_RECORD_DEFER_MS', async () => {
    // Short: one write when it ends, readable at once after the answer.
    const short = await invoke({ op: 'count' });
    const { body: stored } = await call(
      app,
      { method: 'GET', url: `/v2/agents/${agentId}/executions/${short.id}`, headers: u.headers },
      200,
    );
    expect(stored).toMatchObject({ id: short.id, status: 'succeeded', output: short.output });
    // Long (600 ms > 100 ms): visible as running while it runs, then updated with its outcome.
    const pending = invoke({ op: 'slow-log' });
    const running = await waitFor(
      async () => {
        const { body } = await call(
          app,
          { method: 'GET', url: `/v2/agents/${agentId}/executions?limit=5`, headers: u.headers },
          200,
        );
        return body.data.find((x: any) => x.status === 'running');
      },
      10_000,
      'a running invocation record',
    );
    const done = await pending;
    expect(done.id).toBe(running.id);
    expect(done.status).toBe('succeeded');
    const { body: after } = await call(
      app,
      { method: 'GET', url: `/v2/agents/${agentId}/executions/${done.id}`, headers: u.headers },
      200,
    );
    expect(after).toMatchObject({ status: 'succeeded', output: 'done', finished_at: expect.any(String) });
  });

  it('follows a running invocation as Server-Sent Events until it ends; the agent tail sees it too', async () => {
    const tail = await fetch(`${base}/v2/agents/${agentId}/logs?follow=true`, { headers: u.headers });
    expect(tail.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const { body: queued } = await call(
      app,
      {
        method: 'POST',
        url: `/v2/agents/${agentId}/invoke?async=true`,
        headers: u.headers,
        payload: { input: { op: 'slow-log' } },
      },
      202,
    );
    const res = await fetch(`${base}/v2/agents/${agentId}/executions/${queued.id}/logs?follow=true`, {
      headers: u.headers,
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    const events = text.split('\n\n').filter((b) => b.startsWith('id:') || b.startsWith('event:'));
    expect(events.map((e) => /event: (\w+)/.exec(e)?.[1])).toEqual(['log', 'log', 'end']);
    expect(text).toContain('"message":"first"');
    expect(text).toContain('"status":"succeeded"');
    const reader = tail.body!.getReader();
    let seen = '';
    while (!seen.includes('event: end')) seen += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    expect(seen).toContain(`"invocation_id":"${queued.id}"`);
    // Finished: the JSON form and an immediately ending stream.
    const { body: lines } = await call(
      app,
      { method: 'GET', url: `/v2/agents/${agentId}/executions/${queued.id}/logs`, headers: u.headers },
      200,
    );
    expect(lines.data.map((l: any) => l.message)).toEqual(['first', 'second']);
  });
});

describe('agent runtime security', () => {
  it('the agent identity never reaches the code: not in env, argv, context or the messages it can read', async () => {
    const inv = await invoke({ op: 'spy', service: svc.name });
    expect(inv.status).toBe('succeeded');
    const seen = JSON.stringify(inv.output);
    expect(inv.output.raw.join('')).toContain('"t":"reply"');
    for (const secret of [
      /eyJ[\w-]+\.[\w-]+/,
      /bearer/i,
      /invocation:inv_/,
      /client_?id/i,
      /scope/i,
      /tools:execute/,
      new RegExp(u.userId),
      new RegExp(u.token.slice(0, 40)),
    ])
      expect(seen).not.toMatch(secret);
    // bwrap (SANDBOX_ISOLATION=bwrap, the default) sets PWD to the working directory, /app.
    expect(Object.keys(inv.output.env).sort()).toEqual(
      sealed ? ['LANG', 'NODE_ENV', 'PWD', 'TZ'] : ['LANG', 'NODE_ENV', 'TZ'],
    );
  });

  it("another account gets 404 on the agent's log routes, streamed or not", async () => {
    const other = await createUser(app);
    const { body: inv } = await call(
      app,
      { method: 'POST', url: `/v2/agents/${agentId}/invoke`, headers: u.headers, payload: { input: { op: 'count' } } },
      200,
    );
    for (const url of [
      `/v2/agents/${agentId}/logs`,
      `/v2/agents/${agentId}/logs?follow=true`,
      `/v2/agents/${agentId}/executions/${inv.id}/logs`,
      `/v2/agents/${agentId}/executions/${inv.id}/logs?follow=true`,
    ]) {
      await call(app, { method: 'GET', url, headers: other.headers }, 404);
      await call(app, { method: 'GET', url }, 401);
    }
  });

  it('a handler on another account cannot reach this agent: its calls run as its own agent only', async () => {
    const other = await createUser(app);
    const a2 = await createAgent(app, other);
    await deployReady(
      app,
      other.headers,
      a2.id,
      await tarball({
        'index.mjs': `export default async (i, c) => { try { return await c.memory.read(i.target, 'k'); } catch (e) { return e.code; } };`,
      }),
    );
    await invoke({ op: 'kv' });
    const { body } = await call(
      app,
      {
        method: 'POST',
        url: `/v2/agents/${a2.id}/invoke`,
        headers: other.headers,
        payload: { input: { target: agentId } },
      },
      200,
    );
    expect(['not_found', 'permission_required']).toContain(body.output);
  });
});
