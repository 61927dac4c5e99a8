/**
 * Sessions: the caller's containers of tool executions (spec "Executor (sessions)").
 * Every query is scoped to the owning account; another account's session is "not found".
 *
 * Who may touch a session ({@link SessionActor}): a user acts for its own account; an agent
 * (client_credentials token) acts for its owner's account (`accountOf`) and sees only the sessions
 * that carry its own `agent_id` — the sessions it created or that its owner created for it.
 */
import { and, desc, eq, sql } from 'drizzle-orm';
import type { Static } from 'typebox';
import type { AppContext } from '../../context.js';
import { execRows } from '../../db/client.js';
import { executions, sessions } from '../../db/schema/index.js';
import type { SessionActor } from '../../http/auth.js';
import { AppError, notFound } from '../../http/errors.js';
import { iso, newId } from '../../http/ids.js';
import { keyset, mapPage, selectPage, toPage, type Page } from '../../http/pagination.js';
import { SharedCache } from '../../lib/shared-cache.js';
import { getAgentForAccount } from '../agents/service.js';
import type { ExecutionSchema, SessionListQuery, SessionSchema } from './schemas.js';

/** Kept for `search/service.ts` (owned by another change); new code imports it from `http/auth.ts`. */
export { actorOf } from '../../http/auth.js';

export type SessionRow = typeof sessions.$inferSelect;
export type ExecutionRow = typeof executions.$inferSelect;

/** The session record of the API (`SessionSchema`). */
export type SessionView = Static<typeof SessionSchema>;

/** One tool execution (DESIGN.md §7; `ExecutionSchema`). */
export type ExecutionView = Static<typeof ExecutionSchema>;

/** How many executions `GET /v1/agents/:id` embeds (newest first). */
export const RECENT_EXECUTIONS = 20;

export function sessionView(s: SessionRow): SessionView {
  return {
    id: s.id,
    name: s.name,
    agent_id: s.agentId,
    status: s.status as SessionView['status'],
    metadata: s.metadata,
    execution_count: s.executionCount,
    last_activity_at: iso(s.lastActivityAt),
    closed_at: iso(s.closedAt),
    created_at: iso(s.createdAt),
  };
}

export function executionView(e: ExecutionRow): ExecutionView {
  return {
    id: e.id,
    session_id: e.sessionId,
    agent_id: e.agentId,
    service_id: e.serviceId,
    tool_id: e.toolId,
    tool_name: e.toolName,
    arguments: e.arguments,
    status: e.status as ExecutionView['status'],
    http_status: e.httpStatus,
    output: e.output ?? null,
    error: e.error ?? null,
    duration_ms: e.durationMs,
    created_at: iso(e.createdAt),
  };
}

function visibleTo(actor: SessionActor) {
  return and(eq(sessions.userId, actor.accountId), actor.agentId ? eq(sessions.agentId, actor.agentId) : undefined);
}

/**
 * Create a session for the actor's account. An agent's sessions carry its own id; a user may
 * name one of its agents in `agent_id`.
 * @throws AppError not_found (agent_id is not an agent of the account), forbidden (an agent naming another agent)
 */
export async function createSession(
  ctx: AppContext,
  actor: SessionActor,
  input: { name?: string; agent_id?: string; metadata?: Record<string, unknown> },
): Promise<SessionView> {
  let agentId = actor.agentId;
  if (input.agent_id !== undefined) {
    if (actor.agentId && input.agent_id !== actor.agentId)
      throw new AppError('forbidden', 'An agent can only create sessions for itself');
    if (!actor.agentId) agentId = (await getAgentForAccount(ctx, actor.accountId, input.agent_id)).id;
  }
  const [row] = await ctx.db
    .insert(sessions)
    .values({
      id: newId('ses'),
      userId: actor.accountId,
      agentId,
      name: input.name ?? null,
      metadata: input.metadata ?? {},
    })
    .returning();
  // A new session is usually executed in at once (the agent runtime: one per invocation): its facts
  // go into the execution path's cache now instead of being read back by the first execution.
  await sessionFacts(ctx).get(row.id, async () => ({ userId: row.userId, status: row.status, agentId: row.agentId }));
  return sessionView(row);
}

/** The actor's sessions, newest first; optional `status` and `agent_id` filters. */
export async function listSessions(
  ctx: AppContext,
  actor: SessionActor,
  q: Static<typeof SessionListQuery>,
): Promise<Page<SessionView>> {
  const page = await selectPage(ctx.db, sessions, q, [
    visibleTo(actor),
    q.status ? eq(sessions.status, q.status) : undefined,
    q.agent_id ? eq(sessions.agentId, q.agent_id) : undefined,
  ]);
  return mapPage(page, sessionView);
}

