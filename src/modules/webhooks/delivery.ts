/**
 * Delivery of outbound webhook messages: one `webhooks.deliver` job per attempt. An attempt POSTs
 * the event JSON signed per Standard Webhooks (`webhook-id` = the message id, stable across
 * retries, so receivers deduplicate; `webhook-timestamp`; `webhook-signature: v1,<base64>`)
 * through the SSRF-guarded upstream client (DNS-resolved address checked, every redirect hop too).
 * A 2xx answer delivers the message; anything else is retried with exponential backoff and ±50 %
 * jitter (from `WEBHOOK_RETRY_BASE_MS`, doubling, at most an hour apart) until `WEBHOOK_MAX_AGE_MS`
 * (24 h) after the event, then the message is `failed` (the dead-letter list, replayable by hand).
 * An endpoint that failed every attempt of a message's whole retry window is disabled, and its
 * owner's other endpoints get a `webhook.endpoint_disabled` event.
 *
 * Delivery is at-least-once: a worker that dies between the receiver's answer and the record of it
 * sends the message again (same `webhook-id`).
 */
import { and, eq } from 'drizzle-orm';
import { LRUCache } from 'lru-cache';
import { Webhook } from 'standardwebhooks';
import type { AppContext } from '../../context.js';
import { webhookEndpoints, webhookMessages } from '../../db/schema/index.js';
import { AppError } from '../../http/errors.js';
import { newId } from '../../http/ids.js';
import { decryptSecret } from '../../lib/secrets.js';
import { upstreamFetch } from '../../upstream/http.js';

/** Job of one delivery attempt. */
export const DELIVER_JOB = 'webhooks.deliver';
/** Longest gap between two attempts, ms. */
const MAX_GAP_MS = 3_600_000;
/** Attempts kept in a message's log. */
const LOG_CAP = 20;

export type EndpointRow = typeof webhookEndpoints.$inferSelect;
export type MessageRow = typeof webhookMessages.$inferSelect;

/** Delay before attempt `attempt + 1` after `attempt` failed: base·2^(attempt−1), capped, times a random factor in [0.5, 1.5). */
export function retryDelayMs(baseMs: number, attempt: number, random = Math.random): number {
  return Math.round(Math.min(baseMs * 2 ** (attempt - 1), MAX_GAP_MS) * (0.5 + random()));
}

/**
 * Enabled endpoints per account, for {@link publishEvent}: invocations and executions emit
 * events on every run, and most accounts have no endpoint, so the lookup is cached for
 * {@link ENDPOINTS_TTL_MS} (changes through this instance drop the entry at once; another
 * instance sees them within the TTL).
 */
const endpointCache = new WeakMap<AppContext, LRUCache<string, EndpointRow[]>>();
/** How long an account's endpoint list is reused, ms. */
const ENDPOINTS_TTL_MS = 5_000;

/** Forget the cached endpoints of `ownerId` (after a change to one of them). */
export function forgetEndpoints(ctx: AppContext, ownerId: string): void {
  endpointCache.get(ctx)?.delete(ownerId);
}

async function enabledEndpoints(ctx: AppContext, ownerId: string): Promise<EndpointRow[]> {
  let cache = endpointCache.get(ctx);
  if (!cache) endpointCache.set(ctx, (cache = new LRUCache({ max: 10_000, ttl: ENDPOINTS_TTL_MS })));
  const hit = cache.get(ownerId);
  if (hit) return hit;
  const rows = await ctx.db
    .select()
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.ownerId, ownerId), eq(webhookEndpoints.enabled, true)));
  cache.set(ownerId, rows);
  return rows;
}

/** Queue the message's next attempt at `at`. */
async function schedule(ctx: AppContext, messageId: string, at: Date, attempt: number): Promise<void> {
  await ctx.jobs.enqueue(
    DELIVER_JOB,
    { messageId },
    { delayMs: Math.max(0, at.getTime() - Date.now()), jobId: `whk-${messageId}-${attempt}` },
  );
}

