/**
 * The policy decision log (`policy_decisions`): every decision of a non-empty policy set on a tool
 * call (allow, deny, approval) is queued here and written in batches off the request path (the
 * platform's group commit, `lib/batcher.ts`, up to one second per batch); rows older than {@link DECISION_RETENTION_DAYS} are
 * pruned by the writer's upkeep at most every {@link PRUNE_EVERY_MS}. Readers drain the queue first, so an
 * owner always reads their latest decisions.
 */
import { and, desc, eq, lt, type SQL, sql } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { policyDecisions } from '../../db/schema/index.js';
import { newId } from '../../http/ids.js';
import { WriteBatcher } from '../../lib/batcher.js';

/** Days a decision is kept. */
export const DECISION_RETENTION_DAYS = 30;
/** Shortest interval between two prunes by one instance, ms. */
const PRUNE_EVERY_MS = 10 * 60_000;

/** One decision to log. */
export type DecisionRow = typeof policyDecisions.$inferInsert;

const logs = new WeakMap<AppContext, WriteBatcher<DecisionRow>>();

function logOf(ctx: AppContext): WriteBatcher<DecisionRow> {
  const have = logs.get(ctx);
  if (have) return have;
  const created = new WriteBatcher<DecisionRow>({
    maxBatch: 1000,
    // Decisions wait up to a second for companions: one INSERT per second under load instead of
    // one per call (on PGlite a write runs on the request thread; ADR 0995).
    delayMs: 1000,
    write: (items) => insertDecisions(ctx, items),
    upkeep: {
      everyMs: PRUNE_EVERY_MS,
      run: () => pruneDecisions(ctx, new Date(Date.now() - DECISION_RETENTION_DAYS * 86_400_000)),
      onError: (err) => ctx.log.warn({ err: (err as Error).message }, 'policy decisions: pruning failed'),
    },
  });
  logs.set(ctx, created);
  ctx.onClose.push(() => created.drain());
  return created;
}

/**
 * Insert `rows` as one JSON parameter expanded by `json_populate_recordset`: one statement whose
 * text does not grow with the batch (~35 µs a row on PGlite against ~120 µs for a multi-row
 * `VALUES` of 11 parameters a row; docs/benchmarks.md#policies).
 */
export async function insertDecisions(ctx: AppContext, rows: DecisionRow[]): Promise<void> {
  if (rows.length === 0) return;
  const json = JSON.stringify(
    rows.map((r) => ({
      id: r.id,
      at: (r.at ?? new Date()).toISOString(),
      account_id: r.accountId,
      principal: r.principal,
      agent_id: r.agentId ?? null,
      service_id: r.serviceId,
      tool_id: r.toolId,
      tool: r.tool,
      decision: r.decision,
      policy_ids: r.policyIds ?? [],
      errors: r.errors ?? [],
    })),
  );
  await ctx.db.execute(sql`insert into ${policyDecisions}
    (id, at, account_id, principal, agent_id, service_id, tool_id, tool, decision, policy_ids, errors)
    select id, at, account_id, principal, agent_id, service_id, tool_id, tool, decision, policy_ids, errors
    from json_populate_recordset(null::policy_decisions, ${json}::json)`);
}

/** Queue one decision (fire and forget: a failed write is logged, never fails the call). */
export function recordDecision(ctx: AppContext, row: Omit<DecisionRow, 'id' | 'at'>): void {
  logOf(ctx)
    .add({ id: newId('pdc'), at: new Date(), ...row })
    .catch((err: unknown) => ctx.log.warn({ err: (err as Error).message }, 'policy decision not logged'));
}

/** Write every queued decision now. */
export async function flushDecisions(ctx: AppContext): Promise<void> {
  await logs.get(ctx)?.drain();
}

/** Delete decisions older than `before`; returns how many. */
export async function pruneDecisions(ctx: AppContext, before: Date): Promise<number> {
  const gone = await ctx.db
    .delete(policyDecisions)
    .where(lt(policyDecisions.at, before))
    .returning({ id: policyDecisions.id });
  return gone.length;
}

/** Filters of `GET /v1/policies/decisions`. */
export interface DecisionQuery {
  decision?: 'allow' | 'deny' | 'approval';
  agent_id?: string;
  limit?: number;
}

/** The account's decisions, newest first (at most `limit`, default 50). */
export async function listDecisions(ctx: AppContext, accountId: string, q: DecisionQuery) {
  await flushDecisions(ctx);
  const where: SQL[] = [eq(policyDecisions.accountId, accountId)];
  if (q.decision) where.push(eq(policyDecisions.decision, q.decision));
  if (q.agent_id) where.push(eq(policyDecisions.agentId, q.agent_id));
  const rows = await ctx.db
    .select()
    .from(policyDecisions)
    .where(and(...where))
    .orderBy(desc(policyDecisions.at), desc(policyDecisions.id))
    .limit(q.limit ?? 50);
  return rows.map((r) => ({
    id: r.id,
    principal: r.principal,
    agent_id: r.agentId,
    service_id: r.serviceId,
    tool_id: r.toolId,
    tool: r.tool,
    decision: r.decision as 'allow' | 'deny' | 'approval',
    policy_ids: r.policyIds,
    errors: r.errors,
    at: r.at.toISOString(),
  }));
}
