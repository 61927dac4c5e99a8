import { describe, expect, it } from 'vitest';
import { agentToken, createAgent } from '../../helpers/agents.js';
import { call, createUser, setupApp } from '../../helpers/app.js';

const { app } = await setupApp();

describe('sessions — security', () => {
  it('needs authentication on every route', async () => {
    for (const [method, url] of [
      ['POST', '/v1/agents'],
      ['GET', '/v1/agents'],
      ['GET', '/v1/agents/ses_x'],
      ['POST', '/v1/agents/ses_x/execute'],
      ['GET', '/v1/sessions'],
      ['GET', '/v1/sessions/ses_x'],
      ['POST', '/v1/sessions/ses_x/close'],
    ] as const) {
      const res = await app.inject({ method, url, payload: method === 'POST' ? {} : undefined });
      expect(res.statusCode, `${method} ${url}`).toBe(401);
      expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
    }
  });

  it("hides another user's sessions (404, never 403), also from lists", async () => {
    const alice = await createUser(app);
    const bob = await createUser(app);
    const { body: s } = await call(
      app,
      { method: 'POST', url: '/v1/agents', headers: alice.headers, payload: { name: 'private' } },
      201,
    );
    await call(app, { method: 'GET', url: `/v1/agents/${s.id}`, headers: bob.headers }, 404);
    await call(app, { method: 'GET', url: `/v1/sessions/${s.id}`, headers: bob.headers }, 404);
    await call(app, { method: 'POST', url: `/v1/sessions/${s.id}/close`, headers: bob.headers }, 404);
    const { body } = await call(
      app,
      { method: 'POST', url: `/v1/agents/${s.id}/execute`, headers: bob.headers, payload: { service: 'x', tool: 'y' } },
      404,
    );
    expect(body.code).toBe('not_found');
    const { body: list } = await call(app, { method: 'GET', url: '/v1/agents', headers: bob.headers }, 200);
    expect(list.data.map((x: { id: string }) => x.id)).not.toContain(s.id);
    // Still active for its owner.
    const { body: mine } = await call(app, { method: 'GET', url: `/v1/agents/${s.id}`, headers: alice.headers }, 200);
    expect(mine.status).toBe('active');
  });

  it("refuses another user's agent as agent_id (404)", async () => {
    const alice = await createUser(app);
    const bob = await createUser(app);
    const bobsAgent = await createAgent(app, bob);
    await call(
      app,
      { method: 'POST', url: '/v1/agents', headers: alice.headers, payload: { agent_id: bobsAgent.id } },
      404,
    );
  });

  it("confines an agent to its own sessions of its owner's account", async () => {
    const u = await createUser(app);
    const a1 = await createAgent(app, u, { name: 'one' });
    const a2 = await createAgent(app, u, { name: 'two' });
    const t1 = await agentToken(app, a1);
    const t2 = await agentToken(app, a2);
    const { body: own } = await call(
      app,
      { method: 'POST', url: '/v1/agents', headers: u.headers, payload: { name: 'user only' } },
      201,
    );
    const { body: s1 } = await call(app, { method: 'POST', url: '/v1/agents', headers: t1.headers, payload: {} }, 201);
    // Agent two cannot see agent one's session nor the user's own sessions.
    await call(app, { method: 'GET', url: `/v1/agents/${s1.id}`, headers: t2.headers }, 404);
    await call(app, { method: 'GET', url: `/v1/agents/${own.id}`, headers: t1.headers }, 404);
    await call(app, { method: 'POST', url: `/v1/sessions/${s1.id}/close`, headers: t2.headers }, 404);
    const { body: l2 } = await call(app, { method: 'GET', url: '/v1/agents', headers: t2.headers }, 200);
    expect(l2.data).toEqual([]);
    // An agent cannot create sessions on behalf of another agent.
    const { body } = await call(
      app,
      { method: 'POST', url: '/v1/agents', headers: t1.headers, payload: { agent_id: a2.id } },
      403,
    );
    expect(body.code).toBe('forbidden');
    await call(app, { method: 'POST', url: '/v1/agents', headers: t1.headers, payload: { agent_id: a1.id } }, 201);
  });

  it("keeps another user's agent away from the user's sessions", async () => {
    const alice = await createUser(app);
    const bob = await createUser(app);
    const bobsAgent = await agentToken(app, await createAgent(app, bob));
    const { body: s } = await call(
      app,
      { method: 'POST', url: '/v1/agents', headers: alice.headers, payload: {} },
      201,
    );
    await call(app, { method: 'GET', url: `/v1/agents/${s.id}`, headers: bobsAgent.headers }, 404);
  });
});
