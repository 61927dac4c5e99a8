/**
 * Quota counting at the service level: exact under concurrency (one conditional UPDATE), calendar
 * windows in UTC, config-driven limits. The end-to-end race through POST /v1/agents/:id/execute is
 * in test/e2e/execute-quota.e2e.test.ts.
 */
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { subscriptions } from '../../../src/db/schema/index.js';
import { newId } from '../../../src/http/ids.js';
import { AppError } from '../../../src/http/errors.js';
import { consumeQuota } from '../../../src/modules/subscriptions/quota.js';
import { quotaHeaders, tightestWindow, windowsAt } from '../../../src/modules/subscriptions/windows.js';
import { createUser, setupApp } from '../../helpers/app.js';

const { app, ctx } = await setupApp({
  QUOTA_FREE_DAY: '10',
  QUOTA_FREE_MONTH: '25',
  QUOTA_PRO_DAY: '3',
  QUOTA_ENTERPRISE_DAY: 'unlimited',
});

async function subscription(plan: 'free' | 'pro' | 'enterprise' = 'free') {
  // The plan's limits apply only while the role allows the plan (plans follow the current role).
  const u = await createUser(app, plan === 'free' ? {} : { roles: [plan] });
  const serviceId = newId('svc');
  const id = newId('sub');
  await ctx.db.insert(subscriptions).values({ id, userId: u.userId, serviceId, plan });
  return { userId: u.userId, serviceId, id };
}

async function settle(n: number, fn: () => Promise<unknown>) {
  const res = await Promise.allSettled(Array.from({ length: n }, fn));
  const ok = res.filter((r) => r.status === 'fulfilled').length;
  const codes = res
    .filter((r): r is PromiseRejectedResult => r.status === 'rejected')
    .map((r) => (r.reason as AppError).code);
  return { ok, codes };
}

describe('quota counting', () => {
  it('lets exactly 10 of 50 parallel calls through a quota of 10', async () => {
    const s = await subscription('free');
    const { ok, codes } = await settle(50, () => consumeQuota(ctx, s.userId, s.serviceId));
    expect(ok).toBe(10);
    expect(codes).toHaveLength(40);
    expect(new Set(codes)).toEqual(new Set(['quota_exceeded']));
    const [row] = await ctx.db.select().from(subscriptions).where(eq(subscriptions.id, s.id));
    expect(row.dayUsed).toBe(10);
    expect(row.monthUsed).toBe(10);
  });

  it('reports remaining calls and the tightest window, and a Retry-After when used up', async () => {
    const s = await subscription('pro'); // pro: 3/day, 100000/month
    const first = await consumeQuota(ctx, s.userId, s.serviceId);
    expect(first.plan).toBe('pro');
    expect(first.windows.find((w) => w.window === 'day')).toMatchObject({ limit: 3, used: 1, remaining: 2 });
    expect(tightestWindow(first)?.window).toBe('day');
    const h = quotaHeaders(first);
    expect(h['x-quota-limit']).toBe('3');
    expect(h['x-quota-remaining']).toBe('2');
    expect(Number(h['x-quota-reset'])).toBe(windowsAt().dayResetsAt.getTime() / 1000);
    await consumeQuota(ctx, s.userId, s.serviceId);
    await consumeQuota(ctx, s.userId, s.serviceId);
    const err = await consumeQuota(ctx, s.userId, s.serviceId).catch((e: AppError) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('quota_exceeded');
    const retry = Number((err as AppError).headers?.['retry-after']);
    expect(retry).toBeGreaterThan(0);
    expect(retry).toBeLessThanOrEqual(86400);
    expect((err as AppError).extra).toMatchObject({ window: 'day', limit: 3 });
  });

  it('starts a new day window at UTC midnight and keeps counting the month', async () => {
    const s = await subscription('free'); // 10/day, 25/month
    const day1 = new Date(Date.UTC(2030, 0, 31, 23, 59, 0));
    const { ok } = await settle(12, () => consumeQuota(ctx, s.userId, s.serviceId, day1));
    expect(ok).toBe(10);
    // Next UTC day, same month? No: Feb 1st is a new month too — both windows reset.
    const feb1 = new Date(Date.UTC(2030, 1, 1, 0, 0, 1));
    const st = await consumeQuota(ctx, s.userId, s.serviceId, feb1);
    expect(st.windows.map((w) => [w.window, w.used, w.resets_at])).toEqual([
      ['day', 1, '2030-02-02T00:00:00.000Z'],
      ['month', 1, '2030-03-01T00:00:00.000Z'],
    ]);
    // Days 2..3 of February: the month window binds at 25.
    let passed = 1;
    for (const d of [2, 3, 4])
      passed += (await settle(10, () => consumeQuota(ctx, s.userId, s.serviceId, new Date(Date.UTC(2030, 1, d, 12)))))
        .ok;
    expect(passed).toBe(25);
    const err = (await consumeQuota(ctx, s.userId, s.serviceId, new Date(Date.UTC(2030, 1, 5, 12))).catch(
      (e) => e,
    )) as AppError;
    expect(err.code).toBe('quota_exceeded');
    expect(err.extra).toMatchObject({ window: 'month', limit: 25, resets_at: '2030-03-01T00:00:00.000Z' });
  });

  it('does not limit unlimited plans but still counts', async () => {
    const s = await subscription('enterprise');
    const { ok } = await settle(30, () => consumeQuota(ctx, s.userId, s.serviceId));
    expect(ok).toBe(30);
    const st = await consumeQuota(ctx, s.userId, s.serviceId);
    expect(st.windows[0]).toMatchObject({ window: 'day', limit: null, remaining: null, used: 31 });
    expect(quotaHeaders(st)).toEqual({});
  });

  it('refuses a canceled or missing subscription with not_subscribed', async () => {
    const s = await subscription('free');
    await ctx.db.update(subscriptions).set({ status: 'canceled' }).where(eq(subscriptions.id, s.id));
    const err = (await consumeQuota(ctx, s.userId, s.serviceId).catch((e) => e)) as AppError;
    expect(err.code).toBe('not_subscribed');
    const err2 = (await consumeQuota(ctx, s.userId, newId('svc')).catch((e) => e)) as AppError;
    expect(err2.code).toBe('not_subscribed');
  });
});
