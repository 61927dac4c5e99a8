/**
 * Connected accounts (docs/connections.md): each user's own OAuth 2.0 grant to an
 * upstream service whose auth type is `oauth2`, optionally made for one of the user's agents.
 *
 * Flow (RFC 6749 §4.1 + PKCE, RFC 7636):
 * 1. {@link startConnection} — `POST /connections`: the connection row (status `pending` the first
 *    time; an existing one is reused, so reconnecting keeps its id), a single-use `state` stored
 *    hashed and bound to the user and the connection (10 minutes), a PKCE verifier (encrypted), and
 *    the upstream's authorization URL with `redirect_uri` = `PUBLIC_URL/connections/callback`.
 * 2. The user opens the answer's `authorization_url` — the platform's page, not the upstream's — in
 *    a browser signed in to the platform as themselves; it takes the flow (`binding.ts`: binding
 *    cookie) and goes on to the upstream, where the user consents; the upstream redirects the
 *    browser to the callback.
 * 3. {@link completeConnection} — `GET /connections/callback`: the browser must carry the flow's
 *    binding cookie (a link opened by anyone else is refused and nothing is stored), the state is
 *    consumed (single use, bound to the user and connection), the code is exchanged with
 *    `openid-client` (state and RFC 9207 `iss` checked), tokens are stored AES-256-GCM encrypted,
 *    status `active`.
 *
 * Execution uses the connection through `grant.ts`.
 */
import { and, eq, isNull, lt, sql } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { connectionStates, connections } from '../../db/schema/index.js';
import { AppError, notFound } from '../../http/errors.js';
import { consumeState } from '../../http/oauth-state.js';
import { hashSecret, iso, newId } from '../../http/ids.js';
import { decodeCursor, mapPage, selectPage, type Page } from '../../http/pagination.js';
import { decryptSecret, encryptSecret } from '../../lib/secrets.js';
import {
  authorizationUrl,
  exchangeCode,
  newPkce,
  newState,
  oauth2Configuration,
  revokeToken,
  OAuthUpstreamError,
  type OAuth2Client,
  type UpstreamTokens,
} from '../../upstream/oauth2.js';
import { getAgentForAccount } from '../agents/service.js';
import { consoleConnectionsUri, redirectUriProblem } from '../identity/redirect-uris.js';
import { oauth2ClientOf } from '../registry/oauth2.js';
import { getServiceSummary, type ServiceRow } from '../registry/executable.js';
import { getServiceRow } from '../registry/service.js';
import { checkBinding } from './binding.js';
import type { CallbackInput, ConnectionView, CreateConnectionInput } from './schemas.js';

export type ConnectionRow = typeof connections.$inferSelect;

/** Lifetime of a connection `state`, ms (as for login states). */
export const CONNECTION_STATE_TTL_MS = 10 * 60_000;

/** The platform's redirect URI for every upstream (register it at the upstream's client). */
export function connectionCallbackUri(ctx: AppContext): string {
  return `${ctx.config.publicUrl.replace(/\/+$/, '')}/connections/callback`;
}

/**
 * The platform page (the console's connections page, `?state=`) a user opens to take a flow: it
 * needs the platform browser session of the user who started it, then binds that browser and goes
 * to the upstream's consent page.
 */
export function browserAuthorizationUri(ctx: AppContext, state: string): string {
  return `${consoleConnectionsUri(ctx.config.publicUrl.replace(/\/+$/, ''))}?${new URLSearchParams({ state })}`;
}

/** Map an authorization-server failure to the platform's error. */
export function oauthProblem(err: unknown): AppError {
  if (!(err instanceof OAuthUpstreamError))
    return err instanceof AppError ? err : new AppError('upstream_error', String((err as Error)?.message ?? err));
  if (err.kind === 'unavailable' || err.kind === 'client') return new AppError('upstream_error', err.message);
  return new AppError('invalid_grant', err.message);
}

