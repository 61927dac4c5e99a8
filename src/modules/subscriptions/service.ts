/**
 * Subscriptions and quotas (spec group "Subscriptions"; DESIGN.md §7).
 *
 * A user subscribes to a published service on a plan (`free` | `pro` | `enterprise`). Plan limits
 * are configuration (`config.quotas`, env `QUOTA_<PLAN>_<WINDOW>`); windows are the calendar day
 * and the calendar month in UTC. The counters of the current windows live on the subscription row;
 * calls are counted by `quota.ts` (`consumeQuota`), plans and the role ladder are `plans.ts`. The
 * usage this module shows leaves out the units this instance's quota leases counted ahead and did
 * not use yet (`lease.ts`), and a change of plan or status ends the account's leases first.
 *
 * Quotas bind the account, not the subscription record (OWASP API6): the plans a caller
 * may pick follow its role ({@link plansFor}), and a new subscription to a service starts from the
 * counters of the account's previous one, so cancel + resubscribe resets nothing.
 */
import { and, desc, eq, sql } from 'drizzle-orm';
import type { Static } from 'typebox';
import type { Plan, Role } from '../../config.js';
import type { AppContext } from '../../context.js';
import { execRows } from '../../db/client.js';
import { subscriptions } from '../../db/schema/index.js';
import { requireScope, type UserPrincipal } from '../../http/auth.js';
import { AppError, notFound } from '../../http/errors.js';
import { newId, iso } from '../../http/ids.js';
import { mapPage, selectPage, type Page } from '../../http/pagination.js';
import { getServiceSummary } from '../registry/executable.js';
import { dropLeases, settleReturns, unusedLeased } from './lease.js';
import { pendingChanges, pinServiceTools, type PendingChange } from './pins.js';
import { BOTTOM_PLAN, PLAN_ORDER, assertPlanAllowed, effectivePlanSql, limitsOf, lit } from './plans.js';
import type { SubscriptionSchema } from './schemas.js';
import { usedNow, windowStates, windowsAt, type QuotaWindowState, type Windows } from './windows.js';

export type SubscriptionRow = typeof subscriptions.$inferSelect;
/** The subscription record of the API. */
export type SubscriptionView = Static<typeof SubscriptionSchema>;

// ------------------------------------------------------------------ records

/** The subscription record of `r` for an account holding `roles` (its effective plan and that plan's limits). */
function view(ctx: AppContext, r: SubscriptionRow, plans: EffectivePlans, w: Windows = windowsAt()): SubscriptionView {
  const effective = effectiveOf(plans, r.plan);
  return {
    id: r.id,
    service_id: r.serviceId,
    plan: r.plan as Plan,
    effective_plan: effective,
    status: r.status as SubscriptionView['status'],
    quotas: limitsOf(ctx, effective),
    used: shownUsage(ctx, r, w),
    created_at: r.createdAt.toISOString(),
    updated_at: r.updatedAt.toISOString(),
    canceled_at: iso(r.canceledAt),
  };
}

/**
 * The counters of `r` in the windows `w` as shown: without the units this instance's leases counted
 * and did not use yet (decision "subscriptions/quota-lease"), so one instance shows exact usage.
 */
function shownUsage(ctx: AppContext, r: SubscriptionRow, w: Windows): { day: number; month: number } {
  const used = usedNow(r, w);
  const unused = unusedLeased(ctx, r.id, w);
  return { day: Math.max(0, used.day - unused.day), month: Math.max(0, used.month - unused.month) };
}

/** For each plan, the plan whose limits apply to the account holding it now. */
type EffectivePlans = Record<Plan, Plan>;

/**
 * {@link EffectivePlans} of `userId`: the counting statement's own rule ({@link effectivePlanSql},
 * decision "subscriptions/demotion") over the account's stored roles, for every plan, in one query
 * (every plan the bottom one for an unknown account).
 */
async function effectivePlans(ctx: AppContext, userId: string): Promise<EffectivePlans> {
  const cols = PLAN_ORDER.map(
    (pl) => sql`${effectivePlanSql(sql`${lit(pl)}::text`, sql`roles`)} as ${sql.identifier(pl)}`,
  );
  const [u] = await execRows<EffectivePlans>(
    ctx.db,
    sql`select ${sql.join(cols, sql`, `)} from users where id = ${userId}`,
  );
  return u ?? (Object.fromEntries(PLAN_ORDER.map((pl) => [pl, BOTTOM_PLAN])) as EffectivePlans);
}

