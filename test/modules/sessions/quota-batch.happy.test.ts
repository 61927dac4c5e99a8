/**
 * The execute path's quota count, batched (issue 18 §1): concurrent calls of one account to one
 * service share one counting statement, and it stays exact — never more successes than the quota
 * allows, each success with its own position (X-Quota-Remaining handed out once each), whichever
 * window binds, on PGlite and on PostgreSQL (TEST_DATABASE_URL). Scoped to this file's own users.
 */
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { subscriptions } from '../../../src/db/schema/index.js';
import type { AppError } from '../../../src/http/errors.js';
import { newId } from '../../../src/http/ids.js';
import { consumeQuota } from '../../../src/modules/subscriptions/quota.js';
import { quotaHeaders } from '../../../src/modules/subscriptions/windows.js';
import { createUser, setupApp } from '../../helpers/app.js';
import { execute, listen, subscribedFastTool } from '../../helpers/exec.js';

const { app, ctx } = await setupApp({ QUOTA_FREE_DAY: '7', QUOTA_FREE_MONTH: '12' });
const base = await listen(app);

async function subscription() {
  const u = await createUser(app);
  const serviceId = newId('svc');
  const id = newId('sub');
  await ctx.db.insert(subscriptions).values({ id, userId: u.userId, serviceId, plan: 'free' });
  return { userId: u.userId, serviceId, id };
}

async function race(n: number, fn: () => Promise<unknown>) {
  const res = await Promise.allSettled(Array.from({ length: n }, fn));
  const ok = res.filter((r): r is PromiseFulfilledResult<any> => r.status === 'fulfilled').map((r) => r.value);
  const errors = res
    .filter((r): r is PromiseRejectedResult => r.status === 'rejected')
    .map((r) => r.reason as AppError);
  return { ok, errors };
}

describe(`quota — concurrent calls counted together (${ctx.database.engine})`, () => {
  it('grants exactly the day limit of 40 concurrent calls, each success its own remaining count', async () => {
    const s = await subscription();
    const { ok, errors } = await race(40, () => consumeQuota(ctx, s.userId, s.serviceId));
    expect(ok).toHaveLength(7);
    expect(ok.map((st) => Number(quotaHeaders(st)['x-quota-remaining'])).sort((a, b) => a - b)).toEqual([
      0, 1, 2, 3, 4, 5, 6,
    ]);
    expect(errors).toHaveLength(33);
    for (const e of errors) {
      expect(e.code).toBe('quota_exceeded');
      expect(e.headers?.['x-quota-remaining']).toBe('0');
      expect(Number(e.headers?.['retry-after'])).toBeGreaterThan(0);
    }
    const [row] = await ctx.db.select().from(subscriptions).where(eq(subscriptions.id, s.id));
    expect([row.dayUsed, row.monthUsed]).toEqual([7, 7]);
  });

  it('stops at the month limit in the middle of a batch, and a new day does not reopen it', async () => {
    const s = await subscription();
    const day = (d: number) => new Date(Date.UTC(2031, 2, d, 12));
    expect((await race(20, () => consumeQuota(ctx, s.userId, s.serviceId, day(3)))).ok).toHaveLength(7);
    const second = await race(20, () => consumeQuota(ctx, s.userId, s.serviceId, day(4)));
    expect(second.ok).toHaveLength(5); // 12 a month
    expect(new Set(second.errors.map((e) => e.extra?.window))).toEqual(new Set(['month']));
    expect((await race(5, () => consumeQuota(ctx, s.userId, s.serviceId, day(5)))).ok).toHaveLength(0);
    const [row] = await ctx.db.select().from(subscriptions).where(eq(subscriptions.id, s.id));
    expect([row.dayUsed, row.monthUsed]).toEqual([5, 12]);
  });

  it('counts two services of one account apart, and refuses every call of a batch without a subscription', async () => {
    const a = await subscription();
    const otherService = newId('svc');
    await ctx.db
      .insert(subscriptions)
      .values({ id: newId('sub'), userId: a.userId, serviceId: otherService, plan: 'free' });
    const [one, two, none] = await Promise.all([
      race(15, () => consumeQuota(ctx, a.userId, a.serviceId)),
      race(15, () => consumeQuota(ctx, a.userId, otherService)),
      race(6, () => consumeQuota(ctx, a.userId, newId('svc'))),
    ]);
    expect([one.ok.length, two.ok.length, none.ok.length]).toEqual([7, 7, 0]);
    expect(new Set(none.errors.map((e) => e.code))).toEqual(new Set(['not_subscribed']));
  });

  it('through POST /v1/agents/:id/execute: exactly the quota reaches the upstream and is recorded', async () => {
    const { upstream, user, svc, sid } = await subscribedFastTool(app, ctx, base, 'quota-batch');
    const answers = await Promise.all(
      Array.from({ length: 30 }, () => execute(base, user.headers, sid, { service: svc.name, tool: 'fast' })),
    );
    const ok = answers.filter((x) => x.status === 200);
    expect(ok).toHaveLength(7);
    expect(answers.filter((x) => x.status === 429)).toHaveLength(23);
    expect(ok.map((x) => Number(x.headers.get('x-quota-remaining'))).sort((p, q) => p - q)).toEqual([
      0, 1, 2, 3, 4, 5, 6,
    ]);
    expect(upstream.seenAt('/fast')).toHaveLength(7);
    await upstream.close();
  });
});
