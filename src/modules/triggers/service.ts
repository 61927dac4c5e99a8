/**
 * Inbound triggers of deployed agents (`/v2/agents/:id/triggers`): each has its own URL
 * (`/hooks/:trigger_id`), a verification mode and a shared secret, shown once and stored
 * encrypted. Who may manage an agent's triggers is who may invoke it: its owner, or the agent
 * itself (another account's agent answers 404). Deliveries are received in `deliver.ts`.
 */
import { randomBytes } from 'node:crypto';
import { and, count, eq } from 'drizzle-orm';
import type { Static } from 'typebox';
import type { AppContext } from '../../context.js';
import { agentTriggers } from '../../db/schema/index.js';
import type { Principal } from '../../http/auth.js';
import { AppError, notFound } from '../../http/errors.js';
import { iso, newId } from '../../http/ids.js';
import { mapPage, selectPage, type Page } from '../../http/pagination.js';
import { encryptSecret } from '../../lib/secrets.js';
import { agentInScope, principalId } from '../deployments/service.js';
import type { CreateTriggerBody, TriggerCreatedSchema, TriggerSchema, UpdateTriggerBody } from './schemas.js';
import type { TriggerMode } from './verify.js';

export type TriggerView = Static<typeof TriggerSchema>;
export type TriggerRow = typeof agentTriggers.$inferSelect;

/** Triggers one agent may have. */
export const MAX_TRIGGERS_PER_AGENT = 20;

/**
 * A new secret in the form the mode's senders expect: Standard Webhooks and Stripe
 * `whsec_<base64 of 24 random bytes>` (the Standard Webhooks secret format), GitHub 32 random
 * bytes in hex, bearer 32 random bytes base64url.
 */
function generateSecret(mode: TriggerMode): string {
  if (mode === 'github') return randomBytes(32).toString('hex');
  if (mode === 'bearer') return randomBytes(32).toString('base64url');
  return `whsec_${randomBytes(24).toString('base64')}`;
}

export function triggerView(ctx: AppContext, t: TriggerRow): TriggerView {
  return {
    id: t.id,
    agent_id: t.agentId,
    name: t.name,
    mode: t.mode as TriggerMode,
    url: `${ctx.config.publicUrl.replace(/\/$/, '')}/hooks/${t.id}`,
    enabled: t.enabled,
    rate_limit_per_minute: t.rateLimitPerMinute,
    created_by: t.createdBy,
    created_at: iso(t.createdAt),
    updated_at: iso(t.updatedAt),
    last_delivery_at: iso(t.lastDeliveryAt),
  };
}

/**
 * Create a trigger of agent `agentId`; the answer carries the secret, never shown again.
 * A `standard_webhooks` secret given by the caller must be `whsec_<base64>`.
 * @throws AppError not_found; validation_failed; limit_reached (20 per agent)
 */
export async function createTrigger(
  ctx: AppContext,
  p: Principal,
  agentId: string,
  body: Static<typeof CreateTriggerBody>,
): Promise<Static<typeof TriggerCreatedSchema>> {
  const agent = await agentInScope(ctx, p, agentId);
  if (
    body.mode === 'standard_webhooks' &&
    body.secret !== undefined &&
    !/^whsec_[A-Za-z0-9+/]+={0,2}$/.test(body.secret)
  ) {
    throw new AppError('validation_failed', 'A Standard Webhooks secret is whsec_ followed by base64', {
      errors: [{ in: 'body', pointer: '/secret', message: 'must be whsec_<base64>' }],
    });
  }
  const [{ n }] = await ctx.db.select({ n: count() }).from(agentTriggers).where(eq(agentTriggers.agentId, agentId));
  if (n >= MAX_TRIGGERS_PER_AGENT)
    throw new AppError('limit_reached', `An agent has at most ${MAX_TRIGGERS_PER_AGENT} triggers`);
  const secret = body.secret ?? generateSecret(body.mode);
  const [row] = await ctx.db
    .insert(agentTriggers)
    .values({
      id: newId('trg'),
      agentId,
      ownerId: agent.ownerId,
      name: body.name ?? null,
      mode: body.mode,
      secretEncrypted: encryptSecret(ctx, secret),
      enabled: body.enabled ?? true,
      rateLimitPerMinute: body.rate_limit_per_minute ?? 120,
      createdBy: principalId(p),
      invokerScope: p.scopes ? [...p.scopes].join(' ') : null,
    })
    .returning();
  return { ...triggerView(ctx, row), secret };
}

async function triggerInScope(ctx: AppContext, p: Principal, agentId: string, triggerId: string): Promise<TriggerRow> {
  await agentInScope(ctx, p, agentId);
  const [row] = await ctx.db
    .select()
    .from(agentTriggers)
    .where(and(eq(agentTriggers.id, triggerId), eq(agentTriggers.agentId, agentId)));
  if (!row) throw notFound('Trigger');
  return row;
}

/** Triggers of the agent, newest first (no secrets). @throws AppError not_found */
export async function listTriggers(
  ctx: AppContext,
  p: Principal,
  agentId: string,
  q: { limit?: number; cursor?: string },
): Promise<Page<TriggerView>> {
  await agentInScope(ctx, p, agentId);
  return mapPage(await selectPage(ctx.db, agentTriggers, q, [eq(agentTriggers.agentId, agentId)]), (t) =>
    triggerView(ctx, t),
  );
}

/** One trigger (no secret). @throws AppError not_found */
export async function getTrigger(
  ctx: AppContext,
  p: Principal,
  agentId: string,
  triggerId: string,
): Promise<TriggerView> {
  return triggerView(ctx, await triggerInScope(ctx, p, agentId, triggerId));
}

/** Rename, re-limit, disable (its URL then answers 404) or enable a trigger. @throws AppError not_found */
export async function updateTrigger(
  ctx: AppContext,
  p: Principal,
  agentId: string,
  triggerId: string,
  body: Static<typeof UpdateTriggerBody>,
): Promise<TriggerView> {
  const cur = await triggerInScope(ctx, p, agentId, triggerId);
  const [row] = await ctx.db
    .update(agentTriggers)
    .set({
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(body.rate_limit_per_minute !== undefined ? { rateLimitPerMinute: body.rate_limit_per_minute } : {}),
      ...(body.enabled !== undefined ? { enabled: body.enabled } : {}),
      updatedAt: new Date(),
    })
    .where(eq(agentTriggers.id, cur.id))
    .returning();
  return triggerView(ctx, row);
}

/** Delete a trigger (its URL answers 404 from now on). @throws AppError not_found */
export async function deleteTrigger(ctx: AppContext, p: Principal, agentId: string, triggerId: string): Promise<void> {
  const cur = await triggerInScope(ctx, p, agentId, triggerId);
  await ctx.db.delete(agentTriggers).where(eq(agentTriggers.id, cur.id));
}
