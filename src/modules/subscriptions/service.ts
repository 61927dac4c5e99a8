/**
 * Subscriptions and quotas (spec group "Subscriptions"; DESIGN.md §7).
 *
 * A user subscribes to a published service on a plan (`free` | `pro` | `enterprise`). Plan limits
 * are configuration (`config.quotas`, env `QUOTA_<PLAN>_<WINDOW>`); windows are the calendar day
 * and the calendar month in UTC. The counters of the current windows live on the subscription row
 * and are checked and incremented by ONE statement ({@link consumeQuota}) that locks the row and adds
 * at most what the quota still allows, which is exact under concurrency: PostgreSQL's row lock makes
 * a waiting statement read the version committed by the one it waited for (READ COMMITTED,
 * EvalPlanQual), and PGlite runs statements one at a time. Concurrent calls of one account to one
 * service are counted by one statement together.
 *
 * Quotas bind the account, not the subscription record (issue 11, OWASP API6): the plans a caller
 * may pick follow its role ({@link plansFor}), and a new subscription to a service starts from the
 * counters of the account's previous one, so cancel + resubscribe resets nothing.
 */
import { and, desc, eq } from 'drizzle-orm';
import { sql, type SQL } from 'drizzle-orm';
import type { Static } from 'typebox';
import type { Plan, Role } from '../../config.js';
import type { AppContext } from '../../context.js';
import { execRows } from '../../db/client.js';
import { prepareRaw, type PreparedRaw } from '../../db/prepared.js';
import { subscriptions } from '../../db/schema/index.js';
import { AppError, notFound } from '../../http/errors.js';
import { newId, iso } from '../../http/ids.js';
import { mapPage, selectPage, type Page } from '../../http/pagination.js';
import { getServiceSummary } from '../registry/executable.js';
import type { QuotaWindowSchema, QuotasSchema, SubscriptionSchema } from './schemas.js';

export type SubscriptionRow = typeof subscriptions.$inferSelect;
/** One quota window as shown to clients (`limit`/`remaining` null when unlimited; `resets_at` ISO 8601 UTC, the next window's start). */
export type QuotaWindowState = Static<typeof QuotaWindowSchema>;
export type QuotaWindow = QuotaWindowState['window'];

/** Quota state of one subscription: the quotas answer plus the subscription's id. */
export type QuotaState = Static<typeof QuotasSchema> & { subscription_id: string };

/** The subscription record of the API. */
export type SubscriptionView = Static<typeof SubscriptionSchema>;

// ------------------------------------------------------------------ windows

/** The current UTC windows: keys as `YYYY-MM-DD` dates and their reset instants. */
export interface Windows {
  day: string;
  month: string;
  dayResetsAt: Date;
  monthResetsAt: Date;
}

/** Calendar day and month (UTC) containing `now`. */
export function windowsAt(now: Date = new Date()): Windows {
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth();
  const d = now.getUTCDate();
  const pad = (n: number) => String(n).padStart(2, '0');
  return {
    day: `${y}-${pad(m + 1)}-${pad(d)}`,
    month: `${y}-${pad(m + 1)}-01`,
    dayResetsAt: new Date(Date.UTC(y, m, d + 1)),
    monthResetsAt: new Date(Date.UTC(y, m + 1, 1)),
  };
}

function limitsOf(ctx: AppContext, plan: string): { day: number | null; month: number | null } {
  return ctx.config.quotas[plan as Plan] ?? ctx.config.quotas.free;
}

function windowStates(ctx: AppContext, plan: string, dayUsed: number, monthUsed: number, w: Windows): QuotaWindowState[] {
  const l = limitsOf(ctx, plan);
  const one = (window: QuotaWindow, limit: number | null, used: number, resets: Date): QuotaWindowState => ({
    window,
    limit,
    used,
    remaining: limit === null ? null : Math.max(0, limit - used),
    resets_at: resets.toISOString(),
  });
  return [one('day', l.day, dayUsed, w.dayResetsAt), one('month', l.month, monthUsed, w.monthResetsAt)];
}

/** Counters of a row as seen in the windows `w` (a counter of a past window reads 0). */
function usedNow(row: Pick<SubscriptionRow, 'dayStart' | 'dayUsed' | 'monthStart' | 'monthUsed'>, w: Windows): { day: number; month: number } {
  return { day: row.dayStart === w.day ? row.dayUsed : 0, month: row.monthStart === w.month ? row.monthUsed : 0 };
}

