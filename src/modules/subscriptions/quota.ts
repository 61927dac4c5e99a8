/**
 * Counting calls against quotas (the execute path's `consumeQuota`). The counters of the current
 * windows live on the subscription row and are checked and incremented by ONE statement that locks
 * the row and adds at most what the quota still allows, which is exact under concurrency:
 * PostgreSQL's row lock makes a waiting statement read the version committed by the one it waited
 * for (READ COMMITTED, EvalPlanQual), and PGlite runs statements one at a time. Concurrent calls of
 * one account to one service are counted by one statement together, and a key called often is
 * counted ahead through a lease (`lease.ts`).
 */
import { performance } from 'node:perf_hooks';
import { sql, type SQL } from 'drizzle-orm';
import type { Plan } from '../../config.js';
import type { AppContext } from '../../context.js';
import { prepareRaw, type PreparedRaw } from '../../db/prepared.js';
import { AppError } from '../../http/errors.js';
import { MAX_LEASE, LEASE_SHARE, noteCall, openLease, quotaRuntime, takeFromLease } from './lease.js';
import { BOTTOM_PLAN, PLAN_ORDER, effectivePlanSql, lit } from './plans.js';
import type { QuotaQueue, QuotaRuntime, QuotaState, QuotaWaiter } from './state.js';
import { quotaExceeded, windowStates, windowsAt, type QuotaWindow, type Windows } from './windows.js';

const INT_MAX = 2_147_483_647;

/** One row of the counting statement: the subscription's counters BEFORE this batch, how many calls it granted and how many units it leased. */
type CountRow = { id: string; plan: string; day_used: number; month_used: number; granted: number; leased: number };

/** The counting statement of {@link consumeQuota}, prepared once per database handle (no per-call parse/plan). */
function countingStatement(ctx: AppContext): PreparedRaw<CountRow> {
  return prepareRaw<CountRow>(ctx.database.hotDb, 'quota_consume_n', countingSql);
}

/**
 * The text of {@link countingStatement}: count up to `n` calls of one account to one service in one
 * statement. The subscription row is locked (`for update`: under READ COMMITTED a
 * waiting statement reads the version committed by the one it waited for, so the counters it starts
 * from are current), `granted = least(n, remaining of the day, remaining of the month)` calls are
 * added, and the counters before them are returned: the first `granted` callers of the batch
 * succeed, the rest are over the quota. When all `n` are granted, `leased = least(lease,
 * (remaining after them) / LEASE_SHARE)` units more are counted for this instance's lease (0 near
 * the limit, so counting there stays exact per call). Limits are placeholders, so one text serves every config.
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
        ), r as (
          select id, plan, d, m, least(dl - d, ml - m) as room from cur
        ), g as (
          select id, plan, d, m, greatest(0, least(${p('n')}::int, room)) as granted,
                 case when room > ${p('n')}::int then least(${p('lease')}::int, (room - ${p('n')}::int) / ${sql.raw(String(LEASE_SHARE))}) else 0 end as leased
          from r
        ), counted as (
          update subscriptions set day_used = g.d + g.granted + g.leased, day_start = ${p('day')}::date,
                                   month_used = g.m + g.granted + g.leased, month_start = ${p('month')}::date
          from g where subscriptions.id = g.id and g.granted > 0
          returning 1
        )
        select id, plan, d as day_used, m as month_used, granted, leased from g`;
}

/** Most calls one counting statement carries. */
const MAX_QUOTA_BATCH = 256;

/**
 * Check and count one call of `userId` to `serviceId` against its active subscription, exactly
 * under any concurrency: never more calls succeed than the quota allows. Concurrent calls of the
 * same account to the same service are counted together: the first call's statement
 * goes at once, and the calls that arrive while it is in flight share the next one (group commit,
 * as execution records do), so N concurrent calls cost ~1 statement, not N row-lock waits. A key
 * called again within `HOT_MS` is counted ahead: its statement also counts a lease of up to
 * `MAX_LEASE` units while the quota has plenty left, and the next calls take those units without a
 * round trip (decision "subscriptions/quota-lease"; `lease.ts`).
 * Returns the quota state after this call (its own position), for the `X-Quota-*` headers.
 * @throws AppError not_subscribed (no active subscription),
 *         quota_exceeded (429, `Retry-After` = seconds until the exhausted window resets, X-Quota-* headers)
 */
