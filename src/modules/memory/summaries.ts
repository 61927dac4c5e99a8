/**
 * Session summaries (spec group "Memory"): built extractively or by the configured chat model, stored
 * once per session and also kept as a memory of source `summary`.
 */
import { and, asc, eq } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { memories, sessionSummaries } from '../../db/schema/index.js';
import { AppError } from '../../http/errors.js';
import { iso, newId } from '../../http/ids.js';
import type { SessionActor } from '../../http/auth.js';
import { getSessionFor, listSessionExecutions } from '../sessions/service.js';
import { insertMemoryRows } from './store.js';
import { extractiveSummary, llmSummary, type BuiltSummary, type SummaryExecution } from './summarizer.js';

import { embeddingProviderOf, flushMemoryWrites, markNeedsBackfill } from './runtime.js';
import { scoped } from './views.js';

/** A session summary as the API shows it. */
export interface SummaryView {
  id: string;
  session_id: string;
  agent_id: string | null;
  summary: string;
  key_points: string[];
  tools_used: BuiltSummary['tools_used'];
  execution_count: number;
  started_at: string | null;
  ended_at: string | null;
  generated_at: string;
  generator: 'extractive' | 'llm';
  model: string | null;
  memory_id: string | null;
}

type SummaryRow = typeof sessionSummaries.$inferSelect;

export function summaryView(r: SummaryRow): SummaryView {
  return {
    id: r.id,
    session_id: r.sessionId,
    agent_id: r.agentId,
    summary: r.summary,
    key_points: r.keyPoints,
    tools_used: r.toolsUsed,
    execution_count: r.executionCount,
    started_at: iso(r.startedAt),
    ended_at: iso(r.endedAt),
    generated_at: iso(r.generatedAt)!,
    generator: r.generator as SummaryView['generator'],
    model: r.model,
    memory_id: r.memoryId,
  };
}

/** The summary of a session of the caller. @throws AppError not_found (session not the caller's, or no summary yet) */
export async function getSessionSummary(ctx: AppContext, actor: SessionActor, sessionId: string): Promise<SummaryView> {
  await getSessionFor(ctx, actor, sessionId);
  const [row] = await ctx.db
    .select()
    .from(sessionSummaries)
    .where(and(eq(sessionSummaries.sessionId, sessionId), eq(sessionSummaries.userId, actor.accountId)));
  if (!row)
    throw new AppError('not_found', 'This session has no summary yet; POST /memory/sessions/{id}/summarize builds one');
  return summaryView(row);
}

/** Most executions a summary reads (the newest are kept). */
const MAX_SUMMARY_EXECUTIONS = 5000;

/**
 * Build (or rebuild) the summary of a session: extractive, or by the configured chat model (falling
 * back to extractive when it fails). The summary text is also stored as a memory (source `summary`),
 * replacing the previous summary's memory.
 * @throws AppError not_found (session not the caller's)
 */
