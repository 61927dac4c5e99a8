/**
 * Outbound webhook endpoints of an account (`/v2/webhooks`): create (the signing secret is shown
 * once and stored encrypted), list, change, re-enable, delete; the delivery log of an endpoint and
 * the manual replay of a message. Users only (an agent token gets 403 at the route scope); another
 * account's endpoint or message answers 404. Delivery itself is in `delivery.ts`.
 */
import { randomBytes } from 'node:crypto';
import { and, eq } from 'drizzle-orm';
import type { Static } from 'typebox';
import type { AppContext } from '../../context.js';
import { webhookEndpoints, webhookMessages } from '../../db/schema/index.js';
import { accountOf, type Principal } from '../../http/auth.js';
import { AppError, notFound } from '../../http/errors.js';
import { iso, newId } from '../../http/ids.js';
import { mapPage, selectPage, type Page } from '../../http/pagination.js';
import { encryptSecret } from '../../lib/secrets.js';
import { refusedLiteralTarget } from '../../upstream/address.js';
import { forgetEndpoints, requeue, type EndpointRow, type MessageRow } from './delivery.js';
import type {
  CreateEndpointBody,
  EndpointCreatedSchema,
  EndpointSchema,
  MessageSchema,
  UpdateEndpointBody,
} from './schemas.js';

export type EndpointView = Static<typeof EndpointSchema>;
export type MessageView = Static<typeof MessageSchema>;

function endpointView(e: EndpointRow): EndpointView {
  return {
    id: e.id,
    url: e.url,
    description: e.description,
    events: e.events,
    enabled: e.enabled,
    disabled_reason: e.disabledReason,
    failing_since: iso(e.failingSince),
    created_at: iso(e.createdAt),
    updated_at: iso(e.updatedAt),
  };
}

function messageView(m: MessageRow): MessageView {
  return {
    id: m.id,
    endpoint_id: m.endpointId,
    event_type: m.eventType,
    payload: m.payload,
    status: m.status as MessageView['status'],
    attempts: m.attempts,
    attempt_log: m.log,
    next_attempt_at: iso(m.nextAttemptAt),
    created_at: iso(m.createdAt),
    delivered_at: iso(m.deliveredAt),
  };
}

/**
 * `url` normalised. A host that is an IP literal the SSRF guard refuses (private, link-local,
 * loopback unless allowed) is refused now; host names are checked at every delivery, after DNS.
 * @throws AppError validation_failed unless `url` is http(s) without credentials, to an admitted address
 */
function checkUrl(ctx: AppContext, url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    u = new URL('invalid:');
  }
  if ((u.protocol !== 'https:' && u.protocol !== 'http:') || u.username || u.password) {
    throw new AppError('validation_failed', 'url must be an http(s) URL without credentials', {
      errors: [{ in: 'body', pointer: '/url', message: 'http(s) URL without user info' }],
    });
  }
  const refused = refusedLiteralTarget(u.toString(), ctx.config.upstream.allowLoopback);
  if (refused) {
    const message = `points at a ${refused} address, which webhook deliveries may not reach`;
    throw new AppError('validation_failed', `url ${message}`, { errors: [{ in: 'body', pointer: '/url', message }] });
  }
  return u.toString();
}

/** Subscribe `body.url` to `body.events`; the answer carries the signing secret, never shown again. @throws AppError validation_failed */
export async function createEndpoint(
  ctx: AppContext,
  p: Principal,
  body: Static<typeof CreateEndpointBody>,
): Promise<Static<typeof EndpointCreatedSchema>> {
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const [row] = await ctx.db
    .insert(webhookEndpoints)
    .values({
      id: newId('whk'),
      ownerId: accountOf(p),
      url: checkUrl(ctx, body.url),
      description: body.description ?? null,
      events: body.events,
      secretEncrypted: encryptSecret(ctx, secret),
    })
    .returning();
  forgetEndpoints(ctx, row.ownerId);
  return { ...endpointView(row), secret };
}