/**
 * The window that binds first: the limited window with the fewest calls remaining (the day on a
 * tie, since it resets sooner). null when every window is unlimited.
 */
export function tightestWindow(state: QuotaState): QuotaWindowState | null {
  let best: QuotaWindowState | null = null;
  for (const w of state.windows) {
    if (w.remaining === null) continue;
    if (!best || w.remaining < best.remaining!) best = w;
  }
  return best;
}

/**
 * `X-Quota-Limit`, `X-Quota-Remaining`, `X-Quota-Reset` (Unix seconds when the window resets)
 * for the tightest window; empty when unlimited.
 */
export function quotaHeaders(state: QuotaState): Record<string, string> {
  const w = tightestWindow(state);
  if (!w) return {};
  return {
    'x-quota-limit': String(w.limit),
    'x-quota-remaining': String(w.remaining),
    'x-quota-reset': String(Math.floor(new Date(w.resets_at).getTime() / 1000)),
  };
}

// ------------------------------------------------------------------ records

function view(ctx: AppContext, r: SubscriptionRow, w: Windows = windowsAt()): SubscriptionView {
  return {
    id: r.id,
    service_id: r.serviceId,
    plan: r.plan as Plan,
    status: r.status as SubscriptionView['status'],
    quotas: limitsOf(ctx, r.plan),
    used: usedNow(r, w),
    created_at: r.createdAt.toISOString(),
    updated_at: r.updatedAt.toISOString(),
    canceled_at: iso(r.canceledAt),
  };
}

async function getRow(ctx: AppContext, userId: string, id: string): Promise<SubscriptionRow> {
  const [row] = await ctx.db.select().from(subscriptions).where(and(eq(subscriptions.id, id), eq(subscriptions.userId, userId)));
  if (!row) throw notFound('Subscription');
  return row;
}

const PLAN_ORDER: readonly Plan[] = ['free', 'pro', 'enterprise'];

/**
 * The role ladder, the one definition of which plans a role may use (spec "Roles": pro users hold a
 * pro subscription, enterprise customers have unlimited access): the rungs from the top, each with
 * the roles that stand on it and the highest plan they allow; a caller with none of these roles
 * gets `free`. {@link plansFor}, the plan check and {@link effectivePlanSql} are all read from it.
 */
const ROLE_LADDER: readonly { roles: readonly Role[]; top: Plan }[] = [
  { roles: ['enterprise', 'admin'], top: 'enterprise' },
  { roles: ['pro'], top: 'pro' },
];
const BOTTOM_PLAN: Plan = PLAN_ORDER[0]!;

/** A role or plan name as an SQL string literal (names of the fixed `Role` and `Plan` unions, never input). */
const lit = (name: Role | Plan): SQL => sql.raw(`'${name}'`);

/** The highest plan `roles` allow (the top of the highest rung they stand on). */
function topPlanFor(roles: readonly Role[]): Plan {
  return ROLE_LADDER.find((rung) => rung.roles.some((r) => roles.includes(r)))?.top ?? BOTTOM_PLAN;
}

/**
 * The plans a caller with `roles` may choose, lowest first ({@link ROLE_LADDER}): `user` → free;
 * `pro` → free, pro; `enterprise`/`admin` → every plan.
 */
export function plansFor(roles: readonly Role[]): Plan[] {
  return PLAN_ORDER.slice(0, PLAN_ORDER.indexOf(topPlanFor(roles)) + 1);
}

/** @throws AppError forbidden when `roles` may not choose `plan` (the message names the lowest role that may). */
function assertPlanAllowed(plan: Plan, roles: readonly Role[]): void {
  const allowed = plansFor(roles);
  if (!allowed.includes(plan)) {
    const needed = [...ROLE_LADDER].reverse().find((rung) => PLAN_ORDER.indexOf(rung.top) >= PLAN_ORDER.indexOf(plan))!.roles[0];
    throw new AppError('forbidden', `The ${plan} plan needs the ${needed} role; your roles allow ${allowed.join(', ')}`);
  }
}

/**
 * Subscribe `userId` (holding `roles`) to a published service (by id or name) on `plan`. The
 * counters of the current windows carry over from the user's latest earlier subscription to the
 * service, in the same INSERT (the old one is canceled, so it counts no more).
 * @throws AppError not_found (unknown, deleted or not published service), forbidden (plan above
 *         the role), conflict (already subscribed)
 */