export async function summarizeSession(ctx: AppContext, actor: SessionActor, sessionId: string): Promise<SummaryView> {
  const session = await getSessionFor(ctx, actor, sessionId);
  await flushMemoryWrites(ctx);
  const execs: SummaryExecution[] = [];
  let cursor: string | undefined;
  const rawExecs = [];
  do {
    const page = await listSessionExecutions(ctx, actor.accountId, sessionId, { limit: 500, cursor });
    rawExecs.push(...page.data);
    cursor = page.next_cursor ?? undefined;
    if (rawExecs.length > MAX_SUMMARY_EXECUTIONS) rawExecs.splice(0, rawExecs.length - MAX_SUMMARY_EXECUTIONS);
  } while (cursor);
  const [notes, execMems] = await Promise.all([
    ctx.db
      .select({ content: memories.content, createdAt: memories.createdAt })
      .from(memories)
      .where(and(scoped(actor), eq(memories.sessionId, sessionId), eq(memories.source, 'explicit')))
      .orderBy(asc(memories.id))
      .limit(200),
    ctx.db
      .select({ executionId: memories.executionId, metadata: memories.metadata })
      .from(memories)
      .where(
        and(eq(memories.userId, actor.accountId), eq(memories.sessionId, sessionId), eq(memories.source, 'execution')),
      ),
  ]);
  const serviceNames = new Map<string, string>();
  for (const m of execMems)
    if (typeof m.metadata?.service_name === 'string') serviceNames.set(m.executionId!, m.metadata.service_name);
  for (const e of rawExecs) {
    execs.push({
      id: e.id,
      serviceId: e.serviceId,
      serviceName: serviceNames.get(e.id) ?? e.serviceId,
      toolId: e.toolId,
      toolName: e.toolName,
      arguments: e.arguments ?? {},
      status: e.status as 'succeeded' | 'failed',
      httpStatus: e.httpStatus,
      output: e.output,
      error: e.error ?? null,
      durationMs: e.durationMs,
      createdAt: e.createdAt,
    });
  }
  const input = { sessionName: session.name, executions: execs, notes };
  let built = extractiveSummary(input);
  const llm = ctx.config.memory.summaryLlm;
  if (llm.url) {
    try {
      built = await llmSummary(llm, input, built);
    } catch (err) {
      ctx.log.warn(
        { err: (err as Error).message, session_id: sessionId },
        'summary model failed: using the extractive summary',
      );
    }
  }
  const content = [built.summary, ...built.key_points.map((k) => `- ${k}`)]
    .join('\n')
    .slice(0, ctx.config.memory.maxContentBytes);
  let vector: Float32Array | null = null;
  try {
    [vector] = await embeddingProviderOf(ctx).embed([content]);
  } catch (err) {
    ctx.log.warn({ err: (err as Error).message }, 'embedding failed: storing the summary memory without a vector');
    markNeedsBackfill(ctx);
  }
  const startedAt = execs[0]?.createdAt ?? session.createdAt;
  const endedAt = session.closedAt ?? execs[execs.length - 1]?.createdAt ?? null;
  const memoryId = newId('mem');
  let replaced: string | null = null;
  const row = await ctx.db.transaction(async (tx) => {
    const [old] = await tx
      .select({ memoryId: sessionSummaries.memoryId })
      .from(sessionSummaries)
      .where(eq(sessionSummaries.sessionId, sessionId));
    if (old?.memoryId) {
      await tx.delete(memories).where(and(eq(memories.id, old.memoryId), eq(memories.userId, actor.accountId)));
      ctx.memory?.text?.removed(actor.accountId, [old.memoryId]); // (a rollback is caught by the index's count check)
      replaced = old.memoryId;
    }
    await insertMemoryRows(
      ctx,
      tx,
      [
        {
          id: memoryId,
          userId: actor.accountId,
          sessionId,
          agentId: session.agentId,
          serviceId: null,
          toolId: null,
          executionId: null,
          source: 'summary',
          kind: 'summary',
          content,
          metadata: {
            generator: built.generator,
            ...(built.model ? { model: built.model } : {}),
            execution_count: execs.length,
          },
        },
      ],
      [vector],
    );
    const values = {
      id: newId('sum'),
      userId: actor.accountId,
      sessionId,
      agentId: session.agentId,
      summary: built.summary,
      keyPoints: built.key_points,
      toolsUsed: built.tools_used,
      executionCount: execs.length,
      startedAt,
      endedAt,
      generator: built.generator,
      model: built.model,
      memoryId,
      generatedAt: new Date(),
    };
    const { userId: _owner, sessionId: _session, ...update } = values;
    const [r] = await tx
      .insert(sessionSummaries)
      .values(values)
      .onConflictDoUpdate({ target: sessionSummaries.sessionId, set: update })
      .returning();
    return r;
  });
  // the replaced summary's vector leaves the in-process vector arm once the delete is committed
  if (replaced) ctx.memory?.vectors?.removed(actor.accountId, [replaced]);
  return summaryView(row);
}
