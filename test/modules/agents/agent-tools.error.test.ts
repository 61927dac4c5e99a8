import { describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { createAgent, registerToolService as registerService } from '../../helpers/agents.js';
import { isAgentSubscribed } from '../../../src/modules/agents/service.js';

const { app, ctx } = await setupApp();

describe('agent tool subscriptions — errors', () => {
  it('404 for unknown services and missing subscriptions; 400 without a service', async () => {
    const u = await createUser(app);
    const a = await createAgent(app, u);
    const { body } = await call(
      app,
      {
        method: 'POST',
        url: `/v2/agents/${a.id}/tools/subscribe`,
        headers: u.headers,
        payload: { service: 'no-such-service' },
      },
      404,
    );
    expect(body.code).toBe('not_found');
    await call(
      app,
      { method: 'DELETE', url: `/v2/agents/${a.id}/tools/unsubscribe?service=no-such-service`, headers: u.headers },
      404,
    );
    await call(app, { method: 'DELETE', url: `/v2/agents/${a.id}/tools/unsubscribe`, headers: u.headers }, 400);
    await call(
      app,
      { method: 'POST', url: `/v2/agents/${a.id}/tools/subscribe`, headers: u.headers, payload: {} },
      400,
    );
    await call(
      app,
      {
        method: 'POST',
        url: `/v2/agents/${a.id}/tools/subscribe`,
        headers: u.headers,
        payload: { service: 'x', extra: 1 },
      },
      400,
    );
  });

  it('a deleted agent is never subscribed', async () => {
    const u = await createUser(app);
    const a = await createAgent(app, u);
    const svc = await registerService(app, u);
    await call(
      app,
      { method: 'POST', url: `/v2/agents/${a.id}/tools/subscribe`, headers: u.headers, payload: { service: svc.name } },
      201,
    );
    await call(app, { method: 'DELETE', url: `/v2/agents/${a.id}`, headers: u.headers }, 204);
    expect(await isAgentSubscribed(ctx, a.id, svc.id)).toBe(false);
  });
});
