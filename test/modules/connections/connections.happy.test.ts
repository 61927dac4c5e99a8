/**
 * Connected accounts (issue 15), happy paths against a real upstream: an oidc-provider
 * authorization server on loopback and a notes API verifying its JWT access tokens with jose.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { runTest } from '../../../src/modules/publishing/verification.js';
import { call, createUser } from '../../helpers/app.js';
import { agentToken, createAgent, subscribeAgentTool } from '../../helpers/agents.js';
import {
  connect,
  executeNotes,
  newSession,
  registerNotesService,
  setExpiry,
  setupConnections,
  storedConnection,
} from './fixture.js';

const f = await setupConnections();
const account = () => `u-${randomBytes(4).toString('hex')}@notes.test`;

describe('connections', () => {
  it('connects through the consent form and executes with the caller’s own token', async () => {
    const owner = await createUser(f.app);
    const svc = await registerNotesService(f, owner);
    const who = account();
    const { started, upstreamUrl } = await connect(f, owner, svc.name, who);

    // The answer's URL is the platform's page; the browser that took the flow got the upstream's.
    expect(started.authorization_url).toBe(`${f.ctx.config.publicUrl}/console/connections?state=${started.state}`);
    const authUrl = new URL(upstreamUrl);
    expect(authUrl.origin).toBe(f.up.issuer);
    expect(authUrl.searchParams.get('redirect_uri')).toBe(f.callbackUri);
    expect(authUrl.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authUrl.searchParams.get('resource')).toBe(f.up.resource);
    expect(authUrl.searchParams.get('scope')).toBe('openid offline_access notes:read');
    expect(authUrl.searchParams.get('state')).toBe(started.state);

    const { body: listed } = await call(f.app, { method: 'GET', url: '/connections', headers: owner.headers }, 200);
    expect(listed.data).toHaveLength(1);
    expect(listed.data[0]).toMatchObject({
      id: started.connection_id,
      service: { id: svc.id, name: svc.name },
      agent_id: null,
      status: 'active',
      last_used_at: null,
    });
    expect(listed.data[0].scopes).toContain('notes:read');
    expect(new Date(listed.data[0].expires_at).getTime()).toBeGreaterThan(Date.now() + 3000_000);

    const session = await newSession(f.app, owner.headers);
    const res = await executeNotes(f.app, owner.headers, session, svc.name);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      status: 'succeeded',
      http_status: 200,
      output: { sub: who, notes: [`first note of ${who}`, `second note of ${who}`] },
    });
    const { accessToken } = await storedConnection(f, started.connection_id);
    expect(f.up.seenTokens.at(-1)).toMatchObject({ sub: who, client_id: f.up.clientId });
    expect(accessToken).toEqual(expect.any(String));

    const { body: one } = await call(
      f.app,
      { method: 'GET', url: `/connections/${started.connection_id}`, headers: owner.headers },
      200,
    );
    expect(one.last_used_at).not.toBeNull();
  });

  it('two users of one service each reach their own upstream account', async () => {
    const owner = await createUser(f.app);
    const svc = await registerNotesService(f, owner);
    const [alice, bob] = [await createUser(f.app), await createUser(f.app)];
    const [a, b] = [account(), account()];
    for (const u of [alice, bob])
      await call(
        f.app,
        { method: 'POST', url: '/subscriptions', headers: u.headers, payload: { service_id: svc.id, plan: 'free' } },
        201,
      );
    await connect(f, alice, svc.name, a);
    await connect(f, bob, svc.id, b);
    const ra = await executeNotes(f.app, alice.headers, await newSession(f.app, alice.headers), svc.name);
    const rb = await executeNotes(f.app, bob.headers, await newSession(f.app, bob.headers), svc.name);
    expect(ra.json().output.sub).toBe(a);
    expect(rb.json().output.sub).toBe(b);
    // the owner has not connected: its own grant is missing, not borrowed from a subscriber
    const ro = await executeNotes(f.app, owner.headers, await newSession(f.app, owner.headers), svc.name);
    expect(ro.statusCode).toBe(409);
    expect(ro.json().code).toBe('connection_required');
  });

  it('refreshes a token within 60 s of expiry before the call (rotating the refresh token)', async () => {
    const user = await createUser(f.app);
    const svc = await registerNotesService(f, user);
    const { started } = await connect(f, user, svc.name, account());
    const before = await storedConnection(f, started.connection_id);
    const session = await newSession(f.app, user.headers);
    expect((await executeNotes(f.app, user.headers, session, svc.name)).statusCode).toBe(200);
    const firstJti = f.up.seenTokens.at(-1)!.jti;

    await setExpiry(f, started.connection_id, 30_000);
    const refreshes = f.up.refreshes();
    const res = await executeNotes(f.app, user.headers, session, svc.name);
    expect(res.json()).toMatchObject({ status: 'succeeded', http_status: 200 });
    expect(f.up.refreshes()).toBe(refreshes + 1);
    expect(f.up.seenTokens.at(-1)!.jti).not.toBe(firstJti);
    const after = await storedConnection(f, started.connection_id);
    expect(after.accessToken).not.toBe(before.accessToken);
    expect(after.refreshToken).not.toBe(before.refreshToken);
    expect(after.row.expiresAt!.getTime()).toBeGreaterThan(Date.now() + 3000_000);
    const { body } = await call(
      f.app,
      { method: 'GET', url: `/connections/${started.connection_id}`, headers: user.headers },
      200,
    );
    expect(body.last_refreshed_at).not.toBeNull();
    expect(body.status).toBe('active');
  });

  it('an upstream 401 gets one refresh and one retry', async () => {
    const user = await createUser(f.app);
    const svc = await registerNotesService(f, user);
    await connect(f, user, svc.name, account());
    const session = await newSession(f.app, user.headers);
    await executeNotes(f.app, user.headers, session, svc.name);
    f.up.rejectJti(String(f.up.seenTokens.at(-1)!.jti));
    const refreshes = f.up.refreshes();
    const seen = f.up.seenTokens.length;
    const res = await executeNotes(f.app, user.headers, session, svc.name);
    expect(res.json()).toMatchObject({ status: 'succeeded', http_status: 200 });
    expect(f.up.refreshes()).toBe(refreshes + 1);
    expect(f.up.seenTokens.length).toBe(seen + 2);
  });

  it('concurrent executions with an expiring token refresh it once', async () => {
    const user = await createUser(f.app);
    const svc = await registerNotesService(f, user);
    const { started } = await connect(f, user, svc.name, account());
    const session = await newSession(f.app, user.headers);
    await setExpiry(f, started.connection_id, 10_000);
    const refreshes = f.up.refreshes();
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => executeNotes(f.app, user.headers, session, svc.name)),
    );
    for (const a of answers) expect(a.json()).toMatchObject({ status: 'succeeded', http_status: 200 });
    expect(f.up.refreshes()).toBe(refreshes + 1);
    expect(new Set(f.up.seenTokens.slice(-6).map((t) => t.jti)).size).toBe(1);
  });

  it("agents use their owner's connection unless the owner made one for the agent", async () => {
    const owner = await createUser(f.app);
    const svc = await registerNotesService(f, owner);
    const agent = await createAgent(f.app, owner);
    await subscribeAgentTool(f.app, owner, agent.id, svc.name);
    const { headers } = await agentToken(f.app, agent);
    const ownerAccount = account();
    await connect(f, owner, svc.name, ownerAccount);
    const session = await newSession(f.app, headers);
    expect((await executeNotes(f.app, headers, session, svc.name)).json().output.sub).toBe(ownerAccount);

    const agentAccount = account();
    const { started } = await connect(f, owner, svc.name, agentAccount, { agent_id: agent.id });
    expect((await executeNotes(f.app, headers, session, svc.name)).json().output.sub).toBe(agentAccount);
    // the owner itself still uses its own
    expect(
      (await executeNotes(f.app, owner.headers, await newSession(f.app, owner.headers), svc.name)).json().output.sub,
    ).toBe(ownerAccount);
    const { body } = await call(
      f.app,
      { method: 'GET', url: `/connections/${started.connection_id}`, headers: owner.headers },
      200,
    );
    expect(body.agent_id).toBe(agent.id);
  });

  it('works with configured endpoints instead of discovery (iss expected to be the authorization origin)', async () => {
    const user = await createUser(f.app);
    const i = f.up.issuer;
    const svc = await registerNotesService(f, user, {
      issuer: undefined,
      authorization_url: `${i}/authorize`,
      token_url: `${i}/token`,
      revocation_url: `${i}/revoke`,
    });
    const who = account();
    const { started } = await connect(f, user, svc.name, who);
    await setExpiry(f, started.connection_id, 1000);
    const res = await executeNotes(f.app, user.headers, await newSession(f.app, user.headers), svc.name);
    expect(res.json().output.sub).toBe(who);
    const { body } = await call(
      f.app,
      { method: 'DELETE', url: `/connections/${started.connection_id}`, headers: user.headers },
      200,
    );
    expect(body.upstream_revocation).toBe('revoked');
  });

  it('puts the token in the access_token query parameter when the service says so', async () => {
    const user = await createUser(f.app);
    const svc = await registerNotesService(f, user, { token_placement: 'query' });
    const who = account();
    await connect(f, user, svc.name, who);
    const res = await executeNotes(f.app, user.headers, await newSession(f.app, user.headers), svc.name);
    expect(res.json().output.sub).toBe(who);
  });

  it('reconnecting keeps the connection id; DELETE revokes the grant upstream (RFC 7009), then deletes', async () => {
    const user = await createUser(f.app);
    const svc = await registerNotesService(f, user);
    const { started } = await connect(f, user, svc.name, account());
    const { started: again } = await connect(f, user, svc.name, account());
    expect(again.connection_id).toBe(started.connection_id);
    const { refreshToken } = await storedConnection(f, started.connection_id);
    const { body } = await call(
      f.app,
      { method: 'DELETE', url: `/connections/${started.connection_id}`, headers: user.headers },
      200,
    );
    expect(body).toEqual({ id: started.connection_id, status: 'revoked', upstream_revocation: 'revoked' });
    const dead = await f.up.refreshGrant(refreshToken!);
    expect(dead.status).toBe(400);
    expect(dead.body.error).toBe('invalid_grant');
    await call(f.app, { method: 'GET', url: `/connections/${started.connection_id}`, headers: user.headers }, 404);
    const res = await executeNotes(f.app, user.headers, await newSession(f.app, user.headers), svc.name);
    expect(res.statusCode).toBe(409);
  });

  it("publishing's functional verification calls the upstream with the owner's own connection", async () => {
    const owner = await createUser(f.app);
    const svc = await registerNotesService(f, owner);
    const before = await runTest(f.ctx, svc.id, { tool: 'list_notes', arguments: {} }, 10_000);
    expect(before).toMatchObject({ status: 'failed', error: expect.stringMatching(/^connection_required/) });
    await connect(f, owner, svc.name, account());
    const after = await runTest(f.ctx, svc.id, { tool: 'list_notes', arguments: {} }, 10_000);
    expect(after).toMatchObject({ status: 'passed', http_status: 200 });
  });

  it('lists by service and pages newest first', async () => {
    const user = await createUser(f.app);
    const [s1, s2] = [await registerNotesService(f, user), await registerNotesService(f, user)];
    const c1 = (
      await call(
        f.app,
        { method: 'POST', url: '/connections', headers: user.headers, payload: { service: s1.name } },
        201,
      )
    ).body;
    const c2 = (
      await call(
        f.app,
        { method: 'POST', url: '/connections', headers: user.headers, payload: { service: s2.name } },
        201,
      )
    ).body;
    const { body: page1 } = await call(
      f.app,
      { method: 'GET', url: '/connections?limit=1', headers: user.headers },
      200,
    );
    expect(page1.data.map((c: { id: string }) => c.id)).toEqual([c2.connection_id]);
    expect(page1.data[0].status).toBe('pending');
    const { body: page2 } = await call(
      f.app,
      { method: 'GET', url: `/connections?limit=1&cursor=${page1.next_cursor}`, headers: user.headers },
      200,
    );
    expect(page2.data.map((c: { id: string }) => c.id)).toEqual([c1.connection_id]);
    const { body: only } = await call(
      f.app,
      { method: 'GET', url: `/connections?service=${s1.name}`, headers: user.headers },
      200,
    );
    expect(only.data.map((c: { id: string }) => c.id)).toEqual([c1.connection_id]);
  });
});
