/**
 * The execution hook of connected accounts (docs/connections.md "At execution").
 *
 * Every face (REST execute, the MCP server, the agent runtime) runs tools through the one execute
 * function, which calls {@link withCallerGrant} before it builds the upstream request and
 * {@link grantAfterUnauthorized} after an upstream 401. For services whose auth is not `oauth2`
 * both are no-ops; for `oauth2` services the tool comes back with the caller's own access token as
 * its upstream credential (`bearer`, or the `access_token` query parameter), so request building
 * needs no knowledge of OAuth.
 *
 * Which connection: the caller's account (an agent's owner) for the service — the one made for the
 * calling agent when there is one, else the account's own. A token within {@link REFRESH_MARGIN_MS}
 * of expiry is refreshed first. Refreshes of one connection are serialised across instances by a
 * row lock (`SELECT … FOR UPDATE` in the refreshing transaction); whoever gets the lock second sees
 * the new token and uses it instead of refreshing again.
 */
import { and, eq, isNull, or, sql } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { connections } from '../../db/schema/index.js';
import { AppError } from '../../http/errors.js';
import { decryptSecret, encryptSecret } from '../../lib/secrets.js';
import { refreshTokens, OAuthUpstreamError, type OAuth2Client, type UpstreamTokens } from '../../upstream/oauth2.js';
import type { ExecutableTool } from '../registry/executable.js';
import { beginAuthorization, type ConnectionRow } from './service.js';

/** A token that expires within this many ms is refreshed before use (60 s). */
export const REFRESH_MARGIN_MS = 60_000;
/** `last_used_at` is written at most this often per connection (one UPDATE, not one per execution). */
const LAST_USED_GRANULARITY_MS = 60_000;

/** Who executes: the account (agents act for their owner) and the calling agent, if any. */
export interface GrantActor {
  accountId: string;
  agentId: string | null;
}

/** A tool ready to call, and the connection whose token it carries (null: not an oauth2 service). */
export interface CallerGrant {
  tool: ExecutableTool;
  connection: { id: string; client: OAuth2Client; accessBlob: string } | null;
}

function nearExpiry(row: ConnectionRow): boolean {
  return row.expiresAt !== null && row.expiresAt.getTime() - Date.now() < REFRESH_MARGIN_MS;
}

function grantOf(ctx: AppContext, t: ExecutableTool, client: OAuth2Client, row: ConnectionRow): CallerGrant {
  const token = decryptSecret(ctx, row.accessToken!);
  const upstreamAuth: ExecutableTool['upstreamAuth'] =
    client.settings.token_placement === 'query'
      ? { type: 'query', name: 'access_token', secret: token }
      : { type: 'bearer', secret: token };
  return { tool: { ...t, upstreamAuth }, connection: { id: row.id, client, accessBlob: row.accessToken! } };
}

/**
 * The 409 `connection_required` problem: how to connect (no connection), or a fresh authorization
 * URL that reconnects the existing one — the platform's page, which only the account's user can
 * take in their signed-in browser (an agent passes it on to its owner).
 */
async function connectionRequired(
  ctx: AppContext,
  actor: GrantActor,
  t: ExecutableTool,
  client: OAuth2Client,
  row: ConnectionRow | null,
): Promise<AppError> {
  const connect = {
    method: 'POST',
    path: '/connections',
    body: { service: t.service.name, ...(row?.agentId ? { agent_id: row.agentId } : {}) },
  };
  if (!row || !row.accessToken) {
    const who = actor.agentId ? "This agent's owner has" : 'You have';
    return new AppError(
      'connection_required',
      `${who} not connected an account at ${t.service.name}: POST /connections {"service":"${t.service.name}"} and open the authorization_url it returns`,
      {
        extra: {
          service: t.service.name,
          ...(row ? { connection_id: row.id, connection_status: row.status } : {}),
          connect,
        },
      },
    );
  }
  let reconnect: { authorization_url: string; expires_at: string } | undefined;
  try {
    const started = await beginAuthorization(ctx, actor.accountId, row.id, client, null);
    reconnect = { authorization_url: started.authorization_url, expires_at: started.expires_at };
  } catch (err) {
    ctx.log.warn({ connection_id: row.id, err: (err as Error).message }, 'could not prepare a reconnect URL');
  }
  return new AppError(
    'connection_required',
    `The connection to ${t.service.name} is ${row.status}${row.lastError ? ` (${row.lastError})` : ''}: the user must authorize again${reconnect ? ' at authorization_url' : ''}`,
    {
      extra: {
        service: t.service.name,
        connection_id: row.id,
        connection_status: row.status,
        ...(reconnect ?? {}),
        connect,
      },
    },
  );
}

/**
 * The tool to call for `actor`: unchanged for services without oauth2 auth; otherwise carrying the
 * caller's access token (refreshed first when within 60 s of expiry).
 * @throws AppError connection_required (409: no usable connection; with the reconnect URL when one
 *   exists), upstream_error (502: the token endpoint is unreachable and the token has expired)
 */
export async function withCallerGrant(ctx: AppContext, actor: GrantActor, t: ExecutableTool): Promise<CallerGrant> {
  const client = t.upstreamAuth.type === 'oauth2' ? t.upstreamAuth.oauth2 : undefined;
  if (!client) return { tool: t, connection: null };
  // The agent's own connection wins over the account's.
  const [found] = await ctx.db
    .select()
    .from(connections)
    .where(
      and(
        eq(connections.userId, actor.accountId),
        eq(connections.serviceId, t.service.id),
        actor.agentId
          ? or(eq(connections.agentId, actor.agentId), isNull(connections.agentId))
          : isNull(connections.agentId),
      ),
    )
    .orderBy(sql`${connections.agentId} is null`)
    .limit(1);
  let row = found;
  if (!row || row.status !== 'active' || !row.accessToken)
    throw await connectionRequired(ctx, actor, t, client, row ?? null);
  if (nearExpiry(row)) row = await refreshOrThrow(ctx, actor, t, client, row, null);
  if (!row.lastUsedAt || Date.now() - row.lastUsedAt.getTime() > LAST_USED_GRANULARITY_MS) {
    await ctx.db.update(connections).set({ lastUsedAt: new Date() }).where(eq(connections.id, row.id));
  }
  return grantOf(ctx, t, client, row);
}

