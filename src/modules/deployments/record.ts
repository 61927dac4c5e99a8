/**
 * How invocations are stored: a queued invocation's row exists and gets its outcome by UPDATE; a
 * synchronous one is written once, write-behind, through the app's invocation log (a
 * {@link WriteBatcher}: one multi-row INSERT for the invocations that ended meanwhile).
 *
 * Write-behind: a short synchronous invocation's answer is sent without waiting for
 * its INSERT, which commits a moment later (typically within the same event-loop turn plus one
 * statement). Reads of this instance (`GET …/executions[/:id]`, `…/logs`) first wait for the
 * agent's records still in the log, so a client reading back its invocation here finds it. What a
 * crash of the instance may lose: the records of synchronous invocations that ended but were not
 * yet committed (their callers may already have their answers), besides those younger than
 * `SANDBOX_RECORD_DEFER_MS` that never ended. A record whose INSERT fails is logged and lost (the
 * answer was sent). Handler output, error and logs are stored through {@link storable} (U+0000 and
 * lone surrogates become U+FFFD, which `jsonb` can hold), so one odd output cannot fail a batch.
 * See docs/adr/0201-deployments-record-a-synchronous-invocation-s-record.md and docs/adr/0239-deployments-record-write-behind-a-short-synchronous-invocation-s.md.
 */
import { eq } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { agentInvocations } from '../../db/schema/index.js';
import { WriteBatcher } from '../../lib/batcher.js';
import { storable } from '../../lib/nul.js';
import type { InvocationInsert, InvocationLog } from './state.js';
import type { InvocationRow } from './views.js';

/** Rows per INSERT of the invocation log. */
const MAX_BATCH = 128;

function logOf(ctx: AppContext): InvocationLog {
  if (ctx.invocationLog) return ctx.invocationLog;
  const batcher = new WriteBatcher<InvocationInsert>({
    write: async (rows) => void (await ctx.db.insert(agentInvocations).values(rows)),
    maxBatch: MAX_BATCH,
  });
  const log: InvocationLog = { batcher, pending: new Map() };
  ctx.invocationLog = log;
  ctx.onClose.push(() => batcher.drain());
  return log;
}

/**
 * Wait until the records of agent `agentId` (or of invocation `invocationId` alone) queued on this
 * instance are committed or have failed. Cheap when none is pending.
 */
export async function settledRecords(ctx: AppContext, agentId: string, invocationId?: string): Promise<void> {
  const pending = ctx.invocationLog?.pending;
  if (!pending?.size) return;
  if (invocationId) {
    await pending.get(invocationId)?.done;
    return;
  }
  const waits: Array<Promise<void>> = [];
  for (const p of pending.values()) if (p.agentId === agentId) waits.push(p.done);
  await Promise.all(waits);
}

/** Queue the finished row `row` (write-behind); failures are logged. */
function writeBehind(ctx: AppContext, row: InvocationInsert & { id: string; agentId: string }): void {
  const log = logOf(ctx);
  const done = log.batcher.add(storable(row)).then(
    () => undefined,
    (err: unknown) => ctx.log.error({ err, invocation_id: row.id }, 'invocation record not written'),
  );
  log.pending.set(row.id, { agentId: row.agentId, done });
  void done.finally(() => log.pending.delete(row.id));
}

/**
 * How an invocation is stored: `row` as it is now, and `finish` to write the outcome (resolving
 * to the row as stored).
 */
export interface InvocationRecord {
  row: InvocationRow;
  finish: (outcome: Partial<InvocationInsert>) => Promise<InvocationRow>;
}

/** A record that exists (a claimed queued invocation): the outcome is one UPDATE. */
export function storedRecord(ctx: AppContext, row: InvocationRow): InvocationRecord {
  return {
    row,
    finish: async (outcome) =>
      (
        await ctx.db.update(agentInvocations).set(storable(outcome)).where(eq(agentInvocations.id, row.id)).returning()
      )[0],
  };
}

/**
 * A synchronous invocation's record, written once: when it ends (the finished row, write-behind
 * through the invocation log), or — when it runs longer than `SANDBOX_RECORD_DEFER_MS` — as
 * `running` at that point (visible to `GET …/executions/:id` and to the stale-run recovery), then
 * UPDATEd with the outcome. What a crash may lose: see the module comment.
 */
export function deferredRecord(
  ctx: AppContext,
  values: InvocationInsert & { id: string; agentId: string },
): InvocationRecord {
  /** Resolves true once the `running` row is in, false when that INSERT failed (logged). */
  let inserted: Promise<boolean> | null = null;
  const insertRunning = () =>
    (inserted ??= ctx.db
      .insert(agentInvocations)
      .values(storable(values))
      .then(() => true)
      .catch((err: unknown) => {
        ctx.log.error({ err, invocation_id: values.id }, 'invocation record not written');
        return false;
      }));
  const deferMs = ctx.config.sandbox.recordDeferMs;
  if (deferMs === 0) void insertRunning();
  const timer = deferMs > 0 ? setTimeout(insertRunning, deferMs) : null;
  timer?.unref();
  const row = {
    logs: [],
    logsTruncated: false,
    calls: [],
    output: null,
    error: null,
    durationMs: null,
    cpuMs: null,
    cold: null,
    finishedAt: null,
    ...values,
  } as InvocationRow;
  return {
    row,
    finish: async (outcome) => {
      if (timer) clearTimeout(timer);
      // No `running` row (not deferred long enough, or its INSERT failed): the finished row, once.
      if (!inserted || !(await inserted)) {
        const finished = { ...values, ...outcome };
        writeBehind(ctx, finished);
        return { ...row, ...finished } as InvocationRow;
      }
      return (
        await ctx.db
          .update(agentInvocations)
          .set(storable(outcome))
          .where(eq(agentInvocations.id, values.id))
          .returning()
      )[0];
    },
  };
}
