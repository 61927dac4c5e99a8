/**
 * MCP sessions (Streamable HTTP `Mcp-Session-Id`, MCP spec "Transports" §Session Management).
 *
 * The transport runs stateless on every instance; what a session needs to outlive one request
 * (the client's name, the exposure flag, the platform session `execute_tool` uses by default) is
 * a row of `mcp_sessions`, so any instance serves any session. A session belongs to the account
 * and agent that initialized it: anyone else presenting its id gets 404 (as for an unknown id).
 */
import { and, eq, isNull, lt } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { mcpSessions } from '../../db/schema/index.js';
import { AppError } from '../../http/errors.js';
import { SharedCache } from '../../lib/shared-cache.js';
import type { SessionActor } from '../../http/auth.js';
import { closeSession, createSession } from '../sessions/service.js';
import { newSecret } from '../../http/ids.js';

/** Header of the session id (MCP "Transports" §Session Management). */
export const SESSION_HEADER = 'mcp-session-id';

export type McpSessionRow = typeof mcpSessions.$inferSelect;

/** What the `initialize` request told us (MCP `InitializeRequest.params`). */
export interface McpClientInfo {
  name: string;
  version?: string;
  protocolVersion: string;
  /** The client declared URL-mode elicitation (`capabilities.elicitation.url`). */
  elicitationUrl?: boolean;
}

const ID = /^mcs_[\w-]{43}$/;

function cache(ctx: AppContext): SharedCache<McpSessionRow | null> {
  return SharedCache.of(ctx, { name: 'mcp.sessions', max: 10_000, ttlMs: 60_000 });
}

/** Open a session for `actor` (on `initialize`). Returns the row; its `id` goes in `Mcp-Session-Id`. */
export async function openMcpSession(
  ctx: AppContext,
  actor: SessionActor,
  client: McpClientInfo,
  exposeTools: boolean,
): Promise<McpSessionRow> {
  const [row] = await ctx.db
    .insert(mcpSessions)
    .values({
      id: newSecret('mcs'),
      userId: actor.accountId,
      agentId: actor.agentId,
      clientName: client.name.slice(0, 200) || 'MCP client',
      clientVersion: client.version?.slice(0, 100) ?? null,
      protocolVersion: client.protocolVersion.slice(0, 40),
      elicitationUrl: client.elicitationUrl === true,
      exposeTools,
      expiresAt: new Date(Date.now() + ctx.config.mcp.sessionTtlSeconds * 1000),
    })
    .returning();
  return row;
}

/**
 * The live session `id` of `actor`. @throws AppError not_found (unknown, expired, deleted, or
 * another account's or agent's session: MCP answers 404 and the client initializes again)
 */
export async function findMcpSession(ctx: AppContext, actor: SessionActor, id: string): Promise<McpSessionRow> {
  const row = ID.test(id)
    ? await cache(ctx).get(id, async () => {
        const [r] = await ctx.db.select().from(mcpSessions).where(eq(mcpSessions.id, id));
        return r ?? null;
      })
    : null;
  if (
    !row ||
    row.userId !== actor.accountId ||
    row.agentId !== actor.agentId ||
    row.expiresAt.getTime() <= Date.now()
  ) {
    throw new AppError('not_found', 'MCP session not found or expired; initialize a new one');
  }
  return row;
}

/** End a session (`DELETE /mcp`). @throws AppError not_found as {@link findMcpSession} */
export async function closeMcpSession(ctx: AppContext, actor: SessionActor, id: string): Promise<void> {
  const row = await findMcpSession(ctx, actor, id);
  await ctx.db.delete(mcpSessions).where(eq(mcpSessions.id, row.id));
  await cache(ctx).invalidate(row.id);
}

/**
 * The platform session `execute_tool` uses when no `session_id` is given: created on first use,
 * named after the client (`clientInfo.name`). Concurrent first calls agree on one session (the
 * conditional UPDATE decides; the loser's extra session is closed at once).
 */
export async function platformSessionOf(ctx: AppContext, actor: SessionActor, session: McpSessionRow): Promise<string> {
  if (session.platformSessionId) return session.platformSessionId;
  const created = await createSession(ctx, actor, {
    name: session.clientName,
    metadata: { mcp_client: session.clientName, mcp_client_version: session.clientVersion },
  });
  const [won] = await ctx.db
    .update(mcpSessions)
    .set({ platformSessionId: created.id })
    .where(and(eq(mcpSessions.id, session.id), isNull(mcpSessions.platformSessionId)))
    .returning({ id: mcpSessions.platformSessionId });
  await cache(ctx).invalidate(session.id);
  if (won?.id) return won.id;
  const [current] = await ctx.db
    .select({ id: mcpSessions.platformSessionId })
    .from(mcpSessions)
    .where(eq(mcpSessions.id, session.id));
  await closeSession(ctx, actor, created.id);
  if (!current?.id) throw new AppError('not_found', 'MCP session not found or expired; initialize a new one');
  return current.id;
}

/** Delete expired sessions (periodic). Returns how many. */
export async function purgeExpiredMcpSessions(ctx: AppContext): Promise<number> {
  const gone = await ctx.db
    .delete(mcpSessions)
    .where(lt(mcpSessions.expiresAt, new Date()))
    .returning({ id: mcpSessions.id });
  return gone.length;
}
