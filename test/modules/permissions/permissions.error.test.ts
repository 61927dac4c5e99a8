import { describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { agentToken, createAgent } from '../../helpers/agents.js';

const { app } = await setupApp();

async function newAgent() {
  const a = await createAgent(app, await createUser(app));
  return { ...a, ...(await agentToken(app, a)) };
}

describe('permissions — errors', () => {
  it('404 for unknown or deleted grantees', async () => {
    const a = await newAgent();
    const gone = await newAgent();
    await call(app, { method: 'DELETE', url: `/v2/agents/${gone.id}`, headers: gone.owner.headers }, 204);
    for (const grantee of ['agt_00000000000000000000000000', gone.id]) {
      const { body } = await call(
        app,
        {
          method: 'POST',
          url: `/v2/agents/${a.id}/permissions`,
          headers: a.owner.headers,
          payload: { grantee_agent_id: grantee, access: 'read' },
        },
        404,
      );
      expect(body.code).toBe('not_found');
    }
  });

  it('400 for invalid grants', async () => {
    const a = await newAgent();
    const b = await newAgent();
    const bad = [
      { grantee_agent_id: a.id, access: 'read' },
      { grantee_agent_id: b.id, access: 'admin' },
      { grantee_agent_id: b.id },
      { access: 'read' },
      { grantee_agent_id: b.id, access: 'read', expires_at: new Date(Date.now() - 1000).toISOString() },
      { grantee_agent_id: b.id, access: 'read', expires_at: 'tomorrow' },
      { grantee_agent_id: b.id, access: 'read', key_prefix: 'x'.repeat(257) },
      { grantee_agent_id: b.id, access: 'read', extra: 1 },
    ];
    for (const payload of bad) {
      const { body } = await call(
        app,
        { method: 'POST', url: `/v2/agents/${a.id}/permissions`, headers: a.owner.headers, payload },
        400,
      );
      expect(body.code).toBe('validation_failed');
    }
    const { body } = await call(
      app,
      { method: 'GET', url: `/v2/agents/${a.id}/permissions`, headers: a.owner.headers },
      200,
    );
    expect(body.data).toEqual([]);
  });

  it('404 when revoking unknown, already revoked or another agent’s permission', async () => {
    const a = await newAgent();
    const b = await newAgent();
    const c = await newAgent();
    const { body: g } = await call(
      app,
      {
        method: 'POST',
        url: `/v2/agents/${a.id}/permissions`,
        headers: a.owner.headers,
        payload: { grantee_agent_id: b.id, access: 'read' },
      },
      201,
    );
    await call(
      app,
      {
        method: 'DELETE',
        url: `/v2/agents/${a.id}/permissions/prm_00000000000000000000000000`,
        headers: a.owner.headers,
      },
      404,
    );
    // The grantee's owner cannot revoke through its own agent's path.
    await call(app, { method: 'DELETE', url: `/v2/agents/${b.id}/permissions/${g.id}`, headers: b.owner.headers }, 404);
    await call(app, { method: 'DELETE', url: `/v2/agents/${c.id}/permissions/${g.id}`, headers: c.owner.headers }, 404);
    await call(app, { method: 'DELETE', url: `/v2/agents/${a.id}/permissions/${g.id}`, headers: a.owner.headers }, 204);
    await call(app, { method: 'DELETE', url: `/v2/agents/${a.id}/permissions/${g.id}`, headers: a.owner.headers }, 404);
  });

  it('403 permission_required outside the granted prefix or access level', async () => {
    const a = await newAgent();
    const b = await newAgent();
    await call(
      app,
      {
        method: 'POST',
        url: `/v2/agents/${a.id}/permissions`,
        headers: a.owner.headers,
        payload: { grantee_agent_id: b.id, access: 'write', key_prefix: 'pub/' },
      },
      201,
    );
    for (const [method, url] of [
      ['PUT', `/v2/agents/${a.id}/memory/priv%2Fk`],
      ['PUT', `/v2/agents/${a.id}/memory/pu`],
      ['GET', `/v2/agents/${a.id}/memory?prefix=priv`],
    ] as const) {
      const { body } = await call(
        app,
        { method, url, headers: b.headers, ...(method === 'PUT' ? { payload: { value: 1 } } : {}) },
        403,
      );
      expect(body.code).toBe('permission_required');
    }
    await call(
      app,
      { method: 'PUT', url: `/v2/agents/${a.id}/memory/pub%2Fk`, headers: b.headers, payload: { value: 1 } },
      201,
    );
    // A narrower list prefix inside the grant, and a wider one that contains it, both work.
    await call(app, { method: 'GET', url: `/v2/agents/${a.id}/memory?prefix=pub%2Fk`, headers: b.headers }, 200);
    const { body } = await call(
      app,
      { method: 'GET', url: `/v2/agents/${a.id}/memory?prefix=p`, headers: b.headers },
      200,
    );
    expect(body.data.map((e: { key: string }) => e.key)).toEqual(['pub/k']);
  });

  it('404 for cross-agent access to unknown or deleted agents', async () => {
    const a = await newAgent();
    const b = await newAgent();
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
    await call(
      app,
      { method: 'GET', url: '/v2/agents/agt_00000000000000000000000000/memory', headers: b.headers },
      404,
    );
    await call(app, { method: 'DELETE', url: `/v2/agents/${a.id}`, headers: a.owner.headers }, 204);
    await call(app, { method: 'GET', url: `/v2/agents/${a.id}/memory`, headers: b.headers }, 404);
    await call(
      app,
      { method: 'PUT', url: `/v2/agents/${a.id}/memory/k`, headers: b.headers, payload: { value: 1 } },
      404,
    );
  });

  it('cross-agent writes honour preconditions and limits', async () => {
    const a = await newAgent();
    const b = await newAgent();
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
    await call(
      app,
      { method: 'PUT', url: `/v2/agents/${a.id}/memory/k`, headers: b.headers, payload: { value: 1 } },
      201,
    );
    await call(
      app,
      {
        method: 'PUT',
        url: `/v2/agents/${a.id}/memory/k`,
        headers: { ...b.headers, 'if-none-match': '*' },
        payload: { value: 2 },
      },
      412,
    );
    await call(
      app,
      {
        method: 'PUT',
        url: `/v2/agents/${a.id}/memory/k`,
        headers: { ...b.headers, 'if-match': '"5"' },
        payload: { value: 2 },
      },
      412,
    );
    await call(
      app,
      {
        method: 'PUT',
        url: `/v2/agents/${a.id}/memory/k`,
        headers: b.headers,
        payload: { value: 'x'.repeat(300 * 1024) },
      },
      413,
    );
    // Failed writes leave no "allowed" audit record behind.
    const { body } = await call(
      app,
      { method: 'GET', url: `/v2/agents/${a.id}/memory/audit`, headers: a.owner.headers },
      200,
    );
    expect(body.data.map((e: { outcome: string; action: string }) => `${e.action}:${e.outcome}`)).toEqual([
      'write:allowed',
    ]);
  });
});
