/**
 * Which platform events become outbound webhook messages, and their payloads (`data` of the
 * Standard Webhooks body `{ type, timestamp, data }`). Each listener leaves the emitter's turn at
 * once (`setImmediate`): the event hub is synchronous and the emitters sit on hot paths (tool
 * execution, invocation); the recording and delivery run afterwards, as jobs.
 *
 * | platform event          | webhook event(s)                                              |
 * |-------------------------|---------------------------------------------------------------|
 * | `execution.recorded`    | `execution.failed` (failed tool executions only)              |
 * | `invocation.finished`   | `invocation.completed` (succeeded), `invocation.failed` (failed, timed_out) |
 * | `deployment.settled`    | `deployment.activated`, `deployment.failed`                   |
 * | `connection.expired`    | `connection.expired`                                          |
 * | `quota.refused`         | `quota.exhausted` — once per subscription and quota window    |
 * | `approval.requested`    | `approval.requested`                                          |
 */
import { lt, sql } from 'drizzle-orm';
import { LRUCache } from 'lru-cache';
import type { AppContext } from '../../context.js';
import { quotaExhaustions } from '../../db/schema/index.js';
import type { QuotaRefused } from '../../events.js';
import { publishEvent } from './delivery.js';

/** Run `publish` after the emitter's turn (never throws: publishEvent logs its own failures). */
function later(publish: () => Promise<void>): void {
  setImmediate(() => void publish());
}

/** Quota windows this instance already announced or saw announced (skips the INSERT on every later refusal). */
const announced = new WeakMap<AppContext, LRUCache<string, true>>();

/**
 * Announce `e`'s window once across all instances: the first refusal of a window inserts its
 * `quota_exhaustions` row (primary key: subscription, window, reset time); only the instance whose
 * INSERT created the row publishes `quota.exhausted`. Rows of windows that reset over a day ago go.
 */
export async function announceExhaustion(ctx: AppContext, e: QuotaRefused): Promise<void> {
  let seen = announced.get(ctx);
  if (!seen) announced.set(ctx, (seen = new LRUCache<string, true>({ max: 10_000 })));
  const key = `${e.subscriptionId} ${e.window} ${e.resetsAt}`;
  if (seen.has(key)) return;
  seen.set(key, true);
  try {
    const inserted = await ctx.db
      .insert(quotaExhaustions)
      .values({ subscriptionId: e.subscriptionId, window: e.window, resetsAt: new Date(e.resetsAt) })
      .onConflictDoNothing()
      .returning({ id: quotaExhaustions.subscriptionId });
    if (!inserted.length) return;
    await ctx.db.delete(quotaExhaustions).where(lt(quotaExhaustions.resetsAt, sql`now() - interval '1 day'`));
  } catch (err) {
    seen.delete(key);
    ctx.log.error({ err }, 'quota exhaustion not recorded');
    return;
  }
  await publishEvent(ctx, e.accountId, 'quota.exhausted', {
    subscription_id: e.subscriptionId,
    service_id: e.serviceId,
    plan: e.plan,
    window: e.window,
    limit: e.limit,
    resets_at: e.resetsAt,
  });
}

/** Subscribe the webhooks module to the platform events it forwards (once per app). */
export function forwardPlatformEvents(ctx: AppContext): void {
  ctx.events.on('execution.recorded', (e) => {
    if (e.status !== 'failed') return;
    later(() =>
      publishEvent(ctx, e.userId, 'execution.failed', {
        execution_id: e.executionId,
        session_id: e.sessionId,
        agent_id: e.agentId,
        service_id: e.serviceId,
        tool: e.toolName,
        error: e.error,
        http_status: e.httpStatus,
        duration_ms: e.durationMs,
      }),
    );
  });
  ctx.events.on('invocation.finished', (e) =>
    later(() =>
      publishEvent(ctx, e.accountId, e.status === 'succeeded' ? 'invocation.completed' : 'invocation.failed', {
        invocation_id: e.invocationId,
        agent_id: e.agentId,
        deployment_id: e.deploymentId,
        version: e.version,
        trigger: e.trigger,
        status: e.status,
        error: e.error,
        duration_ms: e.durationMs,
        finished_at: e.finishedAt,
      }),
    ),
  );
  ctx.events.on('deployment.settled', (e) =>
    later(() =>
      publishEvent(ctx, e.accountId, e.status === 'active' ? 'deployment.activated' : 'deployment.failed', {
        deployment_id: e.deploymentId,
        agent_id: e.agentId,
        version: e.version,
        status: e.status,
        failure_reason: e.reason,
      }),
    ),
  );
  ctx.events.on('connection.expired', (e) =>
    later(() =>
      publishEvent(ctx, e.accountId, 'connection.expired', {
        connection_id: e.connectionId,
        service_id: e.serviceId,
        status: e.status,
        reason: e.reason,
      }),
    ),
  );
  ctx.events.on('quota.refused', (e) => later(() => announceExhaustion(ctx, e)));
  ctx.events.on('approval.requested', (e) =>
    later(() =>
      publishEvent(ctx, e.accountId, 'approval.requested', {
        approval_id: e.approvalId,
        agent_id: e.agentId,
        service: e.serviceName,
        tool: e.toolName,
        expires_at: e.expiresAt,
        url: e.url,
      }),
    ),
  );
}
