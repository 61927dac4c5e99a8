/**
 * Agent tool subscriptions: which services an agent may call tools of. The owner
 * must hold an active subscription to the service (subscriptions module) or own it (registry).
 * Separate from `service.ts` so the agents contract functions do not depend on those modules.
 */
import { and, eq, inArray, or } from 'drizzle-orm';
import type { Static } from 'typebox';
import type { AppContext } from '../../context.js';
import { agentToolSubscriptions } from '../../db/schema/index.js';
import { requireScope, type Principal, type UserPrincipal } from '../../http/auth.js';
import { AppError, notFound } from '../../http/errors.js';
import { mapPage, selectPage, type Page } from '../../http/pagination.js';
import { getServiceSummary } from '../registry/executable.js';
import { pendingChanges, pinServiceTools, type PendingChange } from '../subscriptions/pins.js';
import { hasActiveSubscription } from '../subscriptions/service.js';
import type { AgentToolChangesSchema, AgentToolSchema } from './schemas.js';
import { agentToolsChanged, assertManagesAgents, getAgentForAccount, isAgentSubscribed } from './service.js';

/** An agent's subscription to a service. */
export type AgentToolView = Static<typeof AgentToolSchema>;

/** An agent's subscription to a service with its pending tool-definition changes. */
export type AgentToolChangesView = Static<typeof AgentToolChangesSchema>;

function toolView(r: typeof agentToolSubscriptions.$inferSelect): AgentToolView {
  return { service_id: r.serviceId, service: r.serviceName, subscribed_at: r.createdAt.toISOString() };
}

/**
 * The owner's agent for a tool-subscription change or read: the credential must hold
 * `agents:manage` (an API key without it changes no agent's tools), and the agent must be the
 * owner's (another account's answers 404).
 * @throws AppError insufficient_scope | not_found
 */
async function managedAgent(ctx: AppContext, owner: UserPrincipal, agentId: string): Promise<string> {
  assertManagesAgents(owner);
  await getAgentForAccount(ctx, owner.userId, agentId);
  return owner.userId;
}

/**
 * The agent for a read of its tool state by `p`: its owner, as {@link managedAgent} admits it
 * (`agents:manage`), or the agent itself with its own token (no scope needed: ADR 0972). A sibling
 * agent, and anybody of another account, gets 404.
 * @throws AppError insufficient_scope | not_found
 */
async function readableAgent(ctx: AppContext, p: Principal, agentId: string): Promise<void> {
  if (p.kind === 'user') {
    await managedAgent(ctx, p, agentId);
    return;
  }
  if (p.agentId !== agentId) throw notFound('Agent');
  await getAgentForAccount(ctx, p.ownerId, agentId);
}

/**
 * The agent's subscriptions matching a service reference: its id, its name at subscription time
 * (so a deleted service is still found) or the id of the service now known by that name.
 */
async function subscriptionsMatching(ctx: AppContext, serviceRef: string) {
  const svc = await getServiceSummary(ctx, serviceRef);
  const refs = [serviceRef, ...(svc ? [svc.id] : [])];
  return or(inArray(agentToolSubscriptions.serviceId, refs), eq(agentToolSubscriptions.serviceName, serviceRef));
}

/** A page of the agent's tool subscriptions (keyset on the service id, descending), or those matching `q.service`. */
async function toolPage(
  ctx: AppContext,
  agentId: string,
  q: { limit?: number; cursor?: string; service?: string },
): Promise<Page<AgentToolView>> {
  const only = q.service ? await subscriptionsMatching(ctx, q.service) : undefined;
  return mapPage(
    await selectPage(
      ctx.db,
      agentToolSubscriptions,
      q,
      [eq(agentToolSubscriptions.agentId, agentId), only],
      'serviceId',
    ),
    toolView,
  );
}

/**
 * Subscribe the agent to a service (by name or id). The owner must hold an active subscription to
 * the service or own it. Idempotent: `created` is false when it was already subscribed.
 * @throws AppError not_found (agent, or a service unknown or not visible to the owner: another
 *   account's unpublished one) | not_subscribed (a published service the owner neither subscribes to nor owns)
 */