/** The plan that applies to a subscription stored on `plan` (an unknown stored plan counts as the bottom one, as in the count). */
function effectiveOf(plans: EffectivePlans, plan: string): Plan {
  return plans[plan as Plan] ?? BOTTOM_PLAN;
}

async function getRow(ctx: AppContext, userId: string, id: string): Promise<SubscriptionRow> {
  const [row] = await ctx.db
    .select()
    .from(subscriptions)
    .where(and(eq(subscriptions.id, id), eq(subscriptions.userId, userId)));
  if (!row) throw notFound('Subscription');
  return row;
}

/**
 * Subscribe `userId` (holding `roles`) to a published service (by id or name) on `plan`. The
 * counters of the current windows carry over from the user's latest earlier subscription to the
 * service, in the same INSERT (the old one is canceled, so it counts no more).
 * @throws AppError not_found (unknown, deleted or not published service), forbidden (plan above
 *         the role), conflict (already subscribed)
 */
export async function subscribe(
  ctx: AppContext,
  userId: string,
  roles: readonly Role[],
  input: { service_id: string; plan?: Plan },
): Promise<SubscriptionView> {
  const svc = await getServiceSummary(ctx, input.service_id);
  if (!svc || svc.status !== 'published') throw notFound('Service');
  const plan = input.plan ?? 'free';
  assertPlanAllowed(plan, roles);
  const prev = (col: string) =>
    sql`(select p.${sql.identifier(col)} from subscriptions p where p.user_id = ${userId} and p.service_id = ${svc.id} order by p.id desc limit 1)`;
  const [row] = await ctx.db
    .insert(subscriptions)
    .values({
      id: newId('sub'),
      userId,
      serviceId: svc.id,
      plan,
      dayStart: sql`coalesce(${prev('day_start')}, (now() at time zone 'utc')::date)`,
      dayUsed: sql`coalesce(${prev('day_used')}, 0)`,
      monthStart: sql`coalesce(${prev('month_start')}, date_trunc('month', now() at time zone 'utc')::date)`,
      monthUsed: sql`coalesce(${prev('month_used')}, 0)`,
    })
    .onConflictDoNothing()
    .returning();
  if (!row)
    throw new AppError('conflict', `Already subscribed to ${svc.name}; change the plan with PUT /subscriptions/:id`);
  await pinServiceTools(ctx, { id: userId, kind: 'account' }, svc.id);
  return view(ctx, row, await effectivePlans(ctx, userId));
}

/** The user's subscriptions (all, or by `status`), newest first. */
export async function listSubscriptions(
  ctx: AppContext,
  userId: string,
  q: { limit?: number; cursor?: string; status?: 'active' | 'canceled'; service_id?: string },
): Promise<Page<SubscriptionView>> {
  await settleReturns(ctx, userId);
  const rows = await selectPage(ctx.db, subscriptions, q, [
    eq(subscriptions.userId, userId),
    q.status ? eq(subscriptions.status, q.status) : undefined,
    q.service_id ? eq(subscriptions.serviceId, q.service_id) : undefined,
  ]);
  const w = windowsAt();
  const plans = await effectivePlans(ctx, userId);
  return mapPage(rows, (r) => view(ctx, r, plans, w));
}

/** One subscription of the user. @throws AppError not_found (also another user's) */
export async function getSubscription(ctx: AppContext, userId: string, id: string): Promise<SubscriptionView> {
  await settleReturns(ctx, userId);
  const [row, plans] = await Promise.all([getRow(ctx, userId, id), effectivePlans(ctx, userId)]);
  const pending = await pendingChanges(ctx, userId, row.serviceId);
  return { ...view(ctx, row, plans), ...(pending.length ? { pending_changes: pending } : {}) };
}

/**
 * Accept the changed (or added) tool definitions of a subscription's service: re-pin all of them,
 * or the tools named. Trusting a changed definition is a person's decision, like approving a held
 * call: it needs `approvals:decide`, which an API key holds only when created with it (ADR 0973).
 * @throws AppError not_found (also another user's), insufficient_scope, invalid_state (canceled)
 */
