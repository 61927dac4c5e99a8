/**
 * Quota leases (decision "subscriptions/quota-lease"): a key called again within HOT_MS is counted
 * ahead, and later calls take the leased units without a round trip. Asserted here, on PGlite and on
 * PostgreSQL (TEST_DATABASE_URL): never more successes than the quota under concurrency, no lease
 * near the limit, X-Quota-* headers exact across leased and counted calls, exact usage on reads,
 * unused units given back after idle, at app close, on cancellation, plan and role change, and only
 * to the windows they were counted in. Scoped to this file's own users.
 */
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../../src/app.js';
import type { AppContext } from '../../../src/context.js';
import { subscriptions } from '../../../src/db/schema/index.js';
import type { AppError } from '../../../src/http/errors.js';
import { newId } from '../../../src/http/ids.js';
import { LEASE_IDLE_MS, MAX_LEASE } from '../../../src/modules/subscriptions/lease.js';
import { consumeQuota } from '../../../src/modules/subscriptions/quota.js';
import {
  cancelSubscription,
  changePlan,
  getQuotas,
  getSubscription,
} from '../../../src/modules/subscriptions/service.js';
import { quotaHeaders } from '../../../src/modules/subscriptions/windows.js';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { execute, expectHttp, listen, subscribedFastTool } from '../../helpers/exec.js';

const DAY = 1000;
const { app, ctx, config } = await setupApp({
  QUOTA_FREE_DAY: String(DAY),
  QUOTA_FREE_MONTH: '5000',
  QUOTA_PRO_DAY: '2000',
  QUOTA_PRO_MONTH: '10000',
});

/** A subscription of a fresh user (`roles`) to a fresh service id, with counters preset in today's windows. */
async function subscription(opts: { roles?: string[]; plan?: 'free' | 'pro'; dayUsed?: number } = {}) {
  const u = await createUser(app, opts.roles ? { roles: opts.roles } : {});
  const serviceId = newId('svc');
  const id = newId('sub');
  const used = opts.dayUsed ?? 0;
  await ctx.db
    .insert(subscriptions)
    .values({ id, userId: u.userId, serviceId, plan: opts.plan ?? 'free', dayUsed: used, monthUsed: used });
  return { user: u, userId: u.userId, serviceId, id };
}

async function row(id: string) {
  const [r] = await ctx.db.select().from(subscriptions).where(eq(subscriptions.id, id));
  return r;
}

const remaining = (st: Awaited<ReturnType<typeof consumeQuota>>) => Number(quotaHeaders(st)['x-quota-remaining']);
const leasesOf = (c: AppContext, userId: string) =>
  [...(c.quota?.leases.values() ?? [])].filter((l) => l.userId === userId);
const idle = () => new Promise((r) => setTimeout(r, LEASE_IDLE_MS * 2 + 250));

