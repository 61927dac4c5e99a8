import { describe, expect, it } from 'vitest';
import { agentToken, createAgent } from '../../helpers/agents.js';
import { call, createUser, setupApp } from '../../helpers/app.js';

const { app } = await setupApp();

describe('sessions — happy paths', () => {
  it('creates, reads, lists and closes a session under /v1/agents and /v1/sessions', async () => {
    const u = await createUser(app);
    const { body: s } = await call(
      app,
      {
        method: 'POST',
        url: '/v1/agents',
        headers: u.headers,
        payload: { name: 'research', metadata: { topic: 'weather' } },
      },
      201,
    );
    expect(s).toMatchObject({
      name: 'research',
      agent_id: null,
      status: 'active',
      metadata: { topic: 'weather' },
      execution_count: 0,
      closed_at: null,
    });
    expect(s.id).toMatch(/^ses_[0-9a-z]{26}$/);
    expect(new Date(s.created_at).toISOString()).toBe(s.created_at);

    const { body: d } = await call(app, { method: 'GET', url: `/v1/agents/${s.id}`, headers: u.headers }, 200);
    expect(d).toEqual({ ...s, executions: [] });
    const { body: d2 } = await call(app, { method: 'GET', url: `/v1/sessions/${s.id}`, headers: u.headers }, 200);
    expect(d2).toEqual(d);

    const { body: closed } = await call(
      app,
      { method: 'POST', url: `/v1/sessions/${s.id}/close`, headers: u.headers },
      200,
    );
    expect(closed.status).toBe('closed');
    expect(closed.closed_at).toBeTruthy();
    // Closing twice answers the closed session unchanged.
    const { body: again } = await call(
      app,
      { method: 'POST', url: `/v1/sessions/${s.id}/close`, headers: u.headers },
      200,
    );
    expect(again.closed_at).toBe(closed.closed_at);
  });

  it('creates a session with defaults from an empty body', async () => {
    const u = await createUser(app);
    const { body } = await call(app, { method: 'POST', url: '/v1/agents', headers: u.headers, payload: {} }, 201);
    expect(body).toMatchObject({ name: null, agent_id: null, metadata: {}, status: 'active' });
  });

  it('lists newest first with cursor pagination and a status filter', async () => {
    const u = await createUser(app);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push(
        (await call(app, { method: 'POST', url: '/v1/agents', headers: u.headers, payload: { name: `s${i}` } }, 201))
          .body.id,
      );
    await call(app, { method: 'POST', url: `/v1/sessions/${ids[1]}/close`, headers: u.headers }, 200);

    const { body: p1 } = await call(app, { method: 'GET', url: '/v1/agents?limit=2', headers: u.headers }, 200);
    expect(p1.data.map((s: { id: string }) => s.id)).toEqual([ids[4], ids[3]]);
    expect(p1.next_cursor).toBeTruthy();
    const { body: p2 } = await call(
      app,
      { method: 'GET', url: `/v1/agents?limit=2&cursor=${p1.next_cursor}`, headers: u.headers },
      200,
    );
    expect(p2.data.map((s: { id: string }) => s.id)).toEqual([ids[2], ids[1]]);
    const { body: p3 } = await call(
      app,
      { method: 'GET', url: `/v1/agents?limit=2&cursor=${p2.next_cursor}`, headers: u.headers },
      200,
    );
    expect(p3.data.map((s: { id: string }) => s.id)).toEqual([ids[0]]);
    expect(p3.next_cursor).toBeNull();

    const { body: closed } = await call(
      app,
      { method: 'GET', url: '/v1/sessions?status=closed', headers: u.headers },
      200,
    );
    expect(closed.data.map((s: { id: string }) => s.id)).toEqual([ids[1]]);
    const { body: active } = await call(
      app,
      { method: 'GET', url: '/v1/sessions?status=active', headers: u.headers },
      200,
    );
    expect(active.data).toHaveLength(4);
    expect(active.data.every((s: { status: string }) => s.status === 'active')).toBe(true);
  });

  it('lets a user create a session for one of its agents, and an agent create its own', async () => {
    const u = await createUser(app);
    const agent = await createAgent(app, u);
    const { body: s1 } = await call(
      app,
      { method: 'POST', url: '/v1/agents', headers: u.headers, payload: { agent_id: agent.id } },
      201,
    );
    expect(s1.agent_id).toBe(agent.id);

    const { headers } = await agentToken(app, agent);
    const { body: s2 } = await call(
      app,
      { method: 'POST', url: '/v1/agents', headers, payload: { name: 'by agent' } },
      201,
    );
    expect(s2.agent_id).toBe(agent.id);

    // The agent sees the sessions carrying its id; the owner sees all of them.
    const { body: agentList } = await call(app, { method: 'GET', url: '/v1/agents', headers }, 200);
    expect(agentList.data.map((s: { id: string }) => s.id).sort()).toEqual([s1.id, s2.id].sort());
    await call(app, { method: 'GET', url: `/v1/agents/${s2.id}`, headers: u.headers }, 200);
    const { body: byAgent } = await call(
      app,
      { method: 'GET', url: `/v1/sessions?agent_id=${agent.id}`, headers: u.headers },
      200,
    );
    expect(byAgent.data).toHaveLength(2);
    // The agent may close its own session.
    const { body: closed } = await call(app, { method: 'POST', url: `/v1/sessions/${s2.id}/close`, headers }, 200);
    expect(closed.status).toBe('closed');
  });
});