/**
 * Record event `type` with `data` for every enabled endpoint of account `ownerId` subscribed to it
 * (or to `*`), and queue the first attempts. Never throws (failures are logged): events come from
 * other modules' listeners.
 */
export async function publishEvent(
  ctx: AppContext,
  ownerId: string,
  type: string,
  data: Record<string, unknown>,
  opts: { exceptEndpoint?: string } = {},
): Promise<void> {
  try {
    const endpoints = await enabledEndpoints(ctx, ownerId);
    const now = new Date();
    for (const e of endpoints) {
      if (e.id === opts.exceptEndpoint || !(e.events.includes(type) || e.events.includes('*'))) continue;
      const id = newId('msg');
      const payload = { type, timestamp: now.toISOString(), data };
      await ctx.db.insert(webhookMessages).values({
        id,
        endpointId: e.id,
        eventType: type,
        payload,
        status: 'pending',
        nextAttemptAt: now,
        giveUpAt: new Date(now.getTime() + ctx.config.webhooks.maxAgeMs),
      });
      await schedule(ctx, id, now, 1);
    }
  } catch (err) {
    ctx.log.error({ err, event: type }, 'webhook event not recorded');
  }
}

/** POST `m` to `e` once. @returns the answer's status (null: no answer) and latency, or the error */
async function send(
  ctx: AppContext,
  e: EndpointRow,
  m: MessageRow,
): Promise<{ status: number | null; latencyMs: number | null; error: string | null }> {
  const body = JSON.stringify(m.payload);
  const at = new Date();
  const signature = new Webhook(decryptSecret(ctx, e.secretEncrypted)).sign(m.id, at, body);
  const started = Date.now();
  try {
    const res = await upstreamFetch(ctx, {
      method: 'POST',
      url: e.url,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'agent-platform-webhooks/1',
        'webhook-id': m.id,
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': signature,
      },
      body,
      timeoutMs: ctx.config.webhooks.timeoutMs,
      maxResponseBytes: 64 * 1024,
    });
    return {
      status: res.status,
      latencyMs: res.durationMs,
      error: res.status >= 200 && res.status < 300 ? null : `HTTP ${res.status}`,
    };
  } catch (err) {
    return {
      status: null,
      latencyMs: Date.now() - started,
      error: err instanceof AppError ? `${err.code}: ${err.message}` : 'delivery failed',
    };
  }
}

/** Job `webhooks.deliver`: one attempt of message `messageId` (stale or repeated jobs do nothing). */
export async function attemptDelivery(ctx: AppContext, messageId: string): Promise<void> {
  const [m] = await ctx.db.select().from(webhookMessages).where(eq(webhookMessages.id, messageId));
  if (!m || m.status !== 'pending' || (m.nextAttemptAt && m.nextAttemptAt.getTime() > Date.now() + 1000)) return;
  const [e] = await ctx.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, m.endpointId));
  if (!e) return;
  // Claim this attempt (a second worker holding the same job finds `attempts` moved on).
  const claimed = await ctx.db
    .update(webhookMessages)
    .set({ attempts: m.attempts + 1, nextAttemptAt: null, updatedAt: new Date() })
    .where(
      and(
        eq(webhookMessages.id, m.id),
        eq(webhookMessages.attempts, m.attempts),
        eq(webhookMessages.status, 'pending'),
      ),
    )
    .returning({ id: webhookMessages.id });
  if (!claimed.length) return;
  const attempt = m.attempts + 1;
  const r = e.enabled ? await send(ctx, e, m) : { status: null, latencyMs: null, error: 'endpoint disabled' };
  const now = new Date();
  const log = [...m.log, { at: now.toISOString(), status: r.status, latency_ms: r.latencyMs, error: r.error }].slice(
    -LOG_CAP,
  );
  if (!r.error) {
    await ctx.db
      .update(webhookMessages)
      .set({ status: 'delivered', log, deliveredAt: now, updatedAt: now })
      .where(eq(webhookMessages.id, m.id));
    if (e.failingSince)
      await ctx.db.update(webhookEndpoints).set({ failingSince: null }).where(eq(webhookEndpoints.id, e.id));
    return;
  }
  if (e.enabled && !e.failingSince)
    await ctx.db.update(webhookEndpoints).set({ failingSince: now }).where(eq(webhookEndpoints.id, e.id));
  const next = new Date(now.getTime() + retryDelayMs(ctx.config.webhooks.retryBaseMs, attempt));
  if (e.enabled && next < m.giveUpAt) {
    await ctx.db
      .update(webhookMessages)
      .set({ log, nextAttemptAt: next, updatedAt: now })
      .where(eq(webhookMessages.id, m.id));
    await schedule(ctx, m.id, next, attempt + 1);
    return;
  }
  await ctx.db
    .update(webhookMessages)
    .set({ status: 'failed', log, updatedAt: now })
    .where(eq(webhookMessages.id, m.id));
  await maybeDisable(ctx, e, m, now);
}

