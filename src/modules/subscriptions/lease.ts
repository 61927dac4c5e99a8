/**
 * Quota leases (docs/adr/0281-subscriptions-quota-lease-a-key-of-the-quota.md): when one account calls
 * one service often on this instance, the counting statement (`quota.ts`) counts a few units more
 * than the calls it was run for, while the quota has plenty left, and this instance hands them to
 * the next calls of that key without a database round trip. A lease ends when idle for
 * {@link LEASE_IDLE_MS} or older than {@link LEASE_MAX_AGE_MS}, when the account's plan, status or
 * roles change on this instance, and at app close; its unused units are then subtracted again from
 * the windows they were counted in (if those have not rolled over). Reads of the counters on this
 * instance subtract the unused units of its open leases, so one instance always shows exact usage.
 */
import { performance } from 'node:perf_hooks';
import { sql } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { prepareRaw } from '../../db/prepared.js';
import type { QuotaLease, QuotaRuntime, QuotaState } from './state.js';
import { windowStates, type Windows } from './windows.js';

/** A key called again within this many ms of its previous call is hot: its next count asks for a lease. */
export const HOT_MS = 250;
/** A lease not used for this many ms ends. */
export const LEASE_IDLE_MS = 250;
/** A lease ends this many ms after it was made, used or not (how stale another instance's view can be). */
export const LEASE_MAX_AGE_MS = 1000;
/** Most units one lease holds. */
export const MAX_LEASE = 32;
/** A lease holds at most 1/LEASE_SHARE of what remains of the tightest window after the counted calls (0 near the limit). */
export const LEASE_SHARE = 16;
/** How often the sweep looks for leases to end, ms. */
const SWEEP_MS = 125;

/** This app's quota state, created on first use (its leases are returned at app close). */
export function quotaRuntime(ctx: AppContext): QuotaRuntime {
  if (ctx.quota) return ctx.quota;
  const rt: QuotaRuntime = {
    queues: new Map(),
    leases: new Map(),
    returning: new Map(),
    lastCall: new Map(),
    sweep: null,
    epoch: 0,
  };
  ctx.quota = rt;
  ctx.onClose.push(() => closeLeases(ctx));
  return rt;
}

/** Note a call of `key` at `t` (`performance.now()` ms). @returns true when the key is hot (called within {@link HOT_MS} before) */
export function noteCall(ctx: AppContext, rt: QuotaRuntime, key: string, t: number): boolean {
  const last = rt.lastCall.get(key);
  rt.lastCall.set(key, t);
  startSweep(ctx, rt);
  return last !== undefined && t - last <= HOT_MS;
}

/**
 * One unit of `key`'s open lease for a call at `t` in the windows `w`, as the quota state after that
 * call (counters when the lease was made + units taken so far, this one included); null when there
 * is no usable lease (none, used up, idle or too old — an idle or old one is ended here).
 */
export function takeFromLease(
  ctx: AppContext,
  rt: QuotaRuntime,
  key: string,
  w: Windows,
  t: number,
): QuotaState | null {
  const lease = rt.leases.get(key);
  if (!lease) return null;
  if (t - lease.createdAt >= LEASE_MAX_AGE_MS || t - lease.usedAt > LEASE_IDLE_MS || lease.taken >= lease.units) {
    void endLease(ctx, rt, lease);
    return null;
  }
  lease.taken += 1;
  lease.usedAt = t;
  return {
    subscription_id: lease.subscriptionId,
    plan: lease.plan as QuotaState['plan'],
    windows: windowStates(ctx, lease.plan, lease.dayBase + lease.taken, lease.monthBase + lease.taken, w),
  };
}

/**
 * Open `lease` (its units are already counted in the database) unless the account's leases were
 * dropped since `epoch` (then its units go back at once); a previous lease of the key ends.
 */
export function openLease(ctx: AppContext, rt: QuotaRuntime, lease: QuotaLease, epoch: number): void {
  if (epoch !== rt.epoch) {
    void endLease(ctx, rt, lease);
    return;
  }
  const old = rt.leases.get(lease.key);
  if (old) void endLease(ctx, rt, old);
  rt.leases.set(lease.key, lease);
  startSweep(ctx, rt);
}

/**
 * End `lease`: no unit of it is handed out any more, and its unused units are subtracted from the
 * counters of the windows they were counted in (each window only if it has not rolled over since).
 * Never rejects: a failed return is logged and the units stay counted until the window resets.
 */