export async function acceptSubscriptionChanges(
  ctx: AppContext,
  user: UserPrincipal,
  id: string,
  toolNames?: string[],
): Promise<{ pinned: string[]; pending_changes: PendingChange[] }> {
  const row = await getRow(ctx, user.userId, id);
  requireScope(user, 'approvals:decide');
  if (row.status !== 'active') throw new AppError('invalid_state', 'The subscription is canceled');
  const pinned = await pinServiceTools(ctx, { id: user.userId, kind: 'account' }, row.serviceId, toolNames);
  return { pinned, pending_changes: await pendingChanges(ctx, user.userId, row.serviceId) };
}

/**
 * Change the plan of an active subscription (counters of the current windows are kept, so a
 * downgrade can leave the caller over its new limit until the window resets). The account's quota
 * leases on this instance end (units given back) before and after the change, so no call is granted
 * here under the old plan once this answers; another instance's end within a second.
 * @throws AppError not_found, forbidden (plan above the role), invalid_state (canceled)
 */
export async function changePlan(
  ctx: AppContext,
  userId: string,
  roles: readonly Role[],
  id: string,
  plan: Plan,
): Promise<SubscriptionView> {
  await getRow(ctx, userId, id);
  assertPlanAllowed(plan, roles);
  await dropLeases(ctx, userId);
  const [row] = await ctx.db
    .update(subscriptions)
    .set({ plan, updatedAt: new Date() })
    .where(and(eq(subscriptions.id, id), eq(subscriptions.userId, userId), eq(subscriptions.status, 'active')))
    .returning();
  // A lease opened between the first drop and the update was counted under the old plan.
  await dropLeases(ctx, userId);
  if (row) return view(ctx, row, await effectivePlans(ctx, userId));
  throw new AppError('invalid_state', 'The subscription is canceled; subscribe again with POST /subscriptions');
}

/**
 * Cancel a subscription: status `canceled`, executions refused from then on. Canceling a
 * canceled subscription answers it unchanged. The account's quota leases on this instance end
 * first (as for {@link changePlan}). @throws AppError not_found
 */
export async function cancelSubscription(ctx: AppContext, userId: string, id: string): Promise<SubscriptionView> {
  await dropLeases(ctx, userId);
  const now = new Date();
  const [row] = await ctx.db
    .update(subscriptions)
    .set({ status: 'canceled', canceledAt: now, updatedAt: now })
    .where(and(eq(subscriptions.id, id), eq(subscriptions.userId, userId), eq(subscriptions.status, 'active')))
    .returning();
  await dropLeases(ctx, userId);
  return view(ctx, row ?? (await getRow(ctx, userId, id)), await effectivePlans(ctx, userId));
}

/** Ids of the services the user holds an active subscription to (newest subscription first). */
export async function subscribedServiceIds(ctx: AppContext, userId: string): Promise<string[]> {
  const rows = await ctx.db
    .select({ serviceId: subscriptions.serviceId })
    .from(subscriptions)
    .where(and(eq(subscriptions.userId, userId), eq(subscriptions.status, 'active')))
    .orderBy(desc(subscriptions.id));
  return rows.map((r) => r.serviceId);
}

/** True when userId holds an active (not canceled) subscription to serviceId. */
export async function hasActiveSubscription(ctx: AppContext, userId: string, serviceId: string): Promise<boolean> {
  const rows = await ctx.db
    .select({ id: subscriptions.id })
    .from(subscriptions)
    .where(
      and(eq(subscriptions.userId, userId), eq(subscriptions.serviceId, serviceId), eq(subscriptions.status, 'active')),
    )
    .limit(1);
  return rows.length > 0;
}

/** Quota windows of one subscription (`GET /subscriptions/:id/quotas`). @throws AppError not_found */
export async function getQuotas(
  ctx: AppContext,
  userId: string,
  id: string,
): Promise<{ plan: Plan; windows: QuotaWindowState[] }> {
  await settleReturns(ctx, userId);
  const [row, plans] = await Promise.all([getRow(ctx, userId, id), effectivePlans(ctx, userId)]);
  const w = windowsAt();
  const used = shownUsage(ctx, row, w);
  const plan = effectiveOf(plans, row.plan);
  return { plan, windows: windowStates(ctx, plan, used.day, used.month, w) };
}
