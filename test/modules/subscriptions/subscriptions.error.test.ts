import { describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { makeService } from './helpers.js';

const { app, ctx } = await setupApp();

describe('subscriptions — errors', () => {
  it('answers 409 when subscribing twice to the same service', async () => {
    const owner = await createUser(app);
    const u = await createUser(app, { roles: ['pro'] });
    const svc = await makeService(app, ctx, owner);
    await call(
      app,
      { method: 'POST', url: '/subscriptions', headers: u.headers, payload: { service_id: svc.id, plan: 'free' } },
      201,
    );
    const { body } = await call(
      app,
      { method: 'POST', url: '/subscriptions', headers: u.headers, payload: { service_id: svc.id, plan: 'pro' } },
      409,
    );
    expect(body.code).toBe('conflict');
  });

  it('answers 404 for unknown, draft and unpublished services', async () => {
    const owner = await createUser(app);
    const u = await createUser(app);
    const draft = await makeService(app, ctx, owner, 'draft');
    const gone = await makeService(app, ctx, owner, 'unpublished');
    for (const service_id of ['svc_00000000000000000000000000', 'no-such-service', draft.id, gone.id]) {
      const { body } = await call(
        app,
        { method: 'POST', url: '/subscriptions', headers: u.headers, payload: { service_id, plan: 'free' } },
        404,
      );
      expect(body.code).toBe('not_found');
    }
    // The owner cannot subscribe to its own draft either (owners execute their services without one).
    await call(
      app,
      { method: 'POST', url: '/subscriptions', headers: owner.headers, payload: { service_id: draft.id } },
      404,
    );
  });

  it('validates bodies and queries', async () => {
    const u = await createUser(app);
    await call(
      app,
      { method: 'POST', url: '/subscriptions', headers: u.headers, payload: { service_id: 'x', plan: 'platinum' } },
      400,
    );
    await call(app, { method: 'POST', url: '/subscriptions', headers: u.headers, payload: { plan: 'free' } }, 400);
    await call(
      app,
      { method: 'POST', url: '/subscriptions', headers: u.headers, payload: { service_id: 'x', extra: true } },
      400,
    );
    await call(app, { method: 'PUT', url: '/subscriptions/sub_x', headers: u.headers, payload: {} }, 400);
    await call(app, { method: 'GET', url: '/subscriptions?status=paused', headers: u.headers }, 400);
  });

  it('answers 404 for unknown subscriptions and 409 when changing a canceled one', async () => {
    const owner = await createUser(app);
    const u = await createUser(app, { roles: ['pro'] });
    for (const [method, url, payload] of [
      ['GET', '/subscriptions/sub_00000000000000000000000000', undefined],
      ['PUT', '/subscriptions/sub_00000000000000000000000000', { plan: 'pro' }],
      ['DELETE', '/subscriptions/sub_00000000000000000000000000', undefined],
      ['GET', '/subscriptions/sub_00000000000000000000000000/quotas', undefined],
    ] as const) {
      await call(app, { method, url, headers: u.headers, payload }, 404);
    }
    const svc = await makeService(app, ctx, owner);
    const { body: sub } = await call(
      app,
      { method: 'POST', url: '/subscriptions', headers: u.headers, payload: { service_id: svc.id } },
      201,
    );
    await call(app, { method: 'DELETE', url: `/subscriptions/${sub.id}`, headers: u.headers }, 200);
    const { body } = await call(
      app,
      { method: 'PUT', url: `/subscriptions/${sub.id}`, headers: u.headers, payload: { plan: 'pro' } },
      409,
    );
    expect(body.code).toBe('invalid_state');
  });
});