export function endLease(ctx: AppContext, rt: QuotaRuntime, lease: QuotaLease): Promise<void> {
  if (lease.ended) return rt.returning.get(lease) ?? Promise.resolve();
  lease.ended = true;
  if (rt.leases.get(lease.key) === lease) rt.leases.delete(lease.key);
  const unused = lease.units - lease.taken;
  if (unused <= 0) return Promise.resolve();
  const done = returnStatement(ctx)
    .run({ id: lease.subscriptionId, day: lease.day, month: lease.month, k: unused })
    .then(
      () => undefined,
      (err: unknown) =>
        ctx.log.warn(
          { err: (err as Error).message, subscription: lease.subscriptionId, units: unused },
          'quota lease: unused units not returned',
        ),
    )
    .finally(() => rt.returning.delete(lease));
  // Still unused until the return commits: reads subtract it meanwhile.
  rt.returning.set(lease, done);
  return done;
}

/** The statement that gives `k` unused units back to subscription `id` (windows `day`/`month` only if current). */
function returnStatement(ctx: AppContext) {
  const p = (name: string) => sql.placeholder(name);
  return prepareRaw(
    ctx.database.hotDb,
    'quota_return',
    () => sql`update subscriptions
      set day_used = case when day_start = ${p('day')}::date then greatest(0, day_used - ${p('k')}::int) else day_used end,
          month_used = case when month_start = ${p('month')}::date then greatest(0, month_used - ${p('k')}::int) else month_used end
      where id = ${p('id')}`,
  );
}

/**
 * End every lease of `userId` on this instance (after a change of its plan, status or roles) and
 * wait until their units are back; statements in flight for it open no lease. Never rejects.
 */
export async function dropLeases(ctx: AppContext, userId: string): Promise<void> {
  const rt = ctx.quota;
  if (!rt) return;
  rt.epoch += 1;
  for (const lease of [...rt.leases.values()]) if (lease.userId === userId) void endLease(ctx, rt, lease);
  await settleReturns(ctx, userId);
}

/** Wait until the unused units of `userId`'s ended leases are back in the database. Never rejects. */
export async function settleReturns(ctx: AppContext, userId: string): Promise<void> {
  const rt = ctx.quota;
  if (!rt) return;
  await Promise.all([...rt.returning].filter(([lease]) => lease.userId === userId).map(([, done]) => done));
}

/** Units of subscription `subscriptionId` counted in the windows `w` by this instance's leases and not used (yet). */
export function unusedLeased(ctx: AppContext, subscriptionId: string, w: Windows): { day: number; month: number } {
  const out = { day: 0, month: 0 };
  const rt = ctx.quota;
  if (!rt) return out;
  for (const lease of [...rt.leases.values(), ...rt.returning.keys()]) {
    if (lease.subscriptionId !== subscriptionId) continue;
    const unused = lease.units - lease.taken;
    if (lease.day === w.day) out.day += unused;
    if (lease.month === w.month) out.month += unused;
  }
  return out;
}

/** Start the sweep that ends idle and old leases and forgets cold keys (stops itself when there is nothing left). */
function startSweep(ctx: AppContext, rt: QuotaRuntime): void {
  if (rt.sweep) return;
  rt.sweep = setInterval(() => {
    const t = performance.now();
    for (const lease of [...rt.leases.values()]) {
      if (t - lease.usedAt > LEASE_IDLE_MS || t - lease.createdAt >= LEASE_MAX_AGE_MS) void endLease(ctx, rt, lease);
    }
    for (const [key, last] of rt.lastCall) if (t - last > HOT_MS) rt.lastCall.delete(key);
    if (rt.leases.size === 0 && rt.lastCall.size === 0) {
      clearInterval(rt.sweep!);
      rt.sweep = null;
    }
  }, SWEEP_MS);
  rt.sweep.unref();
}

/** At app close: end every lease and wait until the unused units are back. */
async function closeLeases(ctx: AppContext): Promise<void> {
  const rt = ctx.quota;
  if (!rt) return;
  if (rt.sweep) clearInterval(rt.sweep);
  rt.sweep = null;
  rt.epoch += 1;
  for (const lease of [...rt.leases.values()]) void endLease(ctx, rt, lease);
  await Promise.all(rt.returning.values());
}
