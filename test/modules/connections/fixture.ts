/**
 * Shared setup of the connections tests: an app, the real upstream (authorization server + notes
 * API, `test/helpers/oauth-upstream.ts`), an oauth2 service wrapping the notes API, and the steps
 * a user takes (connect through the browser, open a session, execute).
 */
import { randomBytes } from 'node:crypto';
import { eq } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import { afterAll, expect } from 'vitest';
import type { AppContext } from '../../../src/context.js';
import { connections } from '../../../src/db/schema/index.js';
import { decryptSecret } from '../../../src/lib/secrets.js';
import { setServiceStatus } from '../../../src/modules/registry/service.js';
import { call, setupApp, type TestUser } from '../../helpers/app.js';
import type { Browser } from '../../helpers/browser.js';
import { connectionBrowser, startOAuthUpstream, type OAuthUpstream } from '../../helpers/oauth-upstream.js';

export const RETURN_TO = 'http://127.0.0.1:7999/connected';

export interface ConnectionsFixture {
  app: FastifyInstance;
  ctx: AppContext;
  up: OAuthUpstream;
  callbackUri: string;
}

/** App + upstream for one test file (both closed after it). */
export async function setupConnections(env: Record<string, string | undefined> = {}): Promise<ConnectionsFixture> {
  const { app, ctx, config } = await setupApp(env);
  const callbackUri = `${config.publicUrl}/connections/callback`;
  const up = await startOAuthUpstream({ redirectUri: callbackUri });
  afterAll(() => up.close());
  return { app, ctx, up, callbackUri };
}

/** Register (and publish) an oauth2 service over the notes API, owned by `owner`. */
export async function registerNotesService(
  f: ConnectionsFixture,
  owner: TestUser,
  auth: Record<string, unknown> = {},
): Promise<{ id: string; name: string }> {
  const name = `notes-${randomBytes(4).toString('hex')}`;
  const { body } = await call(
    f.app,
    {
      method: 'POST',
      url: '/owner/services',
      headers: owner.headers,
      payload: {
        name,
        description: 'Notes of the signed-in upstream account',
        base_url: f.up.apiUrl,
        auth: {
          type: 'oauth2',
          issuer: f.up.issuer,
          client_id: f.up.clientId,
          client_secret: f.up.clientSecret,
          scopes: ['openid', 'offline_access', 'notes:read'],
          resource: f.up.resource,
          ...auth,
        },
        tools: [
          {
            name: 'list_notes',
            description: 'List my notes',
            method: 'GET',
            path: '/notes',
            input_schema: { type: 'object', properties: {} },
          },
        ],
      },
    },
    201,
  );
  await setServiceStatus(f.ctx, body.id, 'published');
  return { id: body.id, name };
}

/**
 * What the console does at `authorization_url` (the platform's connections page with `?state=`) in
 * a browser signed in as `user`: `POST /connections/authorize` with the user's credential from that
 * browser (its cookie jar gets the flow's binding cookie). Returns the answer (status and body).
 */
export async function takeInBrowser(f: ConnectionsFixture, browser: Browser, user: TestUser, authorizationUrl: string) {
  const page = new URL(authorizationUrl);
  expect(`${page.origin}${page.pathname}`).toBe(`${f.ctx.config.publicUrl}/console/connections`);
  const res = await browser.request('POST', `${f.ctx.config.publicUrl}/connections/authorize`, {
    headers: { ...user.headers, 'content-type': 'application/json' },
    body: JSON.stringify({ state: page.searchParams.get('state') }),
  });
  return { status: res.status, body: JSON.parse(res.body), setCookie: res.headers['set-cookie'] };
}

/** {@link takeInBrowser}, which must succeed: the upstream's consent URL. */
export async function upstreamUrlFor(
  f: ConnectionsFixture,
  browser: Browser,
  user: TestUser,
  authorizationUrl: string,
): Promise<string> {
  const taken = await takeInBrowser(f, browser, user, authorizationUrl);
  expect(taken.status, JSON.stringify(taken.body)).toBe(200);
  return taken.body.authorization_url;
}

/** `POST /connections` and the user's browser's trip through the platform's page and the upstream's consent form; returns where the browser landed. */
export async function connect(
  f: ConnectionsFixture,
  user: TestUser,
  service: string,
  upstreamAccount: string,
  extra: Record<string, unknown> = {},
) {
  const { body: started } = await call(
    f.app,
    {
      method: 'POST',
      url: '/connections',
      headers: user.headers,
      payload: { service, return_to: RETURN_TO, ...extra },
    },
    201,
  );
  const browser = connectionBrowser(f.app, f.up);
  const upstreamUrl = await upstreamUrlFor(f, browser, user, started.authorization_url);
  const landed = await browser.login(upstreamUrl, RETURN_TO, { email: upstreamAccount, password: 'x' });
  expect(landed.searchParams.get('connection_id')).toBe(started.connection_id);
  expect(landed.searchParams.get('status')).toBe('active');
  return { started, landed, upstreamUrl };
}

/** A new session of the caller (user or agent headers). */
export async function newSession(
  app: FastifyInstance,
  headers: Record<string, string>,
  body: Record<string, unknown> = {},
): Promise<string> {
  const { body: s } = await call(app, { method: 'POST', url: '/v1/agents', headers, payload: body }, 201);
  return s.id;
}

/** Execute `list_notes` of `service` in `sessionId`. */
export function executeNotes(
  app: FastifyInstance,
  headers: Record<string, string>,
  sessionId: string,
  service: string,
) {
  return app.inject({
    method: 'POST',
    url: `/v1/agents/${sessionId}/execute`,
    headers,
    payload: { service, tool: 'list_notes', arguments: {} },
  });
}

/** The stored row of a connection, tokens decrypted (tests only look; the API never shows them). */
export async function storedConnection(f: ConnectionsFixture, id: string) {
  const [row] = await f.ctx.db.select().from(connections).where(eq(connections.id, id));
  return {
    row,
    accessToken: row.accessToken ? decryptSecret(f.ctx, row.accessToken) : null,
    refreshToken: row.refreshToken ? decryptSecret(f.ctx, row.refreshToken) : null,
  };
}

/** Move a connection's access-token expiry (stands for time passing: the upstream token itself is unchanged). */
export async function setExpiry(f: ConnectionsFixture, id: string, inMs: number): Promise<void> {
  await f.ctx.db
    .update(connections)
    .set({ expiresAt: new Date(Date.now() + inMs) })
    .where(eq(connections.id, id));
}
