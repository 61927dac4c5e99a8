import { describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { agentToken, createAgent } from '../../helpers/agents.js';

const { app } = await setupApp();

async function newAgent(owner?: Awaited<ReturnType<typeof createUser>>) {
  const a = await createAgent(app, owner ?? (await createUser(app)));
  return { ...a, ...(await agentToken(app, a)) };
}
const keys = (body: { data: Array<{ key: string }> }) => body.data.map((e) => e.key);

describe('permissions — happy paths', () => {
  it('owner grants read on a prefix to another account’s agent; write; revoke takes effect at once', async () => {
    const a = await newAgent();
    const b = await newAgent(); // another account
    for (const k of ['shared/x', 'shared/y', 'private/z'])
      await call(
        app,
        { method: 'PUT', url: `/v2/memory/${encodeURIComponent(k)}`, headers: a.headers, payload: { value: k } },
        201,
      );

    const { body: grant } = await call(
      app,
      {
        method: 'POST',
        url: `/v2/agents/${a.id}/permissions`,
        headers: a.owner.headers,
        payload: { grantee_agent_id: b.id, access: 'read', key_prefix: 'shared/' },
      },
      201,
    );
    expect(grant).toMatchObject({
      agent_id: a.id,
      grantee_agent_id: b.id,
      access: 'read',
      key_prefix: 'shared/',
      expires_at: null,
      created_by: a.owner.userId,
    });
    expect(grant.id).toMatch(/^prm_/);

    const { body: read } = await call(
      app,
      { method: 'GET', url: `/v2/agents/${a.id}/memory`, headers: b.headers },
      200,
    );
    expect(keys(read)).toEqual(['shared/x', 'shared/y']);
    const { body: one } = await call(
      app,
      { method: 'GET', url: `/v2/agents/${a.id}/memory?prefix=shared%2Fy`, headers: b.headers },
      200,
    );
    expect(one.data).toEqual([expect.objectContaining({ key: 'shared/y', value: 'shared/y', version: 1 })]);
    const { body: denied } = await call(
      app,
      {
        method: 'PUT',
        url: `/v2/agents/${a.id}/memory/shared%2Fx`,
        headers: b.headers,
        payload: { value: 'b was here' },
      },
      403,
    );
    expect(denied.code).toBe('permission_required');

    const { body: w } = await call(
      app,
      {
        method: 'POST',
        url: `/v2/agents/${a.id}/permissions`,
        headers: a.owner.headers,
        payload: { grantee_agent_id: b.id, access: 'write', key_prefix: 'shared/' },
      },
      201,
    );
    const { res, body: written } = await call(
      app,
      {
        method: 'PUT',
        url: `/v2/agents/${a.id}/memory/shared%2Fx`,
        headers: { ...b.headers, 'if-match': '"1"' },
        payload: { value: 'b was here' },
      },
      200,
    );
    expect(res.headers.etag).toBe('"2"');
    expect(written.value).toBe('b was here');
    const { res: created } = await call(
      app,
      { method: 'PUT', url: `/v2/agents/${a.id}/memory/shared%2Fnew`, headers: b.headers, payload: { value: 1 } },
      201,
    );
    expect(created.headers.location).toBe(`/v2/agents/${a.id}/memory/shared%2Fnew`);
    const { body: mine } = await call(app, { method: 'GET', url: '/v2/memory/shared%2Fx', headers: a.headers }, 200);
    expect(mine).toMatchObject({ value: 'b was here', version: 2 });

    const { body: perms } = await call(
      app,
      { method: 'GET', url: `/v2/agents/${a.id}/permissions`, headers: a.owner.headers },
      200,
    );
    expect(perms.data.map((p: { id: string }) => p.id)).toEqual([w.id, grant.id]);
    const { body: grants } = await call(
      app,
      { method: 'GET', url: `/v2/agents/${b.id}/grants`, headers: b.owner.headers },
      200,
    );
    expect(grants.data.map((p: { id: string }) => p.id)).toEqual([w.id, grant.id]);

    await call(app, { method: 'DELETE', url: `/v2/agents/${a.id}/permissions/${w.id}`, headers: a.owner.headers }, 204);
    await call(
      app,
      { method: 'PUT', url: `/v2/agents/${a.id}/memory/shared%2Fx`, headers: b.headers, payload: { value: 'again' } },
      403,
    );
    await call(app, { method: 'GET', url: `/v2/agents/${a.id}/memory`, headers: b.headers }, 200);
    await call(
      app,
      { method: 'DELETE', url: `/v2/agents/${a.id}/permissions/${grant.id}`, headers: a.owner.headers },
      204,
    );
    const { body: refused } = await call(
      app,
      { method: 'GET', url: `/v2/agents/${a.id}/memory`, headers: b.headers },
      403,
    );
    expect(refused.code).toBe('permission_required');
    const { body: none } = await call(
      app,
      { method: 'GET', url: `/v2/agents/${a.id}/permissions`, headers: a.owner.headers },
      200,
    );
    expect(none.data).toEqual([]);
  });

  it('records every cross-agent read and write for the owner (cursor pagination)', async () => {
    const a = await newAgent();
    const b = await newAgent();
    await call(app, { method: 'PUT', url: '/v2/memory/k1', headers: a.headers, payload: { value: 1 } }, 201);
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
    await call(app, { method: 'GET', url: `/v2/agents/${a.id}/memory`, headers: b.headers }, 200);
    await call(
      app,
      { method: 'PUT', url: `/v2/agents/${a.id}/memory/k2`, headers: b.headers, payload: { value: 2 } },
      201,
    );
    // The owner's own accesses are not cross-agent and are not recorded.
    await call(app, { method: 'GET', url: `/v2/agents/${a.id}/memory`, headers: a.headers }, 200);
    await call(app, { method: 'GET', url: `/v2/agents/${a.id}/memory`, headers: a.owner.headers }, 200);

    const { body: p1 } = await call(
      app,
      { method: 'GET', url: `/v2/agents/${a.id}/memory/audit?limit=1`, headers: a.owner.headers },
      200,
    );
    expect(p1.data).toEqual([
      expect.objectContaining({
        agent_id: a.id,
        actor_agent_id: b.id,
        action: 'write',
        outcome: 'allowed',
        key: 'k2',
        keys: [],
      }),
    ]);
    expect(p1.data[0].permission_id).toMatch(/^prm_/);
    const { body: p2 } = await call(
      app,
      {
        method: 'GET',
        url: `/v2/agents/${a.id}/memory/audit?limit=1&cursor=${p1.next_cursor}`,
        headers: a.owner.headers,
      },
      200,
    );
    expect(p2.data).toEqual([
      expect.objectContaining({ action: 'read', outcome: 'allowed', key: null, prefix: null, keys: ['k1'] }),
    ]);
    expect(p2.next_cursor).toBeNull();
    const when = new Date(p2.data[0].created_at).getTime();
    expect(Math.abs(Date.now() - when)).toBeLessThan(60_000);
    // The agent itself can read its audit, filtered.
    const { body: writes } = await call(
      app,
      { method: 'GET', url: `/v2/agents/${a.id}/memory/audit?action=write&actor_agent_id=${b.id}`, headers: a.headers },
      200,
    );
    expect(writes.data).toHaveLength(1);
  });

  it('the agent itself can grant (created_by = agent); write implies read', async () => {
    const a = await newAgent();
    const b = await newAgent();
    await call(app, { method: 'PUT', url: '/v2/memory/notes', headers: a.headers, payload: { value: 'n' } }, 201);
    const { body: g } = await call(
      app,
      {
        method: 'POST',
        url: `/v2/agents/${a.id}/permissions`,
        headers: a.headers,
        payload: { grantee_agent_id: b.id, access: 'write' },
      },
      201,
    );
    expect(g.created_by).toBe(a.id);
    const { body } = await call(app, { method: 'GET', url: `/v2/agents/${a.id}/memory`, headers: b.headers }, 200);
    expect(keys(body)).toEqual(['notes']);
    const { body: listed } = await call(
      app,
      { method: 'GET', url: `/v2/agents/${a.id}/permissions`, headers: a.headers },
      200,
    );
    expect(listed.data).toHaveLength(1);
    const { body: held } = await call(
      app,
      { method: 'GET', url: `/v2/agents/${b.id}/grants`, headers: b.headers },
      200,
    );
    expect(held.data.map((p: { id: string }) => p.id)).toEqual([g.id]);
    await call(app, { method: 'DELETE', url: `/v2/agents/${a.id}/permissions/${g.id}`, headers: a.headers }, 204);
    await call(app, { method: 'GET', url: `/v2/agents/${a.id}/memory`, headers: b.headers }, 403);
  });

  it('a grant stops working when it expires', async () => {
    const a = await newAgent();
    const b = await newAgent();
    const expiresAt = new Date(Date.now() + 1500).toISOString();
    await call(
      app,
      {
        method: 'POST',
        url: `/v2/agents/${a.id}/permissions`,
        headers: a.owner.headers,
        payload: { grantee_agent_id: b.id, access: 'read', expires_at: expiresAt },
      },
      201,
    );
    await call(app, { method: 'GET', url: `/v2/agents/${a.id}/memory`, headers: b.headers }, 200);
    await new Promise((r) => setTimeout(r, 1700));
    await call(app, { method: 'GET', url: `/v2/agents/${a.id}/memory`, headers: b.headers }, 403);
    const { body } = await call(
      app,
      { method: 'GET', url: `/v2/agents/${a.id}/permissions`, headers: a.owner.headers },
      200,
    );
    expect(body.data).toEqual([]);
  });

  it('the owner user reads and writes its agent’s memory through /v2/agents/:id/memory', async () => {
    const a = await newAgent();
    await call(
      app,
      {
        method: 'PUT',
        url: `/v2/agents/${a.id}/memory/set-by-owner`,
        headers: a.owner.headers,
        payload: { value: 'hi' },
      },
      201,
    );
    const { body } = await call(
      app,
      { method: 'GET', url: `/v2/agents/${a.id}/memory`, headers: a.owner.headers },
      200,
    );
    expect(keys(body)).toEqual(['set-by-owner']);
    const { body: own } = await call(app, { method: 'GET', url: '/v2/memory/set-by-owner', headers: a.headers }, 200);
    expect(own.value).toBe('hi');
  });
});
