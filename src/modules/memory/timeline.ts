/** A session's timeline: executions, explicit memories and the summary, merged in time order. */
import { and, eq, inArray, ne, sql } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { memories, sessionSummaries } from '../../db/schema/index.js';
import { decodeCursor, encodeCursor, toPage, type Page } from '../../http/pagination.js';
import type { SessionActor } from '../../http/auth.js';
import { getSessionFor, listSessionExecutions } from '../sessions/service.js';

import { flushMemoryWrites } from './runtime.js';
import { iso } from '../../http/ids.js';
import { MEMORY_COLUMNS, scoped } from './views.js';

/** One event of a session timeline. */
export interface TimelineEvent {
  type: 'execution' | 'memory' | 'summary';
  id: string;
  at: string;
  execution?: {
    service_id: string;
    tool_id: string;
    tool_name: string;
    status: 'succeeded' | 'failed';
    http_status: number | null;
    duration_ms: number;
    error: { code: string; message: string } | null;
    /** The automatic memory of this execution (null until written). */
    memory: string | null;
  };
  memory?: { source: 'explicit' | 'summary'; content: string; metadata: Record<string, unknown> };
  summary?: { summary: string; key_points: string[]; generator: 'extractive' | 'llm' };
}

/** Time-ordered key of an id (`<prefix>_<ulid>` → the ULID). */
function bodyOf(id: string): string {
  return id.slice(id.indexOf('_') + 1);
}

/**
 * Every event of a session in time order — executions (status, duration, their memory), explicit
 * memories, the summary — with cursor pagination over the merged stream.
 * @throws AppError not_found (session not the caller's), validation_failed (bad cursor)
 */
export async function sessionTimeline(
  ctx: AppContext,
  actor: SessionActor,
  sessionId: string,
  q: { limit?: number; cursor?: string },
): Promise<Page<TimelineEvent>> {
  const session = await getSessionFor(ctx, actor, sessionId);
  const limit = q.limit ?? 50;
  const after = decodeCursor(q.cursor);
  const afterBody = after ? bodyOf(after) : null;
  await flushMemoryWrites(ctx);
  const [execPage, mems, [summary]] = await Promise.all([
    listSessionExecutions(ctx, actor.accountId, session.id, {
      limit: limit + 1,
      cursor: afterBody ? encodeCursor(`exe_${afterBody}`) : undefined,
    }),
    ctx.db
      .select(MEMORY_COLUMNS)
      .from(memories)
      .where(
        and(
          scoped(actor),
          eq(memories.sessionId, session.id),
          ne(memories.source, 'execution'),
          afterBody ? sql`substr(${memories.id}, 5) > ${afterBody}` : undefined,
        ),
      )
      .orderBy(sql`substr(${memories.id}, 5)`)
      .limit(limit + 1),
    ctx.db
      .select()
      .from(sessionSummaries)
      .where(and(eq(sessionSummaries.sessionId, session.id), eq(sessionSummaries.userId, actor.accountId))),
  ]);
  const execIds = execPage.data.map((e) => e.id);
  const execMems = execIds.length
    ? await ctx.db
        .select({ executionId: memories.executionId, content: memories.content })
        .from(memories)
        .where(and(eq(memories.userId, actor.accountId), inArray(memories.executionId, execIds)))
    : [];
  const memOf = new Map(execMems.map((m) => [m.executionId!, m.content]));
  const events: TimelineEvent[] = [];
  for (const e of execPage.data) {
    events.push({
      type: 'execution',
      id: e.id,
      at: iso(e.createdAt)!,
      execution: {
        service_id: e.serviceId,
        tool_id: e.toolId,
        tool_name: e.toolName,
        status: e.status as 'succeeded' | 'failed',
        http_status: e.httpStatus,
        duration_ms: e.durationMs,
        error: e.error ?? null,
        memory: memOf.get(e.id) ?? null,
      },
    });
  }
  for (const m of mems) {
    if (summary && m.id === summary.memoryId) continue; // shown as the summary event
    events.push({
      type: 'memory',
      id: m.id,
      at: iso(m.createdAt)!,
      memory: { source: m.source as 'explicit' | 'summary', content: m.content, metadata: m.metadata ?? {} },
    });
  }
  if (summary && (!afterBody || bodyOf(summary.id) > afterBody)) {
    events.push({
      type: 'summary',
      id: summary.id,
      at: iso(summary.generatedAt)!,
      summary: {
        summary: summary.summary,
        key_points: summary.keyPoints,
        generator: summary.generator as 'extractive' | 'llm',
      },
    });
  }
  events.sort((a, b) => (bodyOf(a.id) < bodyOf(b.id) ? -1 : bodyOf(a.id) > bodyOf(b.id) ? 1 : a.id < b.id ? -1 : 1));
  return toPage(events.slice(0, limit + 1), limit, (e) => e);
}