/**
 * After an upstream answer with status `httpStatus`: for a 401 on a connection's token, refresh
 * once (unless another execution already did) and return the grant to retry with; null when there
 * is nothing to retry.
 * @throws AppError connection_required (the refresh failed: the connection is now `expired`), upstream_error
 */
export async function grantAfterUnauthorized(
  ctx: AppContext,
  actor: GrantActor,
  grant: CallerGrant,
  httpStatus: number | null,
): Promise<CallerGrant | null> {
  if (httpStatus !== 401 || !grant.connection) return null;
  const { id, client, accessBlob } = grant.connection;
  const [row] = await ctx.db.select().from(connections).where(eq(connections.id, id)).limit(1);
  if (!row) return null;
  const fresh = await refreshOrThrow(ctx, actor, grant.tool, client, row, accessBlob);
  return grantOf(ctx, grant.tool, client, fresh);
}

type RefreshResult =
  | { kind: 'ok'; row: ConnectionRow }
  | { kind: 'unusable'; row: ConnectionRow; expired?: 'expired' | 'error' }
  | { kind: 'unavailable'; row: ConnectionRow; error: OAuthUpstreamError };

/** {@link refreshLocked}, with its failures turned into the execution's errors. */
async function refreshOrThrow(
  ctx: AppContext,
  actor: GrantActor,
  t: ExecutableTool,
  client: OAuth2Client,
  row: ConnectionRow,
  staleBlob: string | null,
): Promise<ConnectionRow> {
  const r = await refreshLocked(ctx, client, row.id, staleBlob);
  if (r.kind === 'ok') return r.row;
  // Committed now: tell subscribers (webhooks) once, by the execution that marked it.
  if (r.kind === 'unusable' && r.expired) {
    const { id: connectionId, userId: accountId, serviceId, lastError } = r.row;
    ctx.events.emit('connection.expired', {
      connectionId,
      accountId,
      serviceId,
      status: r.expired,
      reason: lastError ?? '',
    });
  }
  if (r.kind === 'unusable') throw await connectionRequired(ctx, actor, t, client, r.row);
  // Token endpoint unreachable: a token that has not actually expired is still worth a try.
  if (staleBlob === null && r.row.expiresAt && r.row.expiresAt.getTime() > Date.now()) return r.row;
  throw new AppError(
    'upstream_error',
    `The token of the connection to ${t.service.name} could not be refreshed: ${r.error.message}`,
  );
}

/**
 * Refresh connection `id` under its row lock. Skipped when, once the lock is held, the token no
 * longer needs it (another execution refreshed: not near expiry, or — after a 401 — no longer the
 * `staleBlob` that was refused). A refused refresh (RFC 6749 §5.2, e.g. `invalid_grant`) marks
 * the connection `expired` (`error` when the service's client is refused); a transport failure
 * changes nothing. The HTTP exchange runs inside the transaction so nobody else refreshes meanwhile.
 */
async function refreshLocked(
  ctx: AppContext,
  client: OAuth2Client,
  id: string,
  staleBlob: string | null,
): Promise<RefreshResult> {
  return ctx.db.transaction(async (tx) => {
    const [row] = await tx.select().from(connections).where(eq(connections.id, id)).for('update');
    if (!row || row.status !== 'active' || !row.accessToken) return { kind: 'unusable', row };
    if (staleBlob === null ? !nearExpiry(row) : row.accessToken !== staleBlob) return { kind: 'ok', row };
    let tokens: UpstreamTokens;
    try {
      if (!row.refreshToken) throw new OAuthUpstreamError('grant', 'The upstream issued no refresh token');
      tokens = await refreshTokens(ctx, client, decryptSecret(ctx, row.refreshToken));
    } catch (err) {
      const e = err instanceof OAuthUpstreamError ? err : new OAuthUpstreamError('unavailable', (err as Error).message);
      if (e.kind === 'unavailable') return { kind: 'unavailable', row, error: e };
      const status = e.kind === 'client' ? 'error' : 'expired';
      const [marked] = await tx
        .update(connections)
        .set({ status, lastError: e.message.slice(0, 1000), updatedAt: new Date() })
        .where(eq(connections.id, id))
        .returning();
      ctx.log.info({ connection_id: id, status, code: e.error }, 'connection refresh refused');
      return { kind: 'unusable', row: marked, expired: status };
    }
    const now = new Date();
    const [updated] = await tx
      .update(connections)
      .set({
        accessToken: encryptSecret(ctx, tokens.accessToken),
        // Rotation (OAuth 2.0 Security BCP §4.14): keep the old refresh token only when no new one came.
        ...(tokens.refreshToken ? { refreshToken: encryptSecret(ctx, tokens.refreshToken) } : {}),
        expiresAt: tokens.expiresIn !== undefined ? new Date(now.getTime() + tokens.expiresIn * 1000) : null,
        ...(tokens.scopes ? { scopes: tokens.scopes } : {}),
        lastRefreshedAt: now,
        lastError: null,
        updatedAt: now,
      })
      .where(eq(connections.id, id))
      .returning();
    ctx.log.info({ connection_id: id }, 'connection token refreshed');
    return { kind: 'ok', row: updated };
  });
}
