/** `GET /memory/context/agent`: what an agent should know before acting, in one call. */
import { and, eq, inArray } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { sessionSummaries } from '../../db/schema/index.js';
import type { SessionActor } from '../../http/auth.js';
import { listSessions, type SessionView } from '../sessions/service.js';
import { topTools } from '../sessions/usage.js';

import type { MemoryView } from './views.js';
import { listMemories, memoryStats, searchMemories, type MemoryStats } from './service.js';
import { summaryView, type SummaryView } from './summaries.js';

/** Answer of `GET /memory/context/agent`. */
export interface AgentContext {
  agent_id: string | null;
  query: string | null;
  relevant_memories: Array<MemoryView & { score?: number; similarity?: number }>;
  recent_sessions: Array<SessionView & { summary: SummaryView | null }>;
  frequent_tools: Array<{
    service_id: string;
    tool_id: string;
    tool_name: string;
    calls: number;
    successes: number;
    failures: number;
    success_rate: number;
    avg_duration_ms: number;
  }>;
  stats: MemoryStats;
}

/**
 * What an agent should know before acting, in one call: memories relevant to `q` (or the newest
 * when no `q`), recent sessions with their summaries, the most used tools with success rates, and
 * memory statistics. The parts are fetched concurrently.
 */
export async function agentContext(
  ctx: AppContext,
  actor: SessionActor,
  q: { q?: string; agent_id?: string; limit?: number },
): Promise<AgentContext> {
  const agentId = actor.agentId ?? q.agent_id ?? null;
  const limit = q.limit ?? 10;
  const query = q.q?.trim() ? q.q.trim() : null;
  const filter = { agent_id: agentId ?? undefined };
  const [relevant, sessions, tools, stats] = await Promise.all([
    query
      ? searchMemories(ctx, actor, { q: query, limit, ...filter }).then((r) =>
          r.data.map(({ vector_rank: _v, text_rank: _t, ...h }) => h),
        )
      : listMemories(ctx, actor, { limit, ...filter }).then((p) => p.data),
    listSessions(ctx, actor, { limit: 5, ...(agentId ? { agent_id: agentId } : {}) }),
    topTools(ctx, { userId: actor.accountId, ...(agentId ? { agentId } : {}), limit: 5 }),
    memoryStats(ctx, actor, filter),
  ]);
  const ids = sessions.data.map((s) => s.id);
  const sums = ids.length
    ? await ctx.db
        .select()
        .from(sessionSummaries)
        .where(and(eq(sessionSummaries.userId, actor.accountId), inArray(sessionSummaries.sessionId, ids)))
    : [];
  const sumOf = new Map(sums.map((s) => [s.sessionId, summaryView(s)]));
  return {
    agent_id: agentId,
    query,
    relevant_memories: relevant,
    recent_sessions: sessions.data.map((s) => ({ ...s, summary: sumOf.get(s.id) ?? null })),
    frequent_tools: tools.map((t) => ({
      service_id: t.service_id,
      tool_id: t.tool_id,
      tool_name: t.tool_name,
      calls: t.calls,
      successes: t.successes,
      failures: t.failures,
      success_rate: t.calls ? Number((t.successes / t.calls).toFixed(4)) : 0,
      avg_duration_ms: t.avg_duration_ms,
    })),
    stats,
  };
}