export function consumeQuota(
  ctx: AppContext,
  userId: string,
  serviceId: string,
  now: Date = new Date(),
): Promise<QuotaState> {
  const w = windowsAt(now);
  const rt = quotaRuntime(ctx);
  const key = `${userId} ${serviceId} ${w.day} ${w.month}`;
  const t = performance.now();
  const hot = noteCall(ctx, rt, key, t);
  const leased = takeFromLease(ctx, rt, key, w, t);
  if (leased) return Promise.resolve(leased);
  return new Promise<QuotaState>((resolve, reject) => {
    const queued = rt.queues.get(key);
    if (queued) {
      queued.waiting.push({ now, resolve, reject });
      queued.hot ||= hot;
      return;
    }
    const q: QuotaQueue = { waiting: [{ now, resolve, reject }], hot };
    rt.queues.set(key, q);
    void drainQueue(ctx, rt, { key, userId, serviceId, w }, q);
  });
}

/** What one queue counts: its key and the parts of it. */
interface QuotaKey {
  key: string;
  userId: string;
  serviceId: string;
  w: Windows;
}

/** Settle the calls of `q` until none is left: from the key's lease while it has units, else one statement per batch. */
async function drainQueue(ctx: AppContext, rt: QuotaRuntime, k: QuotaKey, q: QuotaQueue): Promise<void> {
  while (q.waiting.length > 0) {
    // Calls that came while a statement ran take the lease it opened first.
    const t = performance.now();
    let served = 0;
    for (; served < q.waiting.length; served++) {
      const state = takeFromLease(ctx, rt, k.key, k.w, t);
      if (!state) break;
      q.waiting[served]!.resolve(state);
    }
    q.waiting.splice(0, served);
    if (q.waiting.length === 0) break;
    const batch = q.waiting.splice(0, MAX_QUOTA_BATCH);
    const hot = q.hot || batch.length > 1;
    q.hot = false;
    await countBatch(ctx, rt, k, batch, hot).catch((err: unknown) => {
      for (const x of batch) x.reject(err);
    });
  }
  rt.queues.delete(k.key);
}

/** Count `batch` (arrival order) in one statement, asking for a lease when `hot`, and settle every caller. @throws the database error */
async function countBatch(
  ctx: AppContext,
  rt: QuotaRuntime,
  k: QuotaKey,
  batch: QuotaWaiter[],
  hot: boolean,
): Promise<void> {
  const q = ctx.config.quotas;
  const { w } = k;
  // Asynchronous commit (Database.hotDb): exact under concurrency (row lock); a database crash can
  // forget the last few hundred ms of counts, which only ever errs in the subscriber's favour.
  const limits = Object.fromEntries(
    PLAN_ORDER.flatMap((pl) => [
      [`${pl}_day`, q[pl].day],
      [`${pl}_month`, q[pl].month],
    ]),
  );
  const epoch = rt.epoch;
  const rows = await countingStatement(ctx).run({
    day: w.day,
    month: w.month,
    userId: k.userId,
    serviceId: k.serviceId,
    n: batch.length,
    lease: hot ? MAX_LEASE : 0,
    ...limits,
  });
  const row = rows[0];
  if (!row) {
    for (const x of batch)
      x.reject(new AppError('not_subscribed', 'Subscribe to this service first (POST /subscriptions)'));
    return;
  }
  const [day, month, granted, leased] = [
    Number(row.day_used),
    Number(row.month_used),
    Number(row.granted),
    Number(row.leased),
  ];
  if (leased > 0) {
    const t = performance.now();
    openLease(
      ctx,
      rt,
      {
        key: k.key,
        userId: k.userId,
        subscriptionId: row.id,
        plan: row.plan,
        day: w.day,
        month: w.month,
        dayBase: day + granted,
        monthBase: month + granted,
        units: leased,
        taken: 0,
        createdAt: t,
        usedAt: t,
        ended: false,
      },
      epoch,
    );
  }
  batch.forEach((x, i) => {
    if (i < granted)
      x.resolve({
        subscription_id: row.id,
        plan: row.plan as Plan,
        windows: windowStates(ctx, row.plan, day + i + 1, month + i + 1, w),
      });
    else x.reject(quotaExceeded(ctx, row.plan as Plan, day + granted, month + granted, w, x.now));
  });
  if (granted < batch.length) {
    // One event per refused batch; the webhooks module forwards only the first per window.
    const e = quotaExceeded(ctx, row.plan as Plan, day + granted, month + granted, w, batch[granted]!.now).extra!;
    ctx.events.emit('quota.refused', {
      accountId: k.userId,
      serviceId: k.serviceId,
      subscriptionId: row.id,
      plan: row.plan,
      window: e.window as 'day' | 'month',
      limit: e.limit as number,
      resetsAt: e.resets_at as string,
    });
  }
}
