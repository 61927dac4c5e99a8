import { describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { createAgent, registerToolService as registerService } from '../../helpers/agents.js';
import { isAgentSubscribed } from '../../../src/modules/agents/service.js';
import { setServiceStatus } from '../../../src/modules/registry/service.js';

const { app, ctx } = await setupApp();

describe('agent tool subscriptions — happy paths', () => {
  it('subscribes to an own service by name, lists it, unsubscribes (query and body)', async () => {
    const u = await createUser(app);
    const a = await createAgent(app, u);
    const svc = await registerService(app, u);
    expect(await isAgentSubscribed(ctx, a.id, svc.id)).toBe(false);
    const { body: sub } = await call(
      app,
      { method: 'POST', url: `/v2/agents/${a.id}/tools/subscribe`, headers: u.headers, payload: { service: svc.name } },
      201,
    );
    expect(sub).toEqual({ service_id: svc.id, service: svc.name, subscribed_at: expect.any(String) });
    await call(
      app,
      { method: 'POST', url: `/v2/agents/${a.id}/tools/subscribe`, headers: u.headers, payload: { service: svc.id } },
      200,
    );
    expect(await isAgentSubscribed(ctx, a.id, svc.id)).toBe(true);
    const { body: list } = await call(app, { method: 'GET', url: `/v2/agents/${a.id}/tools`, headers: u.headers }, 200);
    expect(list).toEqual({ data: [sub], next_cursor: null });

    await call(
      app,
      { method: 'DELETE', url: `/v2/agents/${a.id}/tools/unsubscribe?service=${svc.name}`, headers: u.headers },
      204,
    );
    expect(await isAgentSubscribed(ctx, a.id, svc.id)).toBe(false);
    await call(
      app,
      { method: 'POST', url: `/v2/agents/${a.id}/tools/subscribe`, headers: u.headers, payload: { service: svc.name } },
      201,
    );
    await call(
      app,
      {
        method: 'DELETE',
        url: `/v2/agents/${a.id}/tools/unsubscribe`,
        headers: u.headers,
        payload: { service: svc.id },
      },
      204,
    );
    const { body: empty } = await call(
      app,
      { method: 'GET', url: `/v2/agents/${a.id}/tools`, headers: u.headers },
      200,
    );
    expect(empty.data).toEqual([]);
  });

  it('subscribes to another publisher’s service once the owner holds a subscription', async () => {
    const publisher = await createUser(app);
    const svc = await registerService(app, publisher);
    await setServiceStatus(ctx, svc.id, 'published');
    const u = await createUser(app);
    const a = await createAgent(app, u);
    const { body: refused } = await call(
      app,
      { method: 'POST', url: `/v2/agents/${a.id}/tools/subscribe`, headers: u.headers, payload: { service: svc.name } },
      403,
    );
    expect(refused.code).toBe('not_subscribed');
    await call(
      app,
      { method: 'POST', url: '/subscriptions', headers: u.headers, payload: { service_id: svc.id } },
      201,
    );
    await call(
      app,
      { method: 'POST', url: `/v2/agents/${a.id}/tools/subscribe`, headers: u.headers, payload: { service: svc.name } },
      201,
    );
    expect(await isAgentSubscribed(ctx, a.id, svc.id)).toBe(true);
  });

  it('paginates tool subscriptions', async () => {
    const u = await createUser(app);
    const a = await createAgent(app, u);
    const names: string[] = [];
    for (let i = 0; i < 3; i++) {
      const s = await registerService(app, u);
      names.push(s.name);
      await call(
        app,
        { method: 'POST', url: `/v2/agents/${a.id}/tools/subscribe`, headers: u.headers, payload: { service: s.name } },
        201,
      );
    }
    const { body: p1 } = await call(
      app,
      { method: 'GET', url: `/v2/agents/${a.id}/tools?limit=2`, headers: u.headers },
      200,
    );
    const { body: p2 } = await call(
      app,
      { method: 'GET', url: `/v2/agents/${a.id}/tools?limit=2&cursor=${p1.next_cursor}`, headers: u.headers },
      200,
    );
    expect(p1.data).toHaveLength(2);
    expect(p2.data).toHaveLength(1);
    expect(p2.next_cursor).toBeNull();
    expect([...p1.data, ...p2.data].map((s: { service: string }) => s.service).sort()).toEqual([...names].sort());
  });
});