/** The connectable (oauth2) service `ref` as `accountId` sees it. @throws AppError not_found | validation_failed */
async function connectableService(
  ctx: AppContext,
  accountId: string,
  ref: string,
): Promise<{ row: ServiceRow; client: OAuth2Client }> {
  const row = await getServiceRow(ctx, ref);
  if (row.ownerId !== accountId && row.status !== 'published') throw notFound('Service');
  const client = oauth2ClientOf(ctx, row);
  if (!client) {
    throw new AppError(
      'validation_failed',
      `Service "${row.name}" does not use oauth2 auth: there is no account to connect`,
      {
        errors: [{ in: 'body', pointer: '/service', message: 'has no oauth2 auth' }],
      },
    );
  }
  return { row, client };
}

/**
 * A fresh authorization request for `connection`: single-use state (bound to the user and the
 * connection), PKCE when the service uses it, and the upstream's authorization URL, kept
 * (encrypted) until the user's signed-in browser takes the flow (`binding.ts`). The answer's
 * `authorization_url` is the platform's page that does that ({@link browserAuthorizationUri}),
 * never the upstream's: whoever else opens it is refused.
 * @throws AppError upstream_error when the upstream's metadata cannot be discovered
 */
export async function beginAuthorization(
  ctx: AppContext,
  userId: string,
  connectionId: string,
  client: OAuth2Client,
  returnTo: string | null,
): Promise<{ authorization_url: string; state: string; expires_at: string }> {
  const config = await oauth2Configuration(ctx, client).catch((err: unknown) => {
    throw oauthProblem(err);
  });
  const state = newState();
  const pkce = client.settings.pkce ? await newPkce() : null;
  const expiresAt = new Date(Date.now() + CONNECTION_STATE_TTL_MS);
  const upstreamUrl = authorizationUrl(config, client.settings, {
    redirectUri: connectionCallbackUri(ctx),
    state,
    codeChallenge: pkce?.challenge ?? null,
  });
  await ctx.db.insert(connectionStates).values({
    stateHash: hashSecret(state),
    connectionId,
    userId,
    codeVerifier: pkce ? encryptSecret(ctx, pkce.verifier) : null,
    returnTo,
    authorizationUrl: encryptSecret(ctx, upstreamUrl),
    expiresAt,
  });
  return { authorization_url: browserAuthorizationUri(ctx, state), state, expires_at: expiresAt.toISOString() };
}

/** The connection row of (user, service, agent | own), created `pending` when missing. */
async function connectionRowFor(
  ctx: AppContext,
  userId: string,
  serviceId: string,
  agentId: string | null,
): Promise<ConnectionRow> {
  const where = and(
    eq(connections.userId, userId),
    eq(connections.serviceId, serviceId),
    agentId ? eq(connections.agentId, agentId) : isNull(connections.agentId),
  );
  const [existing] = await ctx.db.select().from(connections).where(where).limit(1);
  if (existing) return existing;
  // A concurrent start may insert the same (user, service, agent): the unique index keeps one.
  const [created] = await ctx.db
    .insert(connections)
    .values({ id: newId('con'), userId, serviceId, agentId })
    .onConflictDoNothing()
    .returning();
  if (created) return created;
  const [raced] = await ctx.db.select().from(connections).where(where).limit(1);
  return raced;
}

/**
 * `POST /connections`: start connecting `userId`'s account (or one of its agents') at the upstream
 * of an oauth2 service. Reuses the existing connection (reconnect: tokens are replaced at the callback).
 * @throws AppError not_found (service not visible, agent not the caller's), validation_failed
 *   (not an oauth2 service, `return_to` not allowed), upstream_error (discovery failed)
 */
export async function startConnection(ctx: AppContext, userId: string, input: CreateConnectionInput) {
  if (input.return_to !== undefined) {
    const problem = redirectUriProblem(input.return_to, ctx.config.auth.redirectUris, [
      consoleConnectionsUri(ctx.config.publicUrl),
    ]);
    if (problem)
      throw new AppError('validation_failed', `return_to: ${problem.replace(/^redirect_uri /, '')}`, {
        errors: [{ in: 'body', pointer: '/return_to', message: problem }],
      });
  }
  const { row: service, client } = await connectableService(ctx, userId, input.service);
  if (input.agent_id !== undefined) await getAgentForAccount(ctx, userId, input.agent_id);
  const connection = await connectionRowFor(ctx, userId, service.id, input.agent_id ?? null);
  const started = await beginAuthorization(ctx, userId, connection.id, client, input.return_to ?? null);
  return { connection_id: connection.id, ...started };
}

