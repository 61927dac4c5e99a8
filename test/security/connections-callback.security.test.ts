/**
 * Connected-account hijack through the callback (the attack that used to work, then its edges),
 * over real HTTP: the app listens on loopback (PUBLIC_URL is its address), the upstream is the
 * test's own oidc-provider and notes API, and each person has their own browser (cookie jar).
 *
 * The attack: Mallory calls `POST /connections` and sends the link to Alice; Alice consents at the
 * upstream; the callback with Mallory's state and Alice's code used to activate Mallory's
 * connection with Alice's upstream token, and Mallory's executions then carried it. Now the link
 * is a platform page that only the user who started the flow can take (binding cookie), and the
 * callback needs that cookie.
 */
import { randomBytes } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { AgentPlatform } from '../../packages/sdk/src/index.js';
import { connectionStates } from '../../src/db/schema/index.js';
import { call, createUser, type TestUser } from '../helpers/app.js';
import { agentToken, createAgent } from '../helpers/agents.js';
import { Browser, fetchSend, type Send } from '../helpers/browser.js';
import { freePort } from '../helpers/net.js';
import {
  RETURN_TO,
  executeNotes,
  newSession,
  registerNotesService,
  setupConnections,
  storedConnection,
  takeInBrowser,
  upstreamUrlFor,
} from '../modules/connections/fixture.js';

const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const f = await setupConnections({ PUBLIC_URL: base });
await f.app.listen({ port, host: '127.0.0.1' }); // closed with the app after the file

/** A browser over real sockets: the platform and the upstream by origin, one cookie jar. */
function browser(): Browser {
  const toUpstream = fetchSend(f.up.issuer);
  const toApp = fetchSend(base);
  const send: Send = (req) => (new URL(req.url, base).origin === f.up.issuer ? toUpstream(req) : toApp(req));
  return new Browser(send);
}

/** Consent at the upstream as `account`, stopping at the redirect to the platform's callback (not delivered). */
async function consent(b: Browser, upstreamUrl: string, account: string): Promise<string> {
  let next: { method: string; url: string; body?: string; headers?: Record<string, string> } = {
    method: 'GET',
    url: upstreamUrl,
  };
  for (let i = 0; i < 10; i++) {
    const res = await b.request(next.method, next.url, next);
    const form = /<form method="post" action="([^"]+)"/.exec(res.body);
    const to =
      res.status === 200 && form
        ? new URL(form[1].replaceAll('&amp;', '&'), next.url).href
        : new URL(String(res.headers.location), next.url).href;
    if (to.startsWith(f.callbackUri)) return to;
    next = form
      ? {
          method: 'POST',
          url: to,
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ email: account, password: 'x' }).toString(),
        }
      : { method: 'GET', url: to };
  }
  throw new Error('the upstream never redirected to the callback');
}

const upstreamAccount = (who: string) => `${who}-${randomBytes(3).toString('hex')}@notes.test`;

/** Owner, a service, and users subscribed to it. */
async function world(n: number): Promise<{ svc: { id: string; name: string }; users: TestUser[] }> {
  const owner = await createUser(f.app);
  const svc = await registerNotesService(f, owner);
  const users: TestUser[] = [];
  for (let i = 0; i < n; i++) {
    const u = await createUser(f.app);
    await call(
      f.app,
      { method: 'POST', url: '/subscriptions', headers: u.headers, payload: { service_id: svc.id, plan: 'free' } },
      201,
    );
    users.push(u);
  }
  return { svc, users };
}

/** `POST /connections` by `user` (API: bearer token, not a browser). */
async function start(user: TestUser, service: string) {
  return (
    await call(
      f.app,
      { method: 'POST', url: '/connections', headers: user.headers, payload: { service, return_to: RETURN_TO } },
      201,
    )
  ).body;
}

/** Nothing of Alice reached Mallory: the connection is still pending without tokens, executions answer 409, the upstream never saw a token for Alice's account. */
async function expectUntouched(mallory: TestUser, service: string, connectionId: string, aliceAccount: string) {
  const stored = await storedConnection(f, connectionId);
  expect({ status: stored.row.status, access: stored.accessToken, refresh: stored.refreshToken }).toEqual({
    status: 'pending',
    access: null,
    refresh: null,
  });
  const res = await executeNotes(f.app, mallory.headers, await newSession(f.app, mallory.headers), service);
  expect(res.statusCode).toBe(409);
  expect(res.json().code).toBe('connection_required');
  expect(res.body).not.toContain(aliceAccount);
  expect(f.up.seenTokens.filter((t) => t.sub === aliceAccount)).toEqual([]);
}