describe(`quota leases (${ctx.database.engine})`, () => {
  it('counts ahead for a hot key; every call gets its own exact headers; reads and idle return are exact', async () => {
    const s = await subscription();
    for (let i = 1; i <= 2 * MAX_LEASE + 10; i++) {
      const st = await consumeQuota(ctx, s.userId, s.serviceId);
      expect(remaining(st), `call ${i}`).toBe(DAY - i);
      expect(st.windows.map((x) => x.used)).toEqual([i, i]);
      if (i === 1) expect((await row(s.id)).dayUsed).toBe(1); // a cold key: no lease
      if (i === 2) expect((await row(s.id)).dayUsed).toBe(2 + MAX_LEASE); // hot: counted ahead
    }
    const n = 2 * MAX_LEASE + 10;
    expect((await row(s.id)).dayUsed).toBeGreaterThan(n);
    // This instance shows exact usage while the lease is open.
    expect((await getQuotas(ctx, s.userId, s.id)).windows.map((x) => x.used)).toEqual([n, n]);
    expect((await getSubscription(ctx, s.userId, s.id)).used).toEqual({ day: n, month: n });
    await idle();
    expect(leasesOf(ctx, s.userId)).toEqual([]);
    const r = await row(s.id);
    expect([r.dayUsed, r.monthUsed]).toEqual([n, n]);
  });

  it('through POST /v1/agents/:id/execute: X-Quota-Remaining counts down by one across leased and counted calls', async () => {
    const base = await listen(app);
    const { upstream, user, svc, sub, sid } = await subscribedFastTool(app, ctx, base, 'quota-lease');
    const n = MAX_LEASE + 8;
    for (let i = 1; i <= n; i++) {
      const a = await execute(base, user.headers, sid, { service: svc.name, tool: 'fast' });
      expect(a.status).toBe(200);
      expect(a.headers.get('x-quota-remaining'), `call ${i}`).toBe(String(DAY - i));
    }
    expect(leasesOf(ctx, user.userId)).toHaveLength(1);
    const { body: quotas } = await expectHttp(base, 'GET', `/subscriptions/${sub.id}/quotas`, 200, {
      headers: user.headers,
    });
    expect(quotas.windows.map((x: { used: number }) => x.used)).toEqual([n, n]);
    const { body: view } = await expectHttp(base, 'GET', `/subscriptions/${sub.id}`, 200, { headers: user.headers });
    expect(view.used).toEqual({ day: n, month: n });
    expect(upstream.seenAt('/fast')).toHaveLength(n);
    await upstream.close();
  });

  it('never grants more than the limit to concurrent and sequential callers, each remaining count once', async () => {
    const s = await subscription({ dayUsed: DAY - 200 });
    const granted: number[] = [];
    let refused = 0;
    const one = async () => {
      try {
        granted.push(remaining(await consumeQuota(ctx, s.userId, s.serviceId)));
        return true;
      } catch (err) {
        expect((err as AppError).code).toBe('quota_exceeded');
        refused++;
        return false;
      }
    };
    const sequential = async () => {
      for (let i = 0; i < 60; i++) await one();
    };
    const bursts = async () => {
      for (let i = 0; i < 10; i++) await Promise.all(Array.from({ length: 8 }, one));
    };
    await Promise.all([sequential(), sequential(), sequential(), bursts(), bursts()]);
    expect(granted).toHaveLength(200);
    expect(refused).toBe(3 * 60 + 2 * 80 - 200);
    expect(granted.sort((a, b) => a - b)).toEqual(Array.from({ length: 200 }, (_, i) => i));
    await idle();
    const r = await row(s.id);
    expect([r.dayUsed, r.monthUsed]).toEqual([DAY, DAY]);
  });

  it('leases nothing near the limit: each call is counted by its own statement', async () => {
    const s = await subscription({ dayUsed: DAY - 12 });
    for (let i = 1; i <= 12; i++) {
      const st = await consumeQuota(ctx, s.userId, s.serviceId);
      expect(remaining(st)).toBe(12 - i);
      expect((await row(s.id)).dayUsed).toBe(DAY - 12 + i);
      expect(leasesOf(ctx, s.userId)).toEqual([]);
    }
    await expect(consumeQuota(ctx, s.userId, s.serviceId)).rejects.toMatchObject({ code: 'quota_exceeded' });
  });

  it('cancellation ends the lease and gives its units back before it answers', async () => {
    const s = await subscription();
    for (let i = 0; i < 5; i++) await consumeQuota(ctx, s.userId, s.serviceId);
    expect(leasesOf(ctx, s.userId)).toHaveLength(1);
    const view = await cancelSubscription(ctx, s.userId, s.id);
    expect(view.used).toEqual({ day: 5, month: 5 });
    expect(leasesOf(ctx, s.userId)).toEqual([]);
    expect((await row(s.id)).dayUsed).toBe(5);
    await expect(consumeQuota(ctx, s.userId, s.serviceId)).rejects.toMatchObject({ code: 'not_subscribed' });
  });

  it('a plan change ends the lease: the next call is counted under the new plan', async () => {
    const s = await subscription({ roles: ['pro'] });
    for (let i = 0; i < 5; i++) await consumeQuota(ctx, s.userId, s.serviceId);
    const view = await changePlan(ctx, s.userId, ['user', 'pro'], s.id, 'pro');
    expect(view.used).toEqual({ day: 5, month: 5 });
    expect(leasesOf(ctx, s.userId)).toEqual([]);
    expect((await row(s.id)).dayUsed).toBe(5);
    const st = await consumeQuota(ctx, s.userId, s.serviceId);
    expect(quotaHeaders(st)).toMatchObject({ 'x-quota-limit': '2000', 'x-quota-remaining': String(2000 - 6) });
  });

  it('a role change ends the lease: the demoted account is counted on free at once', async () => {
    const admin = await createUser(app, { roles: ['admin'] });
    const s = await subscription({ roles: ['pro'], plan: 'pro' });
    for (let i = 0; i < 5; i++)
      expect(quotaHeaders(await consumeQuota(ctx, s.userId, s.serviceId))['x-quota-limit']).toBe('2000');
    expect(leasesOf(ctx, s.userId)).toHaveLength(1);
    await call(
      app,
      {
        method: 'PUT',
        url: `/admin/users/${s.user.subject}/roles`,
        headers: admin.headers,
        payload: { roles: ['user'] },
      },
      200,
    );
    expect(leasesOf(ctx, s.userId)).toEqual([]);
    expect(quotaHeaders(await consumeQuota(ctx, s.userId, s.serviceId))).toMatchObject({
      'x-quota-limit': String(DAY),
      'x-quota-remaining': String(DAY - 6),
    });
    expect((await getQuotas(ctx, s.userId, s.id)).windows.map((x) => x.used)).toEqual([6, 6]);
  });

  it('gives unused units back only to the windows that did not roll over', async () => {
    const s = await subscription();
    const at = (d: number) => new Date(Date.UTC(2031, 4, d, 12));
    for (let i = 0; i < 5; i++) await consumeQuota(ctx, s.userId, s.serviceId, at(3));
    expect((await row(s.id)).dayUsed).toBeGreaterThan(5);
    // The next day: a new key, counted from 0 for the day and on top of the lease for the month.
    const st = await consumeQuota(ctx, s.userId, s.serviceId, at(4));
    expect(st.windows.map((x) => x.used)).toEqual([1, (await row(s.id)).monthUsed]);
    await idle();
    const r = await row(s.id);
    expect([r.dayStart, r.dayUsed, r.monthStart, r.monthUsed]).toEqual(['2031-05-04', 1, '2031-05-01', 6]);
  });

  it('gives every unused unit back at app close', async () => {
    const database = { ...ctx.database, close: async () => {} };
    const second = await buildApp(config, undefined, { database: Promise.resolve(database) });
    const s = await subscription();
    for (let i = 0; i < 5; i++) await consumeQuota(second.ctx, s.userId, s.serviceId);
    expect(leasesOf(second.ctx, s.userId)).toHaveLength(1);
    expect((await row(s.id)).dayUsed).toBeGreaterThan(5);
    await second.app.close();
    const r = await row(s.id);
    expect([r.dayUsed, r.monthUsed]).toEqual([5, 5]);
  });
});
