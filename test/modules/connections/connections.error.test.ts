/**
 * Connected accounts (issue 15), error paths: a revoked refresh token, no connection, state
 * replay and expiry, refused consent, an `iss` that is not the issuer's, bad requests.
 */
import { randomBytes } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { connectionStates } from '../../../src/db/schema/index.js';
import { call, createUser } from '../../helpers/app.js';
import { connectionBrowser } from '../../helpers/oauth-upstream.js';
import {
  RETURN_TO,
  connect,
  executeNotes,
  newSession,
  registerNotesService,
  setExpiry,
  setupConnections,
  storedConnection,
  upstreamUrlFor,
} from './fixture.js';

const f = await setupConnections();
const account = () => `u-${randomBytes(4).toString('hex')}@notes.test`;

describe('connections: errors', () => {
  it('a revoked refresh token marks the connection expired; 409 carries a reconnect URL that works', async () => {
    const user = await createUser(f.app);
    const svc = await registerNotesService(f, user);
    const who = account();
    const { started } = await connect(f, user, svc.name, who);
    const { refreshToken } = await storedConnection(f, started.connection_id);
    await f.up.revoke(refreshToken!);
    await setExpiry(f, started.connection_id, 5_000);

    const session = await newSession(f.app, user.headers);
    const res = await executeNotes(f.app, user.headers, session, svc.name);
    expect(res.statusCode).toBe(409);
    const p = res.json();
    expect(p).toMatchObject({
      code: 'connection_required',
      service: svc.name,
      connection_id: started.connection_id,
      connection_status: 'expired',
      connect: { method: 'POST', path: '/connections' },
    });
    expect(p.execution_id).toBeUndefined();
    // The reconnect URL is the platform's page, like POST /connections' (the agent cannot take it: only the signed-in user).
    const reconnect = new URL(p.authorization_url);
    expect(reconnect.origin + reconnect.pathname).toBe(`${f.ctx.config.publicUrl}/console/connections`);
    const { body: c } = await call(
      f.app,
      { method: 'GET', url: `/connections/${started.connection_id}`, headers: user.headers },
      200,
    );
    expect(c.status).toBe('expired');
    expect(c.last_error).toMatch(/grant/i);

    // The user opens the reconnect URL: no return_to, so the callback answers JSON.
    const browser = connectionBrowser(f.app, f.up);
    let next = await upstreamUrlFor(f, browser, user, p.authorization_url);
    let answer = await browser.request('GET', next);
    for (let i = 0; i < 10 && !(answer.status === 200 && answer.body.startsWith('{')); i++) {
      const form = /<form method="post" action="([^"]+)"/.exec(answer.body);
      if (answer.status === 200 && form) {
        next = new URL(form[1], next).href;
        answer = await browser.request('POST', next, {
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ email: who, password: 'x' }).toString(),
        });
      } else {
        next = new URL(String(answer.headers.location), next).href;
        answer = await browser.request('GET', next);
      }
    }
    expect(JSON.parse(answer.body)).toEqual({
      connection_id: started.connection_id,
      service: svc.name,
      status: 'active',
    });
    const again = await executeNotes(f.app, user.headers, session, svc.name);
    expect(again.json()).toMatchObject({ status: 'succeeded', output: { sub: who } });
  });

  it('a refused refresh after an upstream 401 is recorded and answers 409', async () => {
    const user = await createUser(f.app);
    const svc = await registerNotesService(f, user);
    const { started } = await connect(f, user, svc.name, account());
    const session = await newSession(f.app, user.headers);
    await executeNotes(f.app, user.headers, session, svc.name);
    f.up.rejectJti(String(f.up.seenTokens.at(-1)!.jti));
    await f.up.revoke((await storedConnection(f, started.connection_id)).refreshToken!);
    const res = await executeNotes(f.app, user.headers, session, svc.name);
    expect(res.statusCode).toBe(409);
    expect(res.json()).toMatchObject({
      code: 'connection_required',
      connection_status: 'expired',
      execution_id: expect.any(String),
    });
  });

  it('no connection: 409 connection_required says how to connect; a pending one too', async () => {
    const user = await createUser(f.app);
    const svc = await registerNotesService(f, user);
    const session = await newSession(f.app, user.headers);
    const res = await executeNotes(f.app, user.headers, session, svc.name);
    expect(res.statusCode).toBe(409);
    expect(res.json()).toMatchObject({
      code: 'connection_required',
      service: svc.name,
      connect: { method: 'POST', path: '/connections', body: { service: svc.name } },
    });
    expect(res.json().authorization_url).toBeUndefined();
    const { body: started } = await call(
      f.app,
      { method: 'POST', url: '/connections', headers: user.headers, payload: { service: svc.name } },
      201,
    );
    const pending = await executeNotes(f.app, user.headers, session, svc.name);
    expect(pending.json()).toMatchObject({
      code: 'connection_required',
      connection_id: started.connection_id,
      connection_status: 'pending',
    });
  });

  it('an unsubscribed caller without a connection gets the 403 first', async () => {
    const owner = await createUser(f.app);
    const svc = await registerNotesService(f, owner);
    const other = await createUser(f.app);
    const res = await executeNotes(f.app, other.headers, await newSession(f.app, other.headers), svc.name);
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe('not_subscribed');
  });

  it('the state is single use: replaying the callback is refused', async () => {
    const user = await createUser(f.app);
    const svc = await registerNotesService(f, user);
    const { body: started } = await call(
      f.app,
      {
        method: 'POST',
        url: '/connections',
        headers: user.headers,
        payload: { service: svc.name, return_to: RETURN_TO },
      },
      201,
    );
    const browser = connectionBrowser(f.app, f.up);
    // Stop at the redirect to the platform's callback, then deliver it twice.
    let next = await upstreamUrlFor(f, browser, user, started.authorization_url);
    let callbackUrl: string | undefined;
    for (let i = 0; i < 10 && !callbackUrl; i++) {
      const answer = await browser.request(
        next.includes('/login') ? 'POST' : 'GET',
        next,
        next.includes('/login')
          ? {
              headers: { 'content-type': 'application/x-www-form-urlencoded' },
              body: 'email=replay%40notes.test&password=x',
            }
          : {},
      );
      const form = /<form method="post" action="([^"]+)"/.exec(answer.body);
      const to = form ? new URL(form[1], next).href : new URL(String(answer.headers.location), next).href;
      if (to.startsWith(f.callbackUri)) callbackUrl = to;
      next = to;
    }
    const first = await browser.request('GET', callbackUrl!);
    expect(first.status).toBe(303);
    expect(new URL(String(first.headers.location)).searchParams.get('status')).toBe('active');
    // The same browser (its binding cookie was cleared by the first), then a bare replay.
    const again = await browser.request('GET', callbackUrl!);
    const bare = await f.app.inject({
      method: 'GET',
      url: callbackUrl!.slice(callbackUrl!.indexOf('/connections/callback')),
    });
    for (const replay of [
      { status: again.status, body: again.body },
      { status: bare.statusCode, body: bare.body },
    ]) {
      expect(replay.status).toBe(400);
      expect(JSON.parse(replay.body).code).toBe('invalid_connection_state');
    }
  });

  it('unknown and expired states are refused', async () => {
    const unknown = await f.app.inject({ method: 'GET', url: '/connections/callback?state=nope&code=x' });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().code).toBe('invalid_connection_state');
    const user = await createUser(f.app);
    const svc = await registerNotesService(f, user);
    const { body: started } = await call(
      f.app,
      { method: 'POST', url: '/connections', headers: user.headers, payload: { service: svc.name } },
      201,
    );
    await f.ctx.db
      .update(connectionStates)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(connectionStates.connectionId, started.connection_id));
    const expired = await f.app.inject({ method: 'GET', url: `/connections/callback?state=${started.state}&code=x` });
    expect(expired.statusCode).toBe(400);
    expect(expired.json().detail).toMatch(/expired/);
    await f.app.inject({ method: 'GET', url: '/connections/callback' }).then((r) => expect(r.statusCode).toBe(400));
  });

  it('refused consent and a foreign iss (RFC 9207) go back to return_to as errors; the connection is error', async () => {
    const user = await createUser(f.app);
    const svc = await registerNotesService(f, user);
    // Each flow taken by the user's browser (binding cookie), whose callback then says what went wrong.
    const browser = connectionBrowser(f.app, f.up);
    const start = async () => {
      const { body } = await call(
        f.app,
        {
          method: 'POST',
          url: '/connections',
          headers: user.headers,
          payload: { service: svc.name, return_to: RETURN_TO },
        },
        201,
      );
      await upstreamUrlFor(f, browser, user, body.authorization_url);
      return body;
    };
    const callback = async (query: string) => {
      const res = await browser.request('GET', `${f.callbackUri}?${query}`);
      return { statusCode: res.status, headers: res.headers };
    };
    const s1 = await start();
    const denied = await callback(
      `state=${s1.state}&error=access_denied&error_description=no&iss=${encodeURIComponent(f.up.issuer)}`,
    );
    expect(denied.statusCode).toBe(303);
    const back = new URL(String(denied.headers.location));
    expect(back.origin + back.pathname).toBe(RETURN_TO);
    expect(back.searchParams.get('error')).toBe('invalid_grant');
    expect(back.searchParams.get('error_description')).toMatch(/access_denied/);
    expect(back.searchParams.get('status')).toBe('error');

    const s2 = await start();
    const refreshesBefore = f.up.refreshes();
    const mixup = await callback(`state=${s2.state}&code=abc&iss=${encodeURIComponent('https://evil.example')}`);
    expect(mixup.statusCode).toBe(303);
    expect(new URL(String(mixup.headers.location)).searchParams.get('error_description')).toMatch(/iss/);
    expect(f.up.refreshes()).toBe(refreshesBefore);
    const { body } = await call(
      f.app,
      { method: 'GET', url: `/connections/${s1.connection_id}`, headers: user.headers },
      200,
    );
    expect(body.status).toBe('error');
  });

  it('refuses bad requests with problem details', async () => {
    const user = await createUser(f.app);
    const svc = await registerNotesService(f, user);
    const post = (payload: Record<string, unknown>, status: number) =>
      call(f.app, { method: 'POST', url: '/connections', headers: user.headers, payload }, status).then((r) => r.body);
    expect((await post({ service: svc.name, return_to: 'https://evil.example/x' }, 400)).errors[0].pointer).toBe(
      '/return_to',
    );
    expect((await post({ service: 'no-such-service' }, 404)).code).toBe('not_found');
    expect((await post({ service: svc.name, agent_id: 'agt_nope' }, 404)).code).toBe('not_found');
    expect((await post({}, 400)).code).toBe('validation_failed');
    expect((await post({ service: svc.name, extra: 1 }, 400)).code).toBe('validation_failed');
    const { body: plain } = await call(
      f.app,
      {
        method: 'POST',
        url: '/owner/services',
        headers: user.headers,
        payload: {
          name: `plain-${randomBytes(3).toString('hex')}`,
          description: 'd',
          base_url: f.up.apiUrl,
          tools: [{ name: 't', description: 'd', method: 'GET', path: '/notes', input_schema: { type: 'object' } }],
        },
      },
      201,
    );
    expect((await post({ service: plain.name }, 400)).errors[0].pointer).toBe('/service');
    await call(f.app, { method: 'GET', url: '/connections/con_nope', headers: user.headers }, 404);
    await call(f.app, { method: 'DELETE', url: '/connections/con_nope', headers: user.headers }, 404);
    await call(f.app, { method: 'GET', url: '/connections?limit=0', headers: user.headers }, 400);
  });
});