/** Outcome of the callback: where the browser goes next. */
export interface CallbackOutcome {
  connectionId: string;
  service: string;
  status: ConnectionView['status'];
  returnTo: string | null;
  /** The binding cookie to clear (the flow is over). */
  bindingCookie: string | null;
  /** Set when the authorization failed (also sent to `returnTo` as `error`/`error_description`). */
  error?: AppError;
}

/**
 * `GET /connections/callback`: check that this browser took the flow (its binding cookie,
 * `binding.ts`), consume the state, exchange the code, store the tokens.
 * @param cookies the request's cookies
 * @throws AppError connection_not_bound (403: not the browser of the user who started it; nothing
 *   is exchanged or stored, the state is spent), invalid_connection_state (unknown, used or expired state)
 */
export async function completeConnection(
  ctx: AppContext,
  input: CallbackInput,
  cookies: Record<string, string | undefined>,
): Promise<CallbackOutcome> {
  const bindingCookie = await checkBinding(ctx, input.state, cookies);
  const state = await consumeState(ctx.db, connectionStates, input.state, {
    code: 'invalid_connection_state',
    restart: 'start again with POST /connections',
  });
  const [connection] = await ctx.db
    .select()
    .from(connections)
    .where(and(eq(connections.id, state.connectionId), eq(connections.userId, state.userId)))
    .limit(1);
  if (!connection)
    throw new AppError(
      'invalid_connection_state',
      'the connection of this state was deleted; start again with POST /connections',
    );
  const service = await getServiceRow(ctx, connection.serviceId);
  const client = oauth2ClientOf(ctx, service);
  const base = { connectionId: connection.id, service: service.name, returnTo: state.returnTo, bindingCookie };
  if (!client)
    return fail(
      ctx,
      connection,
      base,
      new AppError('invalid_state', `Service "${service.name}" no longer uses oauth2 auth`),
    );

  const callbackUrl = new URL(connectionCallbackUri(ctx));
  for (const [k, v] of Object.entries(input)) if (typeof v === 'string') callbackUrl.searchParams.set(k, v);
  let tokens: UpstreamTokens;
  try {
    tokens = await exchangeCode(ctx, client, callbackUrl, {
      state: input.state,
      codeVerifier: state.codeVerifier ? decryptSecret(ctx, state.codeVerifier) : null,
    });
  } catch (err) {
    return fail(ctx, connection, base, oauthProblem(err));
  }
  const now = new Date();
  await ctx.db
    .update(connections)
    .set({
      status: 'active',
      scopes: tokens.scopes ?? client.settings.scopes,
      accessToken: encryptSecret(ctx, tokens.accessToken),
      // A re-authorization answered without a refresh token keeps the one it has.
      ...(tokens.refreshToken ? { refreshToken: encryptSecret(ctx, tokens.refreshToken) } : {}),
      expiresAt: tokens.expiresIn !== undefined ? new Date(now.getTime() + tokens.expiresIn * 1000) : null,
      lastError: null,
      updatedAt: now,
    })
    .where(eq(connections.id, connection.id));
  ctx.log.info({ connection_id: connection.id, service: service.name }, 'connection authorized');
  return { ...base, status: 'active' };
}

/** A failed authorization: a `pending` connection becomes `error`; an existing grant is left as it was. */
async function fail(
  ctx: AppContext,
  c: ConnectionRow,
  base: Omit<CallbackOutcome, 'status'>,
  error: AppError,
): Promise<CallbackOutcome> {
  const status = c.status === 'pending' ? 'error' : (c.status as ConnectionView['status']);
  await ctx.db
    .update(connections)
    .set({ status, lastError: error.message.slice(0, 1000), updatedAt: new Date() })
    .where(eq(connections.id, c.id));
  ctx.log.info({ connection_id: c.id, code: error.code }, 'connection authorization failed');
  return { ...base, status, error };
}

