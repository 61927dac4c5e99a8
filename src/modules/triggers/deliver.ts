/**
 * Receiving a delivery at `POST /hooks/:trigger_id` — an unauthenticated URL, so everything here
 * assumes a hostile caller: unknown or disabled trigger → 404; not verified with the trigger's
 * secret → 401 and nothing stored; verified but over the trigger's per-minute limit → 429; a
 * delivery id seen in the last 24 h → 202 with the first delivery's invocation and nothing run;
 * otherwise an async invocation (trigger `trigger`) with `{ trigger_id, delivery_id, headers,
 * body }` → 202. Bodies above 1 MiB never reach this code (413 from the route's body limit).
 */
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { and, eq, lt } from 'drizzle-orm';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Static } from 'typebox';
import type { AppContext } from '../../context.js';
import { agentTriggers, triggerDeliveries } from '../../db/schema/index.js';
import { AppError, notFound } from '../../http/errors.js';
import { isId } from '../../http/ids.js';
import { decryptSecret } from '../../lib/secrets.js';
import { invokeAgent } from '../deployments/invocations.js';
import { runPrincipal } from '../schedules/principal.js';
import type { DeliveryAcceptedSchema } from './schemas.js';
import type { TriggerRow } from './service.js';
import { verifyDelivery, type TriggerMode } from './verify.js';

/** Largest accepted body, bytes (1 MiB). */
export const MAX_BODY_BYTES = 1024 * 1024;
/** How long a delivery id is remembered, ms. */
export const DEDUPE_MS = 24 * 60 * 60 * 1000;

/**
 * Request headers passed to the agent (lower-case). Credentials and signatures are never passed:
 * the agent sees what the sender said, not the proof.
 */
export const FORWARDED_HEADERS = [
  'content-type',
  'user-agent',
  'webhook-id',
  'webhook-timestamp',
  'x-github-event',
  'x-github-delivery',
  'x-github-hook-id',
  'x-github-hook-installation-target-id',
  'x-github-hook-installation-target-type',
  'idempotency-key',
] as const;

function limiterFor(ctx: AppContext, points: number): RateLimiterAbstract {
  const limiters = (ctx.triggerLimits ??= new Map());
  let l = limiters.get(points);
  if (!l) {
    const memory = new RateLimiterMemory({ points, duration: 60, keyPrefix: `trg${points}` });
    // Shared by every instance through Redis; while Redis fails, each instance counts alone.
    l = ctx.redis
      ? new RateLimiterRedis({
          storeClient: ctx.redis,
          points,
          duration: 60,
          keyPrefix: `${ctx.config.rateLimit.redisPrefix}trg${points}`,
          insuranceLimiter: memory,
        })
      : memory;
    limiters.set(points, l);
  }
  return l;
}

/** @throws AppError rate_limited (429, Retry-After) when trigger `t` has used its minute */
async function consume(ctx: AppContext, t: TriggerRow): Promise<void> {
  try {
    await limiterFor(ctx, t.rateLimitPerMinute).consume(t.id);
  } catch (err) {
    if (!(err instanceof RateLimiterRes)) throw err;
    throw new AppError('rate_limited', `This trigger accepts ${t.rateLimitPerMinute} deliveries per minute`, {
      headers: { 'retry-after': String(Math.max(1, Math.ceil(err.msBeforeNext / 1000))) },
    });
  }
}

/** The body as the agent gets it: parsed JSON, text, or base64 for anything else. */
function bodyOf(contentType: string | undefined, raw: Buffer): { body: unknown; body_encoding?: 'base64' } {
  const type = (contentType ?? '').toLowerCase();
  if (/[/+]json\b/.test(type)) {
    try {
      return { body: JSON.parse(raw.toString('utf8')) };
    } catch {
      return { body: raw.toString('utf8') };
    }
  }
  if (
    type.startsWith('text/') ||
    type.startsWith('application/x-www-form-urlencoded') ||
    type.startsWith('application/xml')
  )
    return { body: raw.toString('utf8') };
  return raw.length ? { body: raw.toString('base64'), body_encoding: 'base64' } : { body: null };
}

/**
 * Receive one delivery of trigger `triggerId` (raw `body`, request `headers`).
 * @throws AppError not_found (unknown or disabled trigger); invalid_credentials (401, not stored);
 *   rate_limited (429); invalid_state (nothing deployed: the delivery is forgotten so the sender's
 *   retry can succeed later); service_unavailable
 */
export async function receiveDelivery(
  ctx: AppContext,
  triggerId: string,
  headers: IncomingHttpHeaders,
  body: Buffer,
): Promise<Static<typeof DeliveryAcceptedSchema>> {
  if (!isId(triggerId, 'trg')) throw notFound('Trigger');
  const [t] = await ctx.db.select().from(agentTriggers).where(eq(agentTriggers.id, triggerId));
  if (!t?.enabled) throw notFound('Trigger');
  const senderId = await verifyDelivery(t.mode as TriggerMode, decryptSecret(ctx, t.secretEncrypted), headers, body);
  await consume(ctx, t);
  const deliveryId = senderId ? senderId.slice(0, 200) : randomUUID();
  const now = new Date();
  await ctx.db
    .delete(triggerDeliveries)
    .where(
      and(eq(triggerDeliveries.triggerId, t.id), lt(triggerDeliveries.receivedAt, new Date(now.getTime() - DEDUPE_MS))),
    );
  const [fresh] = await ctx.db
    .insert(triggerDeliveries)
    .values({ triggerId: t.id, deliveryId, receivedAt: now })
    .onConflictDoNothing()
    .returning();
  if (!fresh) {
    const [seen] = await ctx.db
      .select()
      .from(triggerDeliveries)
      .where(and(eq(triggerDeliveries.triggerId, t.id), eq(triggerDeliveries.deliveryId, deliveryId)));
    // A concurrent first delivery may not have its invocation yet: the sender retries.
    if (!seen?.invocationId)
      throw new AppError('conflict', 'This delivery is being processed; retry shortly', {
        headers: { 'retry-after': '1' },
      });
    return { delivery_id: deliveryId, invocation_id: seen.invocationId, duplicate: true };
  }
  const forwarded: Record<string, string> = {};
  for (const name of FORWARDED_HEADERS) {
    const v = headers[name];
    if (v !== undefined) forwarded[name] = Array.isArray(v) ? v.join(', ') : v;
  }
  const principal = runPrincipal(t, `trigger:${t.id}`);
  try {
    const inv = await invokeAgent(
      ctx,
      principal,
      t.agentId,
      {
        input: {
          trigger_id: t.id,
          delivery_id: deliveryId,
          headers: forwarded,
          ...bodyOf(headers['content-type'], body),
        },
        async: true,
      },
      { trigger: 'trigger' },
    );
    await ctx.db
      .update(triggerDeliveries)
      .set({ invocationId: inv.id })
      .where(and(eq(triggerDeliveries.triggerId, t.id), eq(triggerDeliveries.deliveryId, deliveryId)));
    await ctx.db.update(agentTriggers).set({ lastDeliveryAt: now }).where(eq(agentTriggers.id, t.id));
    return { delivery_id: deliveryId, invocation_id: inv.id, duplicate: false };
  } catch (err) {
    await ctx.db
      .delete(triggerDeliveries)
      .where(and(eq(triggerDeliveries.triggerId, t.id), eq(triggerDeliveries.deliveryId, deliveryId)));
    throw err;
  }
}