export async function subscribe(ctx: AppContext, userId: string, roles: readonly Role[], input: { service_id: string; plan?: Plan }): Promise<SubscriptionView> {
  const svc = await getServiceSummary(ctx, input.service_id);
  if (!svc || svc.status !== 'published') throw notFound('Service');
  const plan = input.plan ?? 'free';
  assertPlanAllowed(plan, roles);
  const prev = (col: string) => sql`(select p.${sql.identifier(col)} from subscriptions p where p.user_id = ${userId} and p.service_id = ${svc.id} order by p.id desc limit 1)`;
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
  if (!row) throw new AppError('conflict', `Already subscribed to ${svc.name}; change the plan with PUT /subscriptions/:id`);
  return view(ctx, row);
}

/** The user's subscriptions (all, or by `status`), newest first. */
export async function listSubscriptions(
  ctx: AppContext,
  userId: string,
  q: { limit?: number; cursor?: string; status?: 'active' | 'canceled'; service_id?: string },
): Promise<Page<SubscriptionView>> {
  const rows = await selectPage(ctx.db, subscriptions, q, [
    eq(subscriptions.userId, userId),
    q.status ? eq(subscriptions.status, q.status) : undefined,
    q.service_id ? eq(subscriptions.serviceId, q.service_id) : undefined,
  ]);
  const w = windowsAt();
  return mapPage(rows, (r) => view(ctx, r, w));
}

/** One subscription of the user. @throws AppError not_found (also another user's) */
export async function getSubscription(ctx: AppContext, userId: string, id: string): Promise<SubscriptionView> {
  return view(ctx, await getRow(ctx, userId, id));
}

/**
 * Change the plan of an active subscription (counters of the current windows are kept, so a
 * downgrade can leave the caller over its new limit until the window resets).
 * @throws AppError not_found, forbidden (plan above the role), invalid_state (canceled)
 */
export async function changePlan(ctx: AppContext, userId: string, roles: readonly Role[], id: string, plan: Plan): Promise<SubscriptionView> {
  await getRow(ctx, userId, id);
  assertPlanAllowed(plan, roles);
  const [row] = await ctx.db
    .update(subscriptions)
    .set({ plan, updatedAt: new Date() })
    .where(and(eq(subscriptions.id, id), eq(subscriptions.userId, userId), eq(subscriptions.status, 'active')))
    .returning();
  if (row) return view(ctx, row);
  throw new AppError('invalid_state', 'The subscription is canceled; subscribe again with POST /subscriptions');
}

/**
 * Cancel a subscription: status `canceled`, executions refused from then on. Canceling a
 * canceled subscription answers it unchanged. @throws AppError not_found
 */
export async function cancelSubscription(ctx: AppContext, userId: string, id: string): Promise<SubscriptionView> {
  const now = new Date();
  const [row] = await ctx.db
    .update(subscriptions)
    .set({ status: 'canceled', canceledAt: now, updatedAt: now })
    .where(and(eq(subscriptions.id, id), eq(subscriptions.userId, userId), eq(subscriptions.status, 'active')))
    .returning();
  return view(ctx, row ?? (await getRow(ctx, userId, id)));
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
    .where(and(eq(subscriptions.userId, userId), eq(subscriptions.serviceId, serviceId), eq(subscriptions.status, 'active')))
    .limit(1);
  return rows.length > 0;
}

/** Quota windows of one subscription (`GET /subscriptions/:id/quotas`). @throws AppError not_found */
export async function getQuotas(ctx: AppContext, userId: string, id: string): Promise<{ plan: Plan; windows: QuotaWindowState[] }> {
  const row = await getRow(ctx, userId, id);
  const w = windowsAt();
  const used = usedNow(row, w);
  const plan = await effectivePlan(ctx, userId, row.plan as Plan);
  return { plan, windows: windowStates(ctx, plan, used.day, used.month, w) };
}

/**
 * SQL of the plan whose limits apply (decision "subscriptions/demotion", docs/decisions.md): the
 * subscribed `plan`, capped by what the account's CURRENT `roles` allow ({@link plansFor}): a
 * user demoted from pro to user is counted on free, from enterprise to pro on pro. The stored plan
 * is kept, so restoring the role restores the quota.
 */
