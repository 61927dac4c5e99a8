import { describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { agentToken, basicAuth, createAgent } from '../../helpers/agents.js';

const { app } = await setupApp();

function claims(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString());
}

const form = (p: Record<string, string>) => new URLSearchParams(p).toString();
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

describe('agents — happy paths', () => {
  it('creates, reads, lists, updates and soft-deletes an agent', async () => {
    const u = await createUser(app);
    const { body: created, res } = await call(
      app,
      {
        method: 'POST',
        url: '/v2/agents',
        headers: u.headers,
        payload: { name: 'Researcher', description: 'reads papers', metadata: { team: 'ml' } },
      },
      201,
    );
    expect(res.headers['cache-control']).toBe('no-store');
    expect(created).toMatchObject({
      name: 'Researcher',
      description: 'reads papers',
      status: 'active',
      metadata: { team: 'ml' },
      deleted_at: null,
    });
    expect(created.id).toMatch(/^agt_[0-9a-z]{26}$/);
    expect(created.client_id).toMatch(/^agc_[0-9a-f]{32}$/);
    expect(created.client_secret).toMatch(/^ags_[0-9a-z]{26}[A-Za-z0-9_-]{43}$/);
    expect(created.secrets).toHaveLength(1);
    expect(created.secrets[0]).toMatchObject({ last_used_at: null, expires_at: null });

    const { body: got } = await call(app, { method: 'GET', url: `/v2/agents/${created.id}`, headers: u.headers }, 200);
    expect(got.client_secret).toBeUndefined();
    expect(JSON.stringify(got)).not.toContain(created.client_secret);
    expect(got).toMatchObject({ id: created.id, client_id: created.client_id, name: 'Researcher' });

    const { body: patched } = await call(
      app,
      {
        method: 'PATCH',
        url: `/v2/agents/${created.id}`,
        headers: u.headers,
        payload: { name: 'Reviewer', description: null, metadata: { team: 'nlp' }, status: 'disabled' },
      },
      200,
    );
    expect(patched).toMatchObject({
      name: 'Reviewer',
      description: null,
      metadata: { team: 'nlp' },
      status: 'disabled',
    });
    const { body: active } = await call(
      app,
      { method: 'PATCH', url: `/v2/agents/${created.id}`, headers: u.headers, payload: { status: 'active' } },
      200,
    );
    expect(active).toMatchObject({ name: 'Reviewer', status: 'active' });

    await call(app, { method: 'DELETE', url: `/v2/agents/${created.id}`, headers: u.headers }, 204);
    await call(app, { method: 'GET', url: `/v2/agents/${created.id}`, headers: u.headers }, 404);
    const { body: list } = await call(app, { method: 'GET', url: '/v2/agents', headers: u.headers }, 200);
    expect(list.data.map((a: { id: string }) => a.id)).not.toContain(created.id);
    const { body: all } = await call(
      app,
      { method: 'GET', url: '/v2/agents?include_deleted=true', headers: u.headers },
      200,
    );
    const deleted = all.data.find((a: { id: string }) => a.id === created.id);
    expect(deleted).toMatchObject({ status: 'deleted', secrets: [] });
    expect(deleted.deleted_at).toBeTruthy();
  });

  it('paginates the account’s agents newest first', async () => {
    const u = await createUser(app);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await createAgent(app, u, { name: `a${i}` })).id);
    const { body: p1 } = await call(app, { method: 'GET', url: '/v2/agents?limit=2', headers: u.headers }, 200);
    expect(p1.data.map((a: { id: string }) => a.id)).toEqual([ids[2], ids[1]]);
    expect(p1.next_cursor).toBeTruthy();
    const { body: p2 } = await call(
      app,
      { method: 'GET', url: `/v2/agents?limit=2&cursor=${p1.next_cursor}`, headers: u.headers },
      200,
    );
    expect(p2.data.map((a: { id: string }) => a.id)).toEqual([ids[0]]);
    expect(p2.next_cursor).toBeNull();
  });

  it('issues tokens with client_secret_basic and client_secret_post, form and JSON', async () => {
    const u = await createUser(app, { roles: ['pro'] });
    const a = await createAgent(app, u);
    const requests = [
      {
        headers: { ...FORM, authorization: basicAuth(a.clientId, a.clientSecret) },
        payload: form({ grant_type: 'client_credentials' }),
      },
      {
        headers: FORM,
        payload: form({ grant_type: 'client_credentials', client_id: a.clientId, client_secret: a.clientSecret }),
      },
      {
        headers: { authorization: basicAuth(a.clientId, a.clientSecret) },
        payload: { grant_type: 'client_credentials' },
      },
      {
        headers: {},
        payload: { grant_type: 'client_credentials', client_id: a.clientId, client_secret: a.clientSecret },
      },
    ];
    const { body: agentView } = await call(app, { method: 'GET', url: `/v2/agents/${a.id}`, headers: u.headers }, 200);
    for (const r of requests) {
      const { body, res } = await call(app, { method: 'POST', url: '/auth/agent/token', ...r }, 200);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers.pragma).toBe('no-cache');
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(body).toEqual({
        access_token: expect.any(String),
        token_type: 'Bearer',
        expires_in: 3600,
        scope: 'memory:read memory:write permissions:manage tools:execute',
      });
      const c = claims(body.access_token);
      expect(c).toMatchObject({
        sub: a.id,
        client_id: a.clientId,
        sid: agentView.secrets[0].id,
        roles: ['pro'],
        scope: body.scope,
      });
      expect((c.exp as number) - (c.iat as number)).toBe(3600);
      await call(
        app,
        { method: 'GET', url: '/v2/memory', headers: { authorization: `Bearer ${body.access_token}` } },
        200,
      );
    }
    const { body: after } = await call(app, { method: 'GET', url: `/v2/agents/${a.id}`, headers: u.headers }, 200);
    expect(after.secrets[0].last_used_at).toBeTruthy();
  });

  it('decodes form-urlencoded Basic credentials (RFC 6749 §2.3.1)', async () => {
    const u = await createUser(app);
    const a = await createAgent(app, u);
    // "_" and "-" percent-encoded: a conforming server decodes them before comparing.
    const enc = (s: string) => s.replace(/_/g, '%5F').replace(/-/g, '%2D');
    const authorization = `Basic ${Buffer.from(`${enc(a.clientId)}:${enc(a.clientSecret)}`).toString('base64')}`;
    await call(
      app,
      {
        method: 'POST',
        url: '/auth/agent/token',
        headers: { ...FORM, authorization },
        payload: 'grant_type=client_credentials',
      },
      200,
    );
  });

  it('grants a requested subset of scopes and enforces it', async () => {
    const u = await createUser(app);
    const a = await createAgent(app, u);
    const { body } = await call(
      app,
      {
        method: 'POST',
        url: '/auth/agent/token',
        headers: FORM,
        payload: form({
          grant_type: 'client_credentials',
          client_id: a.clientId,
          client_secret: a.clientSecret,
          scope: 'memory:read  memory:read',
        }),
      },
      200,
    );
    expect(body.scope).toBe('memory:read');
    const headers = { authorization: `Bearer ${body.access_token}` };
    await call(app, { method: 'GET', url: '/v2/memory', headers }, 200);
    const { body: err, res } = await call(
      app,
      { method: 'PUT', url: '/v2/memory/k', headers, payload: { value: 1 } },
      403,
    );
    expect(err.code).toBe('insufficient_scope');
    expect(res.headers['www-authenticate']).toContain('error="insufficient_scope"');
  });

  it('reports an agent token as valid at /v1/auth/validate', async () => {
    const u = await createUser(app);
    const a = await createAgent(app, u);
    const t = await agentToken(app, a);
    const { body } = await call(app, { method: 'POST', url: '/v1/auth/validate', headers: t.headers }, 200);
    expect(body).toMatchObject({ valid: true, user_id: `agent|${a.id}` });
  });

  it('rotates with a grace period: old and new secrets (and old tokens) work, both listed', async () => {
    const u = await createUser(app);
    const a = await createAgent(app, u);
    const old = await agentToken(app, a);
    const { body: rotated, res } = await call(
      app,
      {
        method: 'POST',
        url: `/v2/agents/${a.id}/rotate-secret`,
        headers: u.headers,
        payload: { grace_period_seconds: 120 },
      },
      200,
    );
    expect(res.headers['cache-control']).toBe('no-store');
    expect(rotated.client_secret).toMatch(/^ags_/);
    expect(rotated.client_secret).not.toBe(a.clientSecret);
    expect(rotated.secrets).toHaveLength(2);
    const [current, previous] = rotated.secrets;
    expect(current.expires_at).toBeNull();
    const graceEnd = new Date(previous.expires_at).getTime();
    expect(graceEnd).toBeGreaterThan(Date.now() + 110_000);
    expect(graceEnd).toBeLessThan(Date.now() + 130_000);

    await call(app, { method: 'GET', url: '/v2/memory', headers: old.headers }, 200);
    await agentToken(app, { clientId: a.clientId, clientSecret: rotated.client_secret });
    // Tokens from the old secret never outlive its grace period.
    const { body: t } = await call(
      app,
      {
        method: 'POST',
        url: '/auth/agent/token',
        payload: { grant_type: 'client_credentials', client_id: a.clientId, client_secret: a.clientSecret },
      },
      200,
    );
    expect(t.expires_in).toBeGreaterThan(100);
    expect(t.expires_in).toBeLessThanOrEqual(120);
    expect(claims(t.access_token).exp).toBeLessThanOrEqual(Math.floor(graceEnd / 1000));
  });
});
