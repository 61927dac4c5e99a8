import { describe, expect, it } from 'vitest';
import { agentToken, createAgent } from '../../helpers/agents.js';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { makeService } from './helpers.js';

const { app, ctx } = await setupApp();

describe('subscriptions — security', () => {
  it('needs a user on every route (401 without, 403 for agent tokens)', async () => {
    const u = await createUser(app);
    const agent = await agentToken(app, await createAgent(app, u));
    const routes = [
      ['POST', '/subscriptions', { service_id: 'x' }],
      ['GET', '/subscriptions', undefined],
      ['GET', '/subscriptions/services/ids', undefined],
      ['GET', '/subscriptions/sub_x', undefined],
      ['PUT', '/subscriptions/sub_x', { plan: 'pro' }],
      ['DELETE', '/subscriptions/sub_x', undefined],
      ['GET', '/subscriptions/sub_x/quotas', undefined],
    ] as const;
    for (const [method, url, payload] of routes) {
      expect((await app.inject({ method, url, payload })).statusCode, `${method} ${url}`).toBe(401);
      expect((await app.inject({ method, url, payload, headers: agent.headers })).statusCode, `${method} ${url} (agent)`).toBe(403);
    }
  });

  it("hides another user's subscriptions (404) and keeps them out of lists", async () => {
    const owner = await createUser(app);
    const alice = await createUser(app);
    const bob = await createUser(app);
    const svc = await makeService(app, ctx, owner);
    const { body: sub } = await call(app, { method: 'POST', url: '/subscriptions', headers: alice.headers, payload: { service_id: svc.id } }, 201);
    await call(app, { method: 'GET', url: `/subscriptions/${sub.id}`, headers: bob.headers }, 404);
    await call(app, { method: 'GET', url: `/subscriptions/${sub.id}/quotas`, headers: bob.headers }, 404);
    await call(app, { method: 'PUT', url: `/subscriptions/${sub.id}`, headers: bob.headers, payload: { plan: 'enterprise' } }, 404);
    await call(app, { method: 'DELETE', url: `/subscriptions/${sub.id}`, headers: bob.headers }, 404);
    const { body: list } = await call(app, { method: 'GET', url: '/subscriptions', headers: bob.headers }, 200);
    expect(list.data).toEqual([]);
    const { body: ids } = await call(app, { method: 'GET', url: '/subscriptions/services/ids', headers: bob.headers }, 200);
    expect(ids.data).toEqual([]);
    // Alice's subscription is untouched.
    const { body: still } = await call(app, { method: 'GET', url: `/subscriptions/${sub.id}`, headers: alice.headers }, 200);
    expect(still).toMatchObject({ status: 'active', plan: 'free' });
  });
});
