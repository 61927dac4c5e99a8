/** Executions by agent principals (client_credentials tokens) for their owner's account. */
import { describe, expect, it } from 'vitest';
import { topTools } from '../../src/modules/sessions/service.js';
import { agentToken, createAgent } from '../helpers/agents.js';
import { createUser, setupApp } from '../helpers/app.js';
import { execute, expectHttp, listen, newSession, publish, registerService, subscribe } from '../helpers/exec.js';
import { startToolUpstream } from '../helpers/tool-upstream.js';

const { app, ctx } = await setupApp({ QUOTA_FREE_DAY: '20' });
const base = await listen(app);

describe('execute — agents', () => {
  it("needs the agent's own tool subscription and counts the owner's quota", async () => {
    const upstream = await startToolUpstream();
    const provider = await createUser(app);
    const owner = await createUser(app);
    const svc = await registerService(base, provider, {
      name: `agt-${Date.now().toString(36)}`,
      description: 'for agents',
      base_url: upstream.url,
      tools: [{ name: 'fast', description: 'fast', method: 'GET', path: '/fast', input_schema: { type: 'object' } }],
    });
    await publish(ctx, svc.id);
    const sub = await subscribe(base, owner, svc.id);
    const agent = await createAgent(app, owner);
    const { headers } = await agentToken(app, agent);
    const sid = await newSession(base, headers);

    const before = upstream.seen.length;
    const refused = await execute(base, headers, sid, { service: svc.name, tool: 'fast' });
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('not_subscribed');
    expect(upstream.seen.length).toBe(before);

    await expectHttp(base, 'POST', `/v2/agents/${agent.id}/tools/subscribe`, 201, {
      headers: owner.headers,
      body: { service: svc.name },
    });
    const ok = await execute(base, headers, sid, { service: svc.name, tool: 'fast' });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('x-quota-remaining')).toBe('19');
    const { body: q } = await expectHttp(base, 'GET', `/subscriptions/${sub.id}/quotas`, 200, {
      headers: owner.headers,
    });
    expect(q.windows[0].used).toBe(1);

    // The owner sees the execution, attributed to the agent; usage counters carry the agent id.
    const { body: s } = await expectHttp(base, 'GET', `/v1/agents/${sid}`, 200, { headers: owner.headers });
    expect(s.agent_id).toBe(agent.id);
    expect(s.executions[0]).toMatchObject({ agent_id: agent.id, status: 'succeeded' });
    const top = await topTools(ctx, { agentId: agent.id });
    expect(top).toEqual([expect.objectContaining({ service_id: svc.id, tool_name: 'fast', calls: 1, successes: 1 })]);

    // Unsubscribing the agent stops it at once (the execution path caches subscription answers).
    await expectHttp(base, 'DELETE', `/v2/agents/${agent.id}/tools/unsubscribe?service=${svc.name}`, 204, {
      headers: owner.headers,
    });
    expect((await execute(base, headers, sid, { service: svc.name, tool: 'fast' })).status).toBe(403);
    await expectHttp(base, 'POST', `/v2/agents/${agent.id}/tools/subscribe`, 201, {
      headers: owner.headers,
      body: { service: svc.name },
    });
    expect((await execute(base, headers, sid, { service: svc.name, tool: 'fast' })).status).toBe(200);

    // The owner's cancellation stops the agent too.
    await expectHttp(base, 'DELETE', `/subscriptions/${sub.id}`, 200, { headers: owner.headers });
    const after = await execute(base, headers, sid, { service: svc.name, tool: 'fast' });
    expect(after.status).toBe(403);
  });

  it("lets a user execute in its agent's session (executions carry the agent id)", async () => {
    const upstream = await startToolUpstream();
    const owner = await createUser(app);
    const agent = await createAgent(app, owner);
    const svc = await registerService(base, owner, {
      name: `agt-own-${Date.now().toString(36)}`,
      description: 'own',
      base_url: upstream.url,
      tools: [{ name: 'fast', description: 'fast', method: 'GET', path: '/fast', input_schema: { type: 'object' } }],
    });
    const sid = await newSession(base, owner.headers, { agent_id: agent.id });
    const a = await execute(base, owner.headers, sid, { service: svc.name, tool: 'fast' });
    expect(a.status).toBe(200);
    const { body: s } = await expectHttp(base, 'GET', `/v1/agents/${sid}`, 200, { headers: owner.headers });
    expect(s.executions[0].agent_id).toBe(agent.id);
  });

  it('refuses an agent token without the tools:execute scope (403 insufficient_scope), sending nothing upstream', async () => {
    const upstream = await startToolUpstream();
    const owner = await createUser(app);
    const agent = await createAgent(app, owner);
    const svc = await registerService(base, owner, {
      name: `agt-scope-${Date.now().toString(36)}`,
      description: 'own',
      base_url: upstream.url,
      tools: [{ name: 'fast', description: 'fast', method: 'GET', path: '/fast', input_schema: { type: 'object' } }],
    });
    await expectHttp(base, 'POST', `/v2/agents/${agent.id}/tools/subscribe`, 201, {
      headers: owner.headers,
      body: { service: svc.name },
    });
    const readOnly = await agentToken(app, agent, 'memory:read');
    const sid = await newSession(base, readOnly.headers);
    const refused = await execute(base, readOnly.headers, sid, { service: svc.name, tool: 'fast' });
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('insufficient_scope');
    expect(upstream.seen.length).toBe(0);
    const full = await agentToken(app, agent, 'tools:execute');
    const ok = await execute(base, full.headers, sid, { service: svc.name, tool: 'fast' });
    expect(ok.status).toBe(200);
  });
});