/** Slack between a message's creation and its first attempt, ms. */
const FIRST_ATTEMPT_SLACK_MS = 60_000;

/**
 * Disable `e` once message `m` is dead-lettered while `e` has not had one success since `m`'s
 * first attempt (every attempt of a whole retry window failed), and tell its owner.
 */
async function maybeDisable(ctx: AppContext, e: EndpointRow, m: MessageRow, now: Date): Promise<void> {
  if (!e.enabled) return;
  const since = e.failingSince ?? now;
  if (since.getTime() > m.createdAt.getTime() + FIRST_ATTEMPT_SLACK_MS) return;
  const reason = `every delivery failed since ${since.toISOString()}`;
  const [disabled] = await ctx.db
    .update(webhookEndpoints)
    .set({ enabled: false, disabledReason: reason, updatedAt: now })
    .where(and(eq(webhookEndpoints.id, e.id), eq(webhookEndpoints.enabled, true)))
    .returning({ id: webhookEndpoints.id });
  if (!disabled) return;
  forgetEndpoints(ctx, e.ownerId);
  ctx.log.warn({ endpoint_id: e.id }, 'webhook endpoint disabled after sustained failure');
  await publishEvent(
    ctx,
    e.ownerId,
    'webhook.endpoint_disabled',
    { endpoint_id: e.id, url: e.url, reason },
    { exceptEndpoint: e.id },
  );
}

/**
 * After a restart of the in-process queue (whose delayed jobs died with it): queue every pending
 * message again, at its planned time (now for one whose attempt was cut short). BullMQ keeps its jobs.
 */
export async function recoverPending(ctx: AppContext): Promise<void> {
  if (ctx.jobs.kind !== 'in-process' || ctx.config.processRole === 'api') return;
  const due = await ctx.db
    .select({ id: webhookMessages.id, attempts: webhookMessages.attempts, at: webhookMessages.nextAttemptAt })
    .from(webhookMessages)
    .where(eq(webhookMessages.status, 'pending'));
  for (const m of due) await schedule(ctx, m.id, m.at ?? new Date(), m.attempts + 1);
}

/** Put dead-lettered message `m` back to `pending` for a fresh 24 h of attempts, starting now. */
export async function requeue(ctx: AppContext, m: MessageRow): Promise<MessageRow> {
  const now = new Date();
  const [row] = await ctx.db
    .update(webhookMessages)
    .set({
      status: 'pending',
      nextAttemptAt: now,
      giveUpAt: new Date(now.getTime() + ctx.config.webhooks.maxAgeMs),
      updatedAt: now,
    })
    .where(eq(webhookMessages.id, m.id))
    .returning();
  await schedule(ctx, m.id, now, row.attempts + 1);
  return row;
}
