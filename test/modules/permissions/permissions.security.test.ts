import { describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { agentToken, createAgent } from '../../helpers/agents.js';

const { app } = await setupApp();

async function newAgent(owner?: Awaited<ReturnType<typeof createUser>>) {
  const a = await createAgent(app, owner ?? (await createUser(app)));
  return { ...a, ...(await agentToken(app, a)) };
}

describe('permissions — security', () => {
  it('only the owner user or the agent itself manages grants; other agents (even siblings) get 404', async () => {
    const owner = await createUser(app);
    const a = await newAgent(owner);
    const sibling = await newAgent(owner);
    const stranger = await newAgent();
    const { body: g } = await call(
      app,
      {
        method: 'POST',
        url: `/v2/agents/${a.id}/permissions`,
        headers: owner.headers,
        payload: { grantee_agent_id: sibling.id, access: 'read' },
      },
      201,
    );
    for (const headers of [sibling.headers, stranger.headers, stranger.owner.headers]) {
      for (const [method, url, payload] of [
        ['POST', `/v2/agents/${a.id}/permissions`, { grantee_agent_id: stranger.id, access: 'write' }],
        ['GET', `/v2/agents/${a.id}/permissions`],
        ['GET', `/v2/agents/${a.id}/grants`],
        ['DELETE', `/v2/agents/${a.id}/permissions/${g.id}`],
        ['GET', `/v2/agents/${a.id}/memory/audit`],
      ] as const) {
        const res = await app.inject({ method, url, headers, ...(payload ? { payload } : {}) });
        expect(res.statusCode, `${method} ${url}`).toBe(404);
      }
    }
    const { body } = await call(
      app,
      { method: 'GET', url: `/v2/agents/${a.id}/permissions`, headers: owner.headers },
      200,
    );
    expect(body.data.map((p: { id: string }) => p.id)).toEqual([g.id]);
  });

  it('siblings of one account still need a grant to read each other', async () => {
    const owner = await createUser(app);
    const a = await newAgent(owner);
    const b = await newAgent(owner);
    const { body } = await call(app, { method: 'GET', url: `/v2/agents/${a.id}/memory`, headers: b.headers }, 403);
    expect(body.code).toBe('permission_required');
  });

  it('audits refused cross-agent attempts', async () => {
    const a = await newAgent();
    const b = await newAgent();
    await call(app, { method: 'GET', url: `/v2/agents/${a.id}/memory?prefix=x`, headers: b.headers }, 403);
    await call(
      app,
      { method: 'PUT', url: `/v2/agents/${a.id}/memory/k`, headers: b.headers, payload: { value: 1 } },
      403,
    );
    const { body } = await call(
      app,
      { method: 'GET', url: `/v2/agents/${a.id}/memory/audit`, headers: a.owner.headers },
      200,
    );
    expect(body.data).toEqual([
      expect.objectContaining({
        actor_agent_id: b.id,
        action: 'write',
        outcome: 'denied',
        key: 'k',
        permission_id: null,
      }),
      expect.objectContaining({ actor_agent_id: b.id, action: 'read', outcome: 'denied', prefix: 'x' }),
    ]);
    await call(app, { method: 'GET', url: '/v2/memory/k', headers: a.headers }, 404);
  });

  it('scopes: granting needs permissions:manage, cross-agent reads need memory:read, writes memory:write', async () => {
    const a = await createAgent(app, await createUser(app));
    const b = await createAgent(app, await createUser(app));
    const aNoManage = await agentToken(app, a, 'memory:read memory:write');
    const { body: e } = await call(
      app,
      {
        method: 'POST',
        url: `/v2/agents/${a.id}/permissions`,
        headers: aNoManage.headers,
        payload: { grantee_agent_id: b.id, access: 'write' },
      },
      403,
    );
    expect(e.code).toBe('insufficient_scope');
    await call(
      app,
      {
        method: 'POST',
        url: `/v2/agents/${a.id}/permissions`,
        headers: a.owner.headers,
        payload: { grantee_agent_id: b.id, access: 'write' },
      },
      201,
    );
    const bWriteOnly = await agentToken(app, b, 'memory:write');
    const bReadOnly = await agentToken(app, b, 'memory:read');
    expect(
      (await app.inject({ method: 'GET', url: `/v2/agents/${a.id}/memory`, headers: bWriteOnly.headers })).json().code,
    ).toBe('insufficient_scope');
    expect(
      (
        await app.inject({
          method: 'PUT',
          url: `/v2/agents/${a.id}/memory/k`,
          headers: bReadOnly.headers,
          payload: { value: 1 },
        })
      ).json().code,
    ).toBe('insufficient_scope');
    await call(
      app,
      { method: 'PUT', url: `/v2/agents/${a.id}/memory/k`, headers: bWriteOnly.headers, payload: { value: 1 } },
      201,
    );
    await call(app, { method: 'GET', url: `/v2/agents/${a.id}/memory`, headers: bReadOnly.headers }, 200);
  });

  it('a deleted grantee loses access with its tokens', async () => {
    const a = await newAgent();
    const b = await newAgent();
    await call(
      app,
      {
        method: 'POST',
        url: `/v2/agents/${a.id}/permissions`,
        headers: a.owner.headers,
        payload: { grantee_agent_id: b.id, access: 'read' },
      },
      201,
    );
    await call(app, { method: 'GET', url: `/v2/agents/${a.id}/memory`, headers: b.headers }, 200);
    await call(app, { method: 'DELETE', url: `/v2/agents/${b.id}`, headers: b.owner.headers }, 204);
    await call(app, { method: 'GET', url: `/v2/agents/${a.id}/memory`, headers: b.headers }, 401);
  });
});