describe('connections: the callback is bound to the browser of the user who started the flow', () => {
  it("Mallory's link opened by Alice (signed in as herself) is refused: nothing is connected", async () => {
    const {
      svc,
      users: [mallory, alice],
    } = await world(2);
    const started = await start(mallory, svc.name);
    // The link is the platform's page, not the upstream's: Alice's browser loads the console there…
    expect(new URL(started.authorization_url).origin).toBe(base);
    const alices = browser();
    const page = await alices.request('GET', started.authorization_url);
    expect(page.status).toBe(200);
    expect(page.body).toContain('<div id="root">');
    // …which asks to take the flow with Alice's credential: another account's flow is not found, no cookie is set.
    const taken = await takeInBrowser(f, alices, alice, started.authorization_url);
    expect(taken.status).toBe(404);
    expect(taken.body.code).toBe('not_found');
    expect(taken.body.authorization_url).toBeUndefined();
    expect(taken.setCookie).toBeUndefined();
    expect(alices.cookies.size).toBe(0);
    await expectUntouched(mallory, svc.name, started.connection_id, 'nobody');
    // Mallory can still finish her own flow afterwards (the refusal consumed nothing).
    const mallorys = browser();
    const back = await mallorys.request(
      'GET',
      await consent(
        mallorys,
        await upstreamUrlFor(f, mallorys, mallory, started.authorization_url),
        upstreamAccount('mallory'),
      ),
    );
    expect(new URL(String(back.headers.location)).searchParams.get('status')).toBe('active');
  });

  it("the upstream URL itself (Mallory took her own flow) consented by Alice: the callback in Alice's browser is refused, and the code cannot be replayed", async () => {
    const {
      svc,
      users: [mallory],
    } = await world(1);
    const started = await start(mallory, svc.name);
    const mallorys = browser();
    const upstreamUrl = await upstreamUrlFor(f, mallorys, mallory, started.authorization_url);
    const aliceAccount = upstreamAccount('alice');
    const alices = browser();
    const callback = await consent(alices, upstreamUrl, aliceAccount);
    const refused = await alices.request('GET', callback);
    expect(refused.status).toBe(403);
    expect(refused.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(JSON.parse(refused.body).code).toBe('connection_not_bound');
    expect(refused.headers.location).toBeUndefined(); // not sent on to Mallory's return_to
    await expectUntouched(mallory, svc.name, started.connection_id, aliceAccount);
    // Had Mallory learnt the callback URL (Alice's code), her own browser holds the binding cookie: the state was burnt by the refusal.
    const replay = await mallorys.request('GET', callback);
    expect(replay.status).toBe(400);
    expect(JSON.parse(replay.body).code).toBe('invalid_connection_state');
    await expectUntouched(mallory, svc.name, started.connection_id, aliceAccount);
  });

  it('honest flows work: the console (its browser starts and takes the flow) and the SDK (the link opened in a browser signed in as the same user)', async () => {
    const {
      svc,
      users: [ada, bob],
    } = await world(2);
    // Console: the browser calls POST /connections and POST /connections/authorize with the user's token.
    const adaAccount = upstreamAccount('ada');
    const consoleBrowser = browser();
    const res = await consoleBrowser.request('POST', `${base}/connections`, {
      headers: { ...ada.headers, 'content-type': 'application/json' },
      body: JSON.stringify({ service: svc.name, return_to: RETURN_TO }),
    });
    expect(res.status).toBe(201);
    const started = JSON.parse(res.body);
    const taken = await takeInBrowser(f, consoleBrowser, ada, started.authorization_url);
    expect(taken.status).toBe(200);
    const cookie = String([taken.setCookie].flat()[0]);
    expect(cookie).toMatch(/^ap_connect_[0-9a-f]{16}=[\w-]{43};/);
    for (const attr of ['HttpOnly', 'Secure', 'SameSite=Lax', 'Path=/connections/callback'])
      expect(cookie).toContain(attr);
    expect(taken.body).toMatchObject({ connection_id: started.connection_id, expires_at: started.expires_at });
    expect(new URL(taken.body.authorization_url).searchParams.get('state')).toBe(started.state);
    const back = await consoleBrowser.request(
      'GET',
      await consent(consoleBrowser, taken.body.authorization_url, adaAccount),
    );
    expect(back.status).toBe(303);
    expect(String(back.headers['set-cookie'])).toMatch(/^ap_connect_[0-9a-f]{16}=;.*Expires=Thu, 01 Jan 1970/); // the binding is cleared
    expect(Object.fromEntries(new URL(String(back.headers.location)).searchParams)).toEqual({
      connection_id: started.connection_id,
      status: 'active',
    });
    const ran = await executeNotes(f.app, ada.headers, await newSession(f.app, ada.headers), svc.name);
    expect(ran.json().output.sub).toBe(adaAccount);

    // SDK (a CLI or script): POST /connections over HTTP; the person opens the link in their browser, signed in as themselves.
    const sdk = new AgentPlatform({ baseUrl: base, env: {}, accessToken: bob.token });
    const viaSdk = await sdk.connections.create({ service: svc.name, return_to: RETURN_TO });
    expect(viaSdk.authorization_url).toBe(`${base}/console/connections?state=${encodeURIComponent(viaSdk.state)}`);
    const bobs = browser();
    expect((await bobs.request('GET', viaSdk.authorization_url)).status).toBe(200);
    const bobAccount = upstreamAccount('bob');
    const landed = await bobs.request(
      'GET',
      await consent(bobs, await upstreamUrlFor(f, bobs, bob, viaSdk.authorization_url), bobAccount),
    );
    expect(new URL(String(landed.headers.location)).searchParams.get('status')).toBe('active');
    expect((await sdk.connections.get(viaSdk.connection_id)).status).toBe('active');
    expect(
      (await executeNotes(f.app, bob.headers, await newSession(f.app, bob.headers), svc.name)).json().output.sub,
    ).toBe(bobAccount);
  });

  it('a callback replayed twice: the second is refused and the grant stays the first', async () => {
    const {
      svc,
      users: [user],
    } = await world(1);
    const started = await start(user, svc.name);
    const b = browser();
    const callback = await consent(
      b,
      await upstreamUrlFor(f, b, user, started.authorization_url),
      upstreamAccount('u'),
    );
    const cookies = new Map(b.cookies);
    expect((await b.request('GET', callback)).status).toBe(303);
    const first = await storedConnection(f, started.connection_id);
    // Even with the binding cookie put back.
    for (const [k, v] of cookies) b.cookies.set(k, v);
    for (let i = 0; i < 2; i++) {
      const again = await b.request('GET', callback);
      expect(again.status).toBe(400);
      expect(JSON.parse(again.body).code).toBe('invalid_connection_state');
    }
    expect((await storedConnection(f, started.connection_id)).accessToken).toBe(first.accessToken);
  });

  it("a state of another connection: one flow's binding cookie does not finish another flow", async () => {
    const {
      svc,
      users: [mallory, alice],
    } = await world(2);
    const [ms, as] = [await start(mallory, svc.name), await start(alice, svc.name)];
    const mallorys = browser();
    const upstreamUrl = await upstreamUrlFor(f, mallorys, mallory, ms.authorization_url);
    // Alice's browser holds the binding cookie of her own flow, then consents through Mallory's.
    const alices = browser();
    await upstreamUrlFor(f, alices, alice, as.authorization_url);
    const aliceAccount = upstreamAccount('alice');
    const callback = await consent(alices, upstreamUrl, aliceAccount);
    expect((await alices.request('GET', callback)).status).toBe(403);
    // Nor with Alice's cookie value under the name of (a new start of) Mallory's flow.
    const again = await start(mallory, svc.name);
    const mallorys2 = browser();
    const callback2 = await consent(
      alices,
      await upstreamUrlFor(f, mallorys2, mallory, again.authorization_url),
      aliceAccount,
    );
    const [aliceCookie] = [...alices.cookies].filter(([k]) => k.startsWith('ap_connect_'));
    const [mallorysName] = [...mallorys2.cookies.keys()].filter((k) => k.startsWith('ap_connect_'));
    expect(mallorysName).not.toBe(aliceCookie[0]);
    const forged = await fetch(callback2, {
      redirect: 'manual',
      headers: { cookie: `${mallorysName}=${aliceCookie[1]}` },
    });
    expect(forged.status).toBe(403);
    await expectUntouched(mallory, svc.name, ms.connection_id, aliceAccount);
    expect((await storedConnection(f, as.connection_id)).row.status).toBe('pending');
  });

  it('an expired state is neither taken nor finished', async () => {
    const {
      svc,
      users: [user],
    } = await world(1);
    const expire = (id: string) =>
      f.ctx.db
        .update(connectionStates)
        .set({ expiresAt: new Date(Date.now() - 1000) })
        .where(eq(connectionStates.connectionId, id));
    const late = await start(user, svc.name);
    await expire(late.connection_id);
    const taken = await takeInBrowser(f, browser(), user, late.authorization_url);
    expect(taken.status).toBe(400);
    expect(taken.body).toMatchObject({ code: 'invalid_connection_state', detail: expect.stringMatching(/expired/) });

    const started = await start(user, svc.name);
    const b = browser();
    const callback = await consent(
      b,
      await upstreamUrlFor(f, b, user, started.authorization_url),
      upstreamAccount('u'),
    );
    await expire(started.connection_id);
    const res = await b.request('GET', callback);
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toMatchObject({
      code: 'invalid_connection_state',
      detail: expect.stringMatching(/expired/),
    });
    expect((await storedConnection(f, started.connection_id)).accessToken).toBeNull();
  });

  it('only the user who started a flow takes it: agents, anonymous callers and unknown states are refused', async () => {
    const {
      svc,
      users: [user],
    } = await world(1);
    const started = await start(user, svc.name);
    const take = (headers: Record<string, string>, state: string) =>
      fetch(`${base}/connections/authorize`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ state }),
      });
    const { headers: agentHeaders } = await agentToken(f.app, await createAgent(f.app, user));
    expect((await take(agentHeaders, started.state)).status).toBe(403);
    expect((await take({}, started.state)).status).toBe(401);
    expect((await take(user.headers, 'no-such-state')).status).toBe(404);
    const bad = await take(user.headers, '');
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { code: string }).code).toBe('validation_failed');
    const [row] = await f.ctx.db
      .select()
      .from(connectionStates)
      .where(eq(connectionStates.connectionId, started.connection_id));
    expect(row.bindingHash).toBeNull();
  });
});