async function endpointInScope(ctx: AppContext, p: Principal, id: string): Promise<EndpointRow> {
  const [row] = await ctx.db
    .select()
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.id, id), eq(webhookEndpoints.ownerId, accountOf(p))));
  if (!row) throw notFound('Webhook endpoint');
  return row;
}

/** The account's endpoints, newest first. */
export async function listEndpoints(
  ctx: AppContext,
  p: Principal,
  q: { limit?: number; cursor?: string },
): Promise<Page<EndpointView>> {
  return mapPage(
    await selectPage(ctx.db, webhookEndpoints, q, [eq(webhookEndpoints.ownerId, accountOf(p))]),
    endpointView,
  );
}

/** One endpoint. @throws AppError not_found */
export async function getEndpoint(ctx: AppContext, p: Principal, id: string): Promise<EndpointView> {
  return endpointView(await endpointInScope(ctx, p, id));
}

/** Change an endpoint; `enabled: true` re-enables one disabled after failures. @throws AppError not_found; validation_failed */
export async function updateEndpoint(
  ctx: AppContext,
  p: Principal,
  id: string,
  body: Static<typeof UpdateEndpointBody>,
): Promise<EndpointView> {
  const cur = await endpointInScope(ctx, p, id);
  const [row] = await ctx.db
    .update(webhookEndpoints)
    .set({
      ...(body.url !== undefined ? { url: checkUrl(ctx, body.url) } : {}),
      ...(body.events !== undefined ? { events: body.events } : {}),
      ...(body.description !== undefined ? { description: body.description } : {}),
      ...(body.enabled !== undefined ? { enabled: body.enabled, disabledReason: null, failingSince: null } : {}),
      updatedAt: new Date(),
    })
    .where(eq(webhookEndpoints.id, cur.id))
    .returning();
  forgetEndpoints(ctx, cur.ownerId);
  return endpointView(row);
}

/** Delete an endpoint and its messages. @throws AppError not_found */
export async function deleteEndpoint(ctx: AppContext, p: Principal, id: string): Promise<void> {
  const cur = await endpointInScope(ctx, p, id);
  await ctx.db.delete(webhookEndpoints).where(eq(webhookEndpoints.id, cur.id));
  forgetEndpoints(ctx, cur.ownerId);
}

/** The endpoint's messages (delivery log), newest first, optionally by status (`failed`: the dead-letter list). @throws AppError not_found */
export async function listMessages(
  ctx: AppContext,
  p: Principal,
  id: string,
  q: { status?: string; limit?: number; cursor?: string },
): Promise<Page<MessageView>> {
  const e = await endpointInScope(ctx, p, id);
  return mapPage(
    await selectPage(ctx.db, webhookMessages, q, [
      eq(webhookMessages.endpointId, e.id),
      q.status ? eq(webhookMessages.status, q.status) : undefined,
    ]),
    messageView,
  );
}

/**
 * Replay a message: a `failed` (dead-lettered) one gets a fresh 24 h of attempts, a `delivered` one
 * is sent again (same `webhook-id`). @throws AppError not_found; invalid_state (still pending, or the endpoint is disabled)
 */
export async function replayMessage(
  ctx: AppContext,
  p: Principal,
  id: string,
  messageId: string,
): Promise<MessageView> {
  const e = await endpointInScope(ctx, p, id);
  const [m] = await ctx.db
    .select()
    .from(webhookMessages)
    .where(and(eq(webhookMessages.id, messageId), eq(webhookMessages.endpointId, e.id)));
  if (!m) throw notFound('Webhook message');
  if (m.status === 'pending') throw new AppError('invalid_state', 'The message is still being delivered');
  if (!e.enabled) throw new AppError('invalid_state', 'The endpoint is disabled; enable it first');
  return messageView(await requeue(ctx, m));
}
