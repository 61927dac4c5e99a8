import { describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { describeAuthCases } from '../../helpers/auth-cases.js';
import { makeService } from './helpers.js';

const { app, ctx } = await setupApp();

describeAuthCases(
  'subscriptions',
  () => app,
  () => [
    { method: 'POST', url: '/subscriptions', payload: { service_id: 'x' } },
    { method: 'GET', url: '/subscriptions' },
    { method: 'GET', url: '/subscriptions/services/ids' },
    { method: 'GET', url: '/subscriptions/sub_x' },
    { method: 'PUT', url: '/subscriptions/sub_x', payload: { plan: 'pro' } },
    { method: 'DELETE', url: '/subscriptions/sub_x' },
    { method: 'GET', url: '/subscriptions/sub_x/quotas' },
  ],
  { usersOnly: true },
);

describe('subscriptions — security', () => {
  it("hides another user's subscriptions (404) and keeps them out of lists", async () => {
    const owner = await createUser(app);
    const alice = await createUser(app);
    const bob = await createUser(app);
    const svc = await makeService(app, ctx, owner);
    const { body: sub } = await call(
      app,
      { method: 'POST', url: '/subscriptions', headers: alice.headers, payload: { service_id: svc.id } },
      201,
    );
    await call(app, { method: 'GET', url: `/subscriptions/${sub.id}`, headers: bob.headers }, 404);
    await call(app, { method: 'GET', url: `/subscriptions/${sub.id}/quotas`, headers: bob.headers }, 404);
    await call(
      app,
      { method: 'PUT', url: `/subscriptions/${sub.id}`, headers: bob.headers, payload: { plan: 'enterprise' } },
      404,
    );
    await call(app, { method: 'DELETE', url: `/subscriptions/${sub.id}`, headers: bob.headers }, 404);
    const { body: list } = await call(app, { method: 'GET', url: '/subscriptions', headers: bob.headers }, 200);
    expect(list.data).toEqual([]);
    const { body: ids } = await call(
      app,
      { method: 'GET', url: '/subscriptions/services/ids', headers: bob.headers },
      200,
    );
    expect(ids.data).toEqual([]);
    // Alice's subscription is untouched.
    const { body: still } = await call(
      app,
      { method: 'GET', url: `/subscriptions/${sub.id}`, headers: alice.headers },
      200,
    );
    expect(still).toMatchObject({ status: 'active', plan: 'free' });
  });
});