/** A session visible to the actor. @throws AppError not_found */
export async function getSessionFor(ctx: AppContext, actor: SessionActor, sessionId: string): Promise<SessionRow> {
  const [s] = await ctx.db
    .select()
    .from(sessions)
    .where(and(eq(sessions.id, sessionId), visibleTo(actor)));
  if (!s) throw notFound('Session');
  return s;
}

/** What the execution path needs about a session; `userId`/`agentId` never change, `status` only closes. */
interface SessionFacts {
  userId: string;
  agentId: string | null;
  status: string;
}

/** Session facts by id, for the execution path (evicted on close). Missing sessions are not cached. */
function sessionFacts(ctx: AppContext): SharedCache<SessionFacts> {
  return SharedCache.of(ctx, { name: 'sessions.facts', max: 50_000, ttlMs: ctx.config.cacheTtlMs });
}

/**
 * The facts the execution path needs about a session visible to the actor, from a cache that
 * {@link closeSession} evicts (raw SQL on a miss: the query builder costs more than the query on PGlite).
 * @throws AppError not_found (missing, another account's, or another agent's session)
 */
export async function sessionState(
  ctx: AppContext,
  actor: SessionActor,
  sessionId: string,
): Promise<{ id: string; status: string; agentId: string | null }> {
  const s = await sessionFacts(ctx).get(sessionId, async () => {
    const rows = await execRows<{ user_id: string; status: string; agent_id: string | null }>(
      ctx.db,
      sql`select user_id, status, agent_id from sessions where id = ${sessionId}`,
    );
    if (!rows[0]) throw notFound('Session');
    return { userId: rows[0].user_id, status: rows[0].status, agentId: rows[0].agent_id };
  });
  if (s.userId !== actor.accountId || (actor.agentId && s.agentId !== actor.agentId)) throw notFound('Session');
  return { id: sessionId, status: s.status, agentId: s.agentId };
}

/** A session with its latest executions (newest first, at most {@link RECENT_EXECUTIONS}). @throws AppError not_found */
export async function getSessionDetails(
  ctx: AppContext,
  actor: SessionActor,
  sessionId: string,
): Promise<SessionView & { executions: ExecutionView[] }> {
  const s = await getSessionFor(ctx, actor, sessionId);
  const rows = await ctx.db
    .select()
    .from(executions)
    .where(eq(executions.sessionId, s.id))
    .orderBy(desc(executions.id))
    .limit(RECENT_EXECUTIONS);
  return { ...sessionView(s), executions: rows.map(executionView) };
}

/** Close a session: it keeps its history and refuses new executions. Closing twice is a no-op. @throws AppError not_found */
export async function closeSession(ctx: AppContext, actor: SessionActor, sessionId: string): Promise<SessionView> {
  const [row] = await ctx.db
    .update(sessions)
    .set({ status: 'closed', closedAt: new Date() })
    .where(and(eq(sessions.id, sessionId), visibleTo(actor), eq(sessions.status, 'active')))
    .returning();
  if (row) await sessionFacts(ctx).invalidate(sessionId);
  return sessionView(row ?? (await getSessionFor(ctx, actor, sessionId)));
}

/** The session `sessionId` of account `accountId`. @throws AppError not_found (also for other accounts' sessions) */
export async function getSession(ctx: AppContext, accountId: string, sessionId: string): Promise<SessionRow> {
  const [s] = await ctx.db
    .select()
    .from(sessions)
    .where(and(eq(sessions.id, sessionId), eq(sessions.userId, accountId)));
  if (!s) throw notFound('Session');
  return s;
}

/** Executions of a session of `accountId`, oldest first (timeline order), keyset-paginated. */
export async function listSessionExecutions(
  ctx: AppContext,
  accountId: string,
  sessionId: string,
  q: { limit?: number; cursor?: string } = {},
): Promise<Page<ExecutionRow>> {
  await getSession(ctx, accountId, sessionId);
  const page = keyset(q, executions.id, { order: 'asc', defaultLimit: 100 });
  const rows = await ctx.db
    .select()
    .from(executions)
    .where(and(eq(executions.sessionId, sessionId), page.after))
    .orderBy(page.orderBy)
    .limit(page.take);
  return toPage(rows, page.limit, (r) => r);
}

export { topTools, topServices, usageTotals, usageByDay } from './usage.js';