function view(c: ConnectionRow, serviceName: string): ConnectionView {
  return {
    id: c.id,
    service: { id: c.serviceId, name: serviceName },
    agent_id: c.agentId,
    status: c.status as ConnectionView['status'],
    scopes: c.scopes,
    expires_at: iso(c.expiresAt),
    last_used_at: iso(c.lastUsedAt),
    last_refreshed_at: iso(c.lastRefreshedAt),
    last_error: c.lastError,
    created_at: c.createdAt.toISOString(),
    updated_at: c.updatedAt.toISOString(),
  };
}

async function serviceNames(ctx: AppContext, ids: string[]): Promise<Map<string, string>> {
  const unique = [...new Set(ids)];
  const found = await Promise.all(unique.map((id) => getServiceSummary(ctx, id)));
  return new Map(unique.map((id, i) => [id, found[i]?.name ?? id]));
}

/** `GET /connections`: the user's connections, newest first; `service` filters by id or name. */
export async function listConnections(
  ctx: AppContext,
  userId: string,
  q: { limit?: number; cursor?: string; service?: string },
): Promise<Page<ConnectionView>> {
  decodeCursor(q.cursor); // a malformed cursor is refused even when the service filter matches nothing
  let serviceId: string | undefined;
  if (q.service !== undefined) {
    const s = await getServiceSummary(ctx, q.service);
    if (!s) return { data: [], next_cursor: null };
    serviceId = s.id;
  }
  const rows = await selectPage(ctx.db, connections, q, [
    eq(connections.userId, userId),
    serviceId ? eq(connections.serviceId, serviceId) : undefined,
  ]);
  const names = await serviceNames(
    ctx,
    rows.data.map((r) => r.serviceId),
  );
  return mapPage(rows, (r) => view(r, names.get(r.serviceId)!));
}

/** The user's connection `id`. @throws AppError not_found (also for other accounts' connections) */
async function ownConnection(ctx: AppContext, userId: string, id: string): Promise<ConnectionRow> {
  const [c] = await ctx.db
    .select()
    .from(connections)
    .where(and(eq(connections.id, id), eq(connections.userId, userId)))
    .limit(1);
  if (!c) throw notFound('Connection');
  return c;
}

/** `GET /connections/:id`. @throws AppError not_found */
export async function getConnection(ctx: AppContext, userId: string, id: string): Promise<ConnectionView> {
  const c = await ownConnection(ctx, userId, id);
  return view(c, (await serviceNames(ctx, [c.serviceId])).get(c.serviceId)!);
}

/**
 * `DELETE /connections/:id`: revoke the grant at the upstream (RFC 7009: the refresh token, which
 * revokes the grant, else the access token) when it has a revocation endpoint, then delete.
 * @throws AppError not_found
 */
export async function deleteConnection(ctx: AppContext, userId: string, id: string) {
  const c = await ownConnection(ctx, userId, id);
  const client = oauth2ClientOf(ctx, await getServiceRow(ctx, c.serviceId)); // services cascade to their connections
  let upstream: 'revoked' | 'not_supported' | 'failed' = 'not_supported';
  const token = c.refreshToken ?? c.accessToken;
  if (client && token) {
    try {
      upstream = (await revokeToken(
        ctx,
        client,
        decryptSecret(ctx, token),
        c.refreshToken ? 'refresh_token' : 'access_token',
      ))
        ? 'revoked'
        : 'not_supported';
    } catch (err) {
      upstream = 'failed';
      ctx.log.warn({ connection_id: c.id, err: (err as Error).message }, 'upstream token revocation failed');
    }
  }
  await ctx.db.delete(connections).where(and(eq(connections.id, c.id), eq(connections.userId, userId)));
  return { id: c.id, status: 'revoked' as const, upstream_revocation: upstream };
}

/** Delete connection states that expired more than an hour ago; runs every 10 minutes until shutdown. */
export function startConnectionStatePurge(ctx: AppContext): void {
  const timer = setInterval(() => {
    ctx.db
      .delete(connectionStates)
      .where(lt(connectionStates.expiresAt, sql`now() - interval '1 hour'`))
      .catch((err: Error) => ctx.log.warn({ err: err.message }, 'connection state purge failed'));
  }, 10 * 60_000);
  timer.unref();
  ctx.onClose.push(() => clearInterval(timer));
}