function effectivePlanSql(plan: SQL, roles: SQL): SQL {
  // `plan` capped at `top`: the plans above `top` become `top`.
  const capped = (top: Plan): SQL => {
    const above = PLAN_ORDER.slice(PLAN_ORDER.indexOf(top) + 1);
    if (above.length === 0) return plan;
    return sql`(case when ${plan} in (${sql.join(above.map(lit), sql`, `)}) then ${lit(top)} else ${plan} end)`;
  };
  const rungs = ROLE_LADDER.map((rung) => sql`when ${sql.join(rung.roles.map((r) => sql`${lit(r)} = any(${roles})`), sql` or `)} then ${capped(rung.top)}`);
  return sql`(case ${sql.join(rungs, sql` `)} else ${lit(BOTTOM_PLAN)} end)`;
}

/** The plan whose limits apply to `userId`'s subscription on `plan` now (see {@link effectivePlanSql}). */
async function effectivePlan(ctx: AppContext, userId: string, plan: Plan): Promise<Plan> {
  // The same SQL as the counting UPDATE, so the view and the count can never disagree.
  const [u] = await execRows<{ plan: Plan }>(ctx.db, sql`select ${effectivePlanSql(sql`${plan}::text`, sql`roles`)} as plan from users where id = ${userId}`);
  return u?.plan ?? 'free';
}

// ------------------------------------------------------------------ counting

const INT_MAX = 2_147_483_647;

/** One row of the counting statement: the subscription's counters BEFORE this batch and how many calls it granted. */
type CountRow = { id: string; plan: string; day_used: number; month_used: number; granted: number };

/** The counting statement of {@link consumeQuota}, prepared once per database handle (issue 18: no per-call parse/plan). */
function countingStatement(ctx: AppContext): PreparedRaw<CountRow> {
  return prepareRaw<CountRow>(ctx.database.hotDb, 'quota_consume_n', countingSql);
}

/**
 * The text of {@link countingStatement}: count up to `n` calls of one account to one service in one
 * statement (issue 18 §1). The subscription row is locked (`for update`: under READ COMMITTED a
 * waiting statement reads the version committed by the one it waited for, so the counters it starts
 * from are current), `granted = least(n, remaining of the day, remaining of the month)` calls are
 * added, and the counters before them are returned: the first `granted` callers of the batch
 * succeed, the rest are over the quota. Limits are placeholders, so one text serves every config.
 */
function countingSql(): SQL {
  const p = (name: string) => sql.placeholder(name);
  const plan = effectivePlanSql(sql`s.plan`, sql`u.roles`);
  // The limit of the effective plan: one placeholder per plan and window (`pro_day`, …; null = unlimited).
  const lim = (win: QuotaWindow) => {
    const higher = PLAN_ORDER.slice(1).map((pl) => sql`when ${lit(pl)} then ${p(`${pl}_${win}`)}::int`);
    return sql`coalesce(case ${plan} ${sql.join(higher, sql` `)} else ${p(`${BOTTOM_PLAN}_${win}`)}::int end, ${sql.raw(String(INT_MAX))})`;
  };
  return sql`with cur as (
          select s.id, ${plan} as plan,
                 case when s.day_start = ${p('day')}::date then s.day_used else 0 end as d,
                 case when s.month_start = ${p('month')}::date then s.month_used else 0 end as m,
                 ${lim('day')} as dl, ${lim('month')} as ml
          from subscriptions s join users u on u.id = s.user_id
          where s.user_id = ${p('userId')} and s.service_id = ${p('serviceId')} and s.status = 'active'
          for update of s
        ), g as (
          select id, plan, d, m, greatest(0, least(${p('n')}::int, dl - d, ml - m)) as granted from cur
        ), counted as (
          update subscriptions set day_used = g.d + g.granted, day_start = ${p('day')}::date,
                                   month_used = g.m + g.granted, month_start = ${p('month')}::date
          from g where subscriptions.id = g.id and g.granted > 0
          returning 1
        )
        select id, plan, d as day_used, m as month_used, granted from g`;
}

/** Most calls one counting statement carries. */
const MAX_QUOTA_BATCH = 256;

/** A call waiting to be counted. */
interface QuotaWaiter {
  now: Date;
  resolve: (state: QuotaState) => void;
  reject: (err: unknown) => void;
}

/** Calls of one (account, service, windows) waiting while a counting statement for them is in flight. */
interface QuotaQueue {
  waiting: QuotaWaiter[];
}

