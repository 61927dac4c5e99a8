/**
 * Sessions: the caller's containers of tool executions (spec "Executor (sessions)").
 * Every query is scoped to the owning account; another account's session is "not found".
 */
import { and, asc, eq, gt } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { executions, sessions } from '../../db/schema/index.js';
import { notFound } from '../../http/errors.js';
import { decodeCursor, toPage, type Page } from '../../http/pagination.js';

export type SessionRow = typeof sessions.$inferSelect;
export type ExecutionRow = typeof executions.$inferSelect;

/** The session `sessionId` of account `accountId`. @throws AppError not_found (also for other accounts' sessions) */
export async function getSession(ctx: AppContext, accountId: string, sessionId: string): Promise<SessionRow> {
  const [s] = await ctx.db.select().from(sessions).where(and(eq(sessions.id, sessionId), eq(sessions.userId, accountId)));
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
  const limit = q.limit ?? 100;
  const after = decodeCursor(q.cursor);
  const rows = await ctx.db
    .select()
    .from(executions)
    .where(and(eq(executions.sessionId, sessionId), after ? gt(executions.id, after) : undefined))
    .orderBy(asc(executions.id))
    .limit(limit + 1);
  return toPage(rows, limit, (r) => r);
}
