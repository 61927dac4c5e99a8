import { describe, expect, it } from 'vitest';
import { windowsAt } from '../../../src/modules/subscriptions/windows.js';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { makeService } from './helpers.js';

const { app, ctx } = await setupApp({
  QUOTA_FREE_DAY: '7',
  QUOTA_FREE_MONTH: '70',
  QUOTA_PRO_DAY: '500',
  QUOTA_PRO_MONTH: 'unlimited',
});

describe('subscriptions — happy paths', () => {
  it('subscribes, reads, lists, changes plan, shows quotas and cancels', async () => {
    const owner = await createUser(app);
    const u = await createUser(app, { roles: ['pro'] });
    const svc = await makeService(app, ctx, owner);
    const { body: sub } = await call(
      app,
      { method: 'POST', url: '/subscriptions', headers: u.headers, payload: { service_id: svc.id, plan: 'free' } },
      201,
    );
    expect(sub).toMatchObject({
      service_id: svc.id,
      plan: 'free',
      status: 'active',
      quotas: { day: 7, month: 70 },
      used: { day: 0, month: 0 },
      canceled_at: null,
    });
    expect(sub.id).toMatch(/^sub_[0-9a-z]{26}$/);

    const { body: got } = await call(app, { method: 'GET', url: `/subscriptions/${sub.id}`, headers: u.headers }, 200);
    expect(got).toEqual(sub);
    const { body: list } = await call(app, { method: 'GET', url: '/subscriptions', headers: u.headers }, 200);
    expect(list).toEqual({ data: [sub], next_cursor: null });
    const { body: ids } = await call(
      app,
      { method: 'GET', url: '/subscriptions/services/ids', headers: u.headers },
      200,
    );
    expect(ids).toEqual({ data: [svc.id] });

    const { body: q } = await call(
      app,
      { method: 'GET', url: `/subscriptions/${sub.id}/quotas`, headers: u.headers },
      200,
    );
    const w = windowsAt();
    expect(q).toEqual({
      plan: 'free',
      windows: [
        { window: 'day', limit: 7, used: 0, remaining: 7, resets_at: w.dayResetsAt.toISOString() },
        { window: 'month', limit: 70, used: 0, remaining: 70, resets_at: w.monthResetsAt.toISOString() },
      ],
    });

    const { body: pro } = await call(
      app,
      { method: 'PUT', url: `/subscriptions/${sub.id}`, headers: u.headers, payload: { plan: 'pro' } },
      200,
    );
    expect(pro).toMatchObject({ plan: 'pro', quotas: { day: 500, month: null } });
    const { body: q2 } = await call(
      app,
      { method: 'GET', url: `/subscriptions/${sub.id}/quotas`, headers: u.headers },
      200,
    );
    expect(q2.windows[1]).toMatchObject({ window: 'month', limit: null, remaining: null });

    const { body: canceled } = await call(
      app,
      { method: 'DELETE', url: `/subscriptions/${sub.id}`, headers: u.headers },
      200,
    );
    expect(canceled.status).toBe('canceled');
    expect(canceled.canceled_at).toBeTruthy();
    const { body: ids2 } = await call(
      app,
      { method: 'GET', url: '/subscriptions/services/ids', headers: u.headers },
      200,
    );
    expect(ids2.data).toEqual([]);
    // Canceling again answers the canceled subscription unchanged.
    const { body: again } = await call(
      app,
      { method: 'DELETE', url: `/subscriptions/${sub.id}`, headers: u.headers },
      200,
    );
    expect(again.canceled_at).toBe(canceled.canceled_at);
  });

  it('subscribes by service name, defaults to the free plan, and allows a new subscription after canceling', async () => {
    const owner = await createUser(app);
    const u = await createUser(app, { roles: ['enterprise'] });
    const svc = await makeService(app, ctx, owner);
    const { body: s1 } = await call(
      app,
      { method: 'POST', url: '/subscriptions', headers: u.headers, payload: { service_id: svc.name } },
      201,
    );
    expect(s1).toMatchObject({ service_id: svc.id, plan: 'free' });
    await call(app, { method: 'DELETE', url: `/subscriptions/${s1.id}`, headers: u.headers }, 200);
    const { body: s2 } = await call(
      app,
      {
        method: 'POST',
        url: '/subscriptions',
        headers: u.headers,
        payload: { service_id: svc.id, plan: 'enterprise' },
      },
      201,
    );
    expect(s2.id).not.toBe(s1.id);
    expect(s2.quotas).toEqual({ day: null, month: null });
    const { body: active } = await call(
      app,
      { method: 'GET', url: '/subscriptions?status=active', headers: u.headers },
      200,
    );
    expect(active.data.map((s: { id: string }) => s.id)).toEqual([s2.id]);
    const { body: canceled } = await call(
      app,
      { method: 'GET', url: '/subscriptions?status=canceled', headers: u.headers },
      200,
    );
    expect(canceled.data.map((s: { id: string }) => s.id)).toEqual([s1.id]);
  });

  it('paginates newest first', async () => {
    const owner = await createUser(app);
    const u = await createUser(app);
    const subs: string[] = [];
    for (let i = 0; i < 3; i++) {
      const svc = await makeService(app, ctx, owner);
      subs.push(
        (
          await call(
            app,
            { method: 'POST', url: '/subscriptions', headers: u.headers, payload: { service_id: svc.id } },
            201,
          )
        ).body.id,
      );
    }
    const { body: p1 } = await call(app, { method: 'GET', url: '/subscriptions?limit=2', headers: u.headers }, 200);
    expect(p1.data.map((s: { id: string }) => s.id)).toEqual([subs[2], subs[1]]);
    const { body: p2 } = await call(
      app,
      { method: 'GET', url: `/subscriptions?limit=2&cursor=${p1.next_cursor}`, headers: u.headers },
      200,
    );
    expect(p2.data.map((s: { id: string }) => s.id)).toEqual([subs[0]]);
    expect(p2.next_cursor).toBeNull();
  });

  it("reflects the user's role as subscription.tier in /v1/auth/me", async () => {
    for (const [roles, tier] of [
      [['user'], 'user'],
      [['pro'], 'pro'],
      [['user', 'enterprise'], 'enterprise'],
      [['admin'], 'admin'],
    ] as const) {
      const u = await createUser(app, { roles: [...roles] });
      const { body } = await call(app, { method: 'GET', url: '/v1/auth/me', headers: u.headers }, 200);
      expect(body.subscription.tier, roles.join(',')).toBe(tier);
    }
  });
});