/** Queues of calls per database handle (one per app, as prepared statements are) and key. */
const quotaQueues = new WeakMap<object, Map<string, QuotaQueue>>();

/**
 * Check and count one call of `userId` to `serviceId` against its active subscription, exactly
 * under any concurrency: never more calls succeed than the quota allows. Concurrent calls of the
 * same account to the same service are counted together (issue 18 §1): the first call's statement
 * goes at once, and the calls that arrive while it is in flight share the next one (group commit,
 * as execution records do), so N concurrent calls cost ~1 statement, not N row-lock waits.
 * Returns the quota state after this call (its own position in the batch), for the `X-Quota-*` headers.
 * @throws AppError not_subscribed (no active subscription),
 *         quota_exceeded (429, `Retry-After` = seconds until the exhausted window resets, X-Quota-* headers)
 */
export function consumeQuota(ctx: AppContext, userId: string, serviceId: string, now: Date = new Date()): Promise<QuotaState> {
  const w = windowsAt(now);
  const db = ctx.database.hotDb;
  let queues = quotaQueues.get(db);
  if (!queues) quotaQueues.set(db, (queues = new Map()));
  const key = `${userId} ${serviceId} ${w.day} ${w.month}`;
  return new Promise<QuotaState>((resolve, reject) => {
    const queued = queues.get(key);
    if (queued) {
      queued.waiting.push({ now, resolve, reject });
      return;
    }
    const q: QuotaQueue = { waiting: [{ now, resolve, reject }] };
    queues.set(key, q);
    void (async () => {
      while (q.waiting.length > 0) {
        const batch = q.waiting.splice(0, MAX_QUOTA_BATCH);
        await countBatch(ctx, userId, serviceId, w, batch).catch((err: unknown) => {
          for (const x of batch) x.reject(err);
        });
      }
      queues.delete(key);
    })();
  });
}

/** Count `batch` (arrival order) in one statement and settle every caller. @throws the database error */
async function countBatch(ctx: AppContext, userId: string, serviceId: string, w: Windows, batch: QuotaWaiter[]): Promise<void> {
  const q = ctx.config.quotas;
  // Asynchronous commit (Database.hotDb): exact under concurrency (row lock); a database crash can
  // forget the last few hundred ms of counts, which only ever errs in the subscriber's favour.
  const limits = Object.fromEntries(PLAN_ORDER.flatMap((pl) => [[`${pl}_day`, q[pl].day], [`${pl}_month`, q[pl].month]]));
  const rows = await countingStatement(ctx).run({ day: w.day, month: w.month, userId, serviceId, n: batch.length, ...limits });
  const row = rows[0];
  if (!row) {
    for (const x of batch) x.reject(new AppError('not_subscribed', 'Subscribe to this service first (POST /subscriptions)'));
    return;
  }
  const [day, month, granted] = [Number(row.day_used), Number(row.month_used), Number(row.granted)];
  batch.forEach((x, i) => {
    if (i < granted) x.resolve({ subscription_id: row.id, plan: row.plan as Plan, windows: windowStates(ctx, row.plan, day + i + 1, month + i + 1, w) });
    else x.reject(quotaExceeded(ctx, row.plan as Plan, day + granted, month + granted, w, x.now));
  });
}

/** The 429 of a call over the quota of `plan`, with the counters after the calls that were granted. */
function quotaExceeded(ctx: AppContext, plan: Plan, dayUsed: number, monthUsed: number, w: Windows, now: Date): AppError {
  const windows = windowStates(ctx, plan, dayUsed, monthUsed, w);
  const exhausted = windows.filter((x) => x.remaining === 0);
  // When both are used up, the caller must wait for the later reset.
  const binding = exhausted[exhausted.length - 1] ?? windows[0];
  const retryAfter = Math.max(1, Math.ceil((new Date(binding.resets_at).getTime() - now.getTime()) / 1000));
  return new AppError('quota_exceeded', `The ${binding.window === 'day' ? 'daily' : 'monthly'} quota of the ${plan} plan (${binding.limit} calls) is used up; it resets at ${binding.resets_at}`, {
    headers: {
      'retry-after': String(retryAfter),
      'x-quota-limit': String(binding.limit),
      'x-quota-remaining': '0',
      'x-quota-reset': String(Math.floor(new Date(binding.resets_at).getTime() / 1000)),
    },
    extra: { window: binding.window, limit: binding.limit, resets_at: binding.resets_at },
  });
}
