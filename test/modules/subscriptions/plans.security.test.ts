/**
 * Quotas nobody can lift (issue 11 §3.6, OWASP API6): plans follow the caller's role, and usage
 * binds the account × service × window, so cancel + resubscribe resets nothing.
 */
import { describe, expect, it } from 'vitest';
import type { AppError } from '../../../src/http/errors.js';
import { plansFor } from '../../../src/modules/subscriptions/plans.js';
import { consumeQuota } from '../../../src/modules/subscriptions/quota.js';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { makeService } from './helpers.js';

const { app, ctx } = await setupApp({ QUOTA_FREE_DAY: '5', QUOTA_FREE_MONTH: '50', QUOTA_PRO_DAY: '8' });

async function subscribeAs(roles: string[], plan?: string) {
  const owner = await createUser(app);
  const u = await createUser(app, { roles });
  const svc = await makeService(app, ctx, owner);
  const res = await app.inject({
    method: 'POST',
    url: '/subscriptions',
    headers: u.headers,
    payload: { service_id: svc.id, ...(plan ? { plan } : {}) },
  });
  return { u, svc, res };
}

describe('happy: plans by role', () => {
  it('user → free; pro → up to pro; enterprise and admin → any', async () => {
    expect(plansFor(['user'])).toEqual(['free']);
    expect(plansFor(['user', 'pro'])).toEqual(['free', 'pro']);
    expect(plansFor(['enterprise'])).toEqual(['free', 'pro', 'enterprise']);
    expect(plansFor(['admin'])).toEqual(['free', 'pro', 'enterprise']);
    for (const [roles, plan] of [
      [['user'], 'free'],
      [['pro'], 'pro'],
      [['enterprise'], 'enterprise'],
      [['admin'], 'enterprise'],
    ] as const) {
      const { res } = await subscribeAs([...roles], plan);
      expect(res.statusCode, `${roles} ${plan}`).toBe(201);
      expect(res.json().plan).toBe(plan);
    }
  });
});

describe('error: a plan above the role → 403', () => {
  it('POST and PUT refuse it, and the subscription keeps its plan', async () => {
    for (const [roles, plan] of [
      [['user'], 'pro'],
      [['user'], 'enterprise'],
      [['pro'], 'enterprise'],
    ] as const) {
      const { res } = await subscribeAs([...roles], plan);
      expect(res.statusCode, `${roles} ${plan}`).toBe(403);
      expect(res.json().code).toBe('forbidden');
    }
    const { u, res } = await subscribeAs(['user']);
    const sub = res.json();
    const { body } = await call(
      app,
      { method: 'PUT', url: `/subscriptions/${sub.id}`, headers: u.headers, payload: { plan: 'enterprise' } },
      403,
    );
    expect(body.code).toBe('forbidden');
    const { body: still } = await call(
      app,
      { method: 'GET', url: `/subscriptions/${sub.id}`, headers: u.headers },
      200,
    );
    expect(still).toMatchObject({ plan: 'free', quotas: { day: 5, month: 50 } });
  });
});

describe('security: cancel + resubscribe resets nothing', () => {
  it('a used-up free plan stays used up across DELETE + POST, repeatedly', async () => {
    const { u, svc, res } = await subscribeAs(['user']);
    let sub = res.json();
    for (let i = 0; i < 5; i++) await consumeQuota(ctx, u.userId, svc.id);
    await expect(consumeQuota(ctx, u.userId, svc.id)).rejects.toMatchObject({ code: 'quota_exceeded' });
    for (let round = 0; round < 3; round++) {
      await call(app, { method: 'DELETE', url: `/subscriptions/${sub.id}`, headers: u.headers }, 200);
      sub = (
        await call(
          app,
          { method: 'POST', url: '/subscriptions', headers: u.headers, payload: { service_id: svc.id } },
          201,
        )
      ).body;
      expect(sub.used).toEqual({ day: 5, month: 5 });
      const err = await consumeQuota(ctx, u.userId, svc.id).catch((e: AppError) => e);
      expect((err as AppError).code).toBe('quota_exceeded');
    }
    const { body: q } = await call(
      app,
      { method: 'GET', url: `/subscriptions/${sub.id}/quotas`, headers: u.headers },
      200,
    );
    expect(q.windows.find((w: { window: string }) => w.window === 'day')).toMatchObject({
      limit: 5,
      used: 5,
      remaining: 0,
    });
  });

  it('counts stay exact when calls race a cancel and a resubscribe', async () => {
    const { u, svc, res } = await subscribeAs(['pro'], 'pro'); // 8 per day
    const sub = res.json();
    const calls = Array.from({ length: 30 }, () =>
      consumeQuota(ctx, u.userId, svc.id).then(
        () => 1,
        () => 0,
      ),
    );
    await call(app, { method: 'DELETE', url: `/subscriptions/${sub.id}`, headers: u.headers }, 200);
    const again = (
      await call(
        app,
        { method: 'POST', url: '/subscriptions', headers: u.headers, payload: { service_id: svc.id, plan: 'pro' } },
        201,
      )
    ).body;
    const more = Array.from({ length: 30 }, () =>
      consumeQuota(ctx, u.userId, svc.id).then(
        () => 1,
        () => 0,
      ),
    );
    const ok = (await Promise.all([...calls, ...more])).reduce((a: number, b: number) => a + b, 0);
    const { body: now } = await call(
      app,
      { method: 'GET', url: `/subscriptions/${again.id}`, headers: u.headers },
      200,
    );
    expect(now.used.day).toBe(ok);
    expect(ok).toBeLessThanOrEqual(8);
  });

  it("another user's counters never carry over", async () => {
    const { svc } = await subscribeAs(['user']);
    const other = await createUser(app);
    const { body } = await call(
      app,
      { method: 'POST', url: '/subscriptions', headers: other.headers, payload: { service_id: svc.id } },
      201,
    );
    expect(body.used).toEqual({ day: 0, month: 0 });
  });
});