export async function subscribeAgentTool(
  ctx: AppContext,
  owner: UserPrincipal,
  agentId: string,
  serviceRef: string,
): Promise<{ created: boolean; subscription: AgentToolView }> {
  const accountId = await managedAgent(ctx, owner, agentId);
  const svc = await getServiceSummary(ctx, serviceRef);
  if (!svc) throw notFound('Service');
  if (svc.ownerId !== accountId && !(await hasActiveSubscription(ctx, accountId, svc.id))) {
    // Another account's unpublished service does not exist for this account (as in the catalog):
    // 404 like an unknown name, never a 403 that confirms the name.
    if (svc.status !== 'published') throw notFound('Service');
    throw new AppError(
      'not_subscribed',
      `Subscribe to "${svc.name}" first (POST /subscriptions); an agent may use only services its owner subscribes to or owns`,
    );
  }
  const [inserted] = await ctx.db
    .insert(agentToolSubscriptions)
    .values({ agentId, serviceId: svc.id, serviceName: svc.name })
    .onConflictDoNothing()
    .returning();
  if (inserted) {
    await pinServiceTools(ctx, { id: agentId, kind: 'agent' }, svc.id);
    await agentToolsChanged(ctx, agentId, [svc.id]);
    return { created: true, subscription: toolView(inserted) };
  }
  const [existing] = await ctx.db
    .select()
    .from(agentToolSubscriptions)
    .where(and(eq(agentToolSubscriptions.agentId, agentId), eq(agentToolSubscriptions.serviceId, svc.id)));
  return { created: false, subscription: toolView(existing) };
}

/**
 * Unsubscribe the agent from a service, by name or id (works after the service was deleted);
 * `serviceRef` is the body's `service`, else the query's.
 * @throws AppError validation_failed (no service named), not_found (agent, or no such subscription)
 */
export async function unsubscribeAgentTool(
  ctx: AppContext,
  owner: UserPrincipal,
  agentId: string,
  serviceRef: string | undefined,
): Promise<void> {
  if (!serviceRef) {
    throw new AppError('validation_failed', 'Name the service in the body or as ?service=', {
      errors: [{ in: 'body', pointer: '/service', message: 'is required' }],
    });
  }
  await managedAgent(ctx, owner, agentId);
  const rows = await ctx.db
    .delete(agentToolSubscriptions)
    .where(and(eq(agentToolSubscriptions.agentId, agentId), await subscriptionsMatching(ctx, serviceRef)))
    .returning({ id: agentToolSubscriptions.serviceId });
  if (rows.length === 0) throw notFound('Subscription of this agent to the service');
  await agentToolsChanged(
    ctx,
    agentId,
    rows.map((r) => r.id),
  );
}

/**
 * The agent's tool subscriptions, a keyset page ordered by service id descending: service ids are
 * ULIDs, so the most recently registered service comes first (not the most recent subscription).
 * @throws AppError not_found (agent) | validation_failed (malformed cursor)
 */
export async function listAgentTools(
  ctx: AppContext,
  owner: UserPrincipal,
  agentId: string,
  q: { limit?: number; cursor?: string },
): Promise<Page<AgentToolView>> {
  await managedAgent(ctx, owner, agentId);
  return toolPage(ctx, agentId, q);
}

/**
 * The agent's pending tool-definition changes (docs/governance.md "Pinned tool definitions"): a
 * page of its tool subscriptions, ordered as {@link listAgentTools} lists them, or the one service
 * `q.service` names, each with the {@link PendingChange}s `GET /subscriptions/:id` gives an account
 * (empty when nothing is pending). Read by the owner (a credential with `agents:manage`) or by the
 * agent itself; only the owner accepts them ({@link acceptAgentToolChanges}).
 * @throws AppError insufficient_scope | not_found (agent, or a named service the agent is not subscribed to)
 */
export async function listAgentToolChanges(
  ctx: AppContext,
  p: Principal,
  agentId: string,
  q: { limit?: number; cursor?: string; service?: string },
): Promise<Page<AgentToolChangesView>> {
  await readableAgent(ctx, p, agentId);
  const page = await toolPage(ctx, agentId, q);
  if (q.service && !q.cursor && page.data.length === 0) throw notFound('Agent tool subscription');
  const data = await Promise.all(
    page.data.map(async (t) => ({ ...t, pending_changes: await pendingChanges(ctx, agentId, t.service_id) })),
  );
  return { data, next_cursor: page.next_cursor };
}

/**
 * Accept changed (or added) tool definitions of a service the agent is subscribed to: re-pin all
 * its tools, or the tools named (docs/governance.md "Pinned tool definitions"). Like approving a
 * held call, it needs `approvals:decide` (opt-in for API keys, ADR 0973) besides `agents:manage`.
 * @throws AppError not_found (agent, service, or no agent tool subscription to it), insufficient_scope
 */
export async function acceptAgentToolChanges(
  ctx: AppContext,
  owner: UserPrincipal,
  agentId: string,
  serviceRef: string,
  toolNames?: string[],
): Promise<{ pinned: string[]; pending_changes: PendingChange[] }> {
  await managedAgent(ctx, owner, agentId);
  requireScope(owner, 'approvals:decide');
  const svc = await getServiceSummary(ctx, serviceRef);
  if (!svc || !(await isAgentSubscribed(ctx, agentId, svc.id))) throw notFound('Agent tool subscription');
  const pinned = await pinServiceTools(ctx, { id: agentId, kind: 'agent' }, svc.id, toolNames);
  return { pinned, pending_changes: await pendingChanges(ctx, agentId, svc.id) };
}