describe('security: the plan follows the current role (demotion)', () => {
  it('a pro subscriber demoted to user is counted on free, and on pro again once promoted', async () => {
    const admin = await createUser(app, { roles: ['admin'] });
    const { u, svc, res } = await subscribeAs(['pro'], 'pro'); // pro: 8 per day, free: 5
    const sub = res.json();
    for (let i = 0; i < 3; i++) expect((await consumeQuota(ctx, u.userId, svc.id)).plan).toBe('pro');
    await call(
      app,
      { method: 'PUT', url: `/admin/users/${u.userId}/roles`, headers: admin.headers, payload: { roles: ['user'] } },
      200,
    );
    // Demoted: the free plan's 5 per day apply at once (3 used → 2 left), the stored plan is kept.
    const state = await consumeQuota(ctx, u.userId, svc.id);
    expect(state.plan).toBe('free');
    expect(state.windows.find((w) => w.window === 'day')).toMatchObject({ limit: 5, used: 4, remaining: 1 });
    await consumeQuota(ctx, u.userId, svc.id);
    const err = await consumeQuota(ctx, u.userId, svc.id).catch((e: AppError) => e);
    expect(err).toMatchObject({ code: 'quota_exceeded', message: expect.stringMatching(/free plan/) });
    const { body: q } = await call(
      app,
      { method: 'GET', url: `/subscriptions/${sub.id}/quotas`, headers: u.headers },
      200,
    );
    expect(q.plan).toBe('free');
    expect(q.windows.find((w: { window: string }) => w.window === 'day')).toMatchObject({
      limit: 5,
      used: 5,
      remaining: 0,
    });
    // The subscription record says the same: the plan chosen, the plan that applies and its limits.
    const { body: record } = await call(
      app,
      { method: 'GET', url: `/subscriptions/${sub.id}`, headers: u.headers },
      200,
    );
    expect(record).toMatchObject({
      plan: 'pro',
      effective_plan: 'free',
      quotas: { day: 5, month: 50 },
      used: { day: 5 },
    });
    const { body: listed } = await call(app, { method: 'GET', url: '/subscriptions', headers: u.headers }, 200);
    expect(listed.data.find((x: { id: string }) => x.id === sub.id)).toMatchObject({
      plan: 'pro',
      effective_plan: 'free',
      quotas: { day: 5 },
    });
    // Promoted again: the pro plan (8 per day) applies again without resubscribing.
    await call(
      app,
      {
        method: 'PUT',
        url: `/admin/users/${u.userId}/roles`,
        headers: admin.headers,
        payload: { roles: ['user', 'pro'] },
      },
      200,
    );
    const back = await consumeQuota(ctx, u.userId, svc.id);
    expect(back.plan).toBe('pro');
    expect(back.windows.find((w) => w.window === 'day')).toMatchObject({ limit: 8, used: 6 });
    const { body: again } = await call(
      app,
      { method: 'GET', url: `/subscriptions/${sub.id}`, headers: u.headers },
      200,
    );
    expect(again).toMatchObject({ plan: 'pro', effective_plan: 'pro', quotas: { day: 8 } });
  });

  it('an enterprise subscriber demoted to pro is counted on pro', async () => {
    const admin = await createUser(app, { roles: ['admin'] });
    const { u, svc, res } = await subscribeAs(['enterprise'], 'enterprise');
    expect(res.json()).toMatchObject({ plan: 'enterprise', effective_plan: 'enterprise', quotas: { day: null } });
    expect((await consumeQuota(ctx, u.userId, svc.id)).plan).toBe('enterprise');
    await call(
      app,
      {
        method: 'PUT',
        url: `/admin/users/${u.userId}/roles`,
        headers: admin.headers,
        payload: { roles: ['user', 'pro'] },
      },
      200,
    );
    const state = await consumeQuota(ctx, u.userId, svc.id);
    expect(state.plan).toBe('pro');
    expect(state.windows.find((w) => w.window === 'day')).toMatchObject({ limit: 8, used: 2 });
    const { body: record } = await call(
      app,
      { method: 'GET', url: `/subscriptions/${res.json().id}`, headers: u.headers },
      200,
    );
    expect(record).toMatchObject({ plan: 'enterprise', effective_plan: 'pro', quotas: { day: 8 } });
  });
});
