/** Inbound triggers: bad management input → 400/409 problem+json; a delivery to an agent with nothing deployed → 409 and no delivery kept. */
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { triggerDeliveries } from '../../../src/db/schema/index.js';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { createAgent } from '../deployments/fixtures.js';

const { app, ctx } = await setupApp();

describe('inbound trigger errors', () => {
  it('rejects unknown modes, short secrets, malformed Standard Webhooks secrets and limits out of range', async () => {
    const user = await createUser(app);
    const agent = await createAgent(app, user);
    const url = `/v2/agents/${agent.id}/triggers`;
    for (const payload of [
      { mode: 'hmac' },
      { mode: 'github', secret: 'short' },
      { mode: 'standard_webhooks', secret: 'not-a-whsec-secret-at-all' },
      { mode: 'bearer', rate_limit_per_minute: 0 },
      { mode: 'bearer', rate_limit_per_minute: 100000 },
      { mode: 'bearer', url: 'https://elsewhere.example' },
      {},
    ]) {
      const res = await app.inject({ method: 'POST', url, headers: user.headers, payload });
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.json().code).toBe('validation_failed');
    }
    const { body: t } = await call(
      app,
      { method: 'POST', url, headers: user.headers, payload: { mode: 'bearer' } },
      201,
    );
    expect(
      (await app.inject({ method: 'PATCH', url: `${url}/${t.id}`, headers: user.headers, payload: {} })).statusCode,
    ).toBe(400);
    expect(
      (await app.inject({ method: 'PATCH', url: `${url}/${t.id}`, headers: user.headers, payload: { mode: 'github' } }))
        .statusCode,
    ).toBe(400);
  });

  it('a verified delivery to an agent with nothing deployed → 409 invalid_state, and the sender may retry later', async () => {
    const user = await createUser(app);
    const agent = await createAgent(app, user);
    const { body: t } = await call(
      app,
      { method: 'POST', url: `/v2/agents/${agent.id}/triggers`, headers: user.headers, payload: { mode: 'bearer' } },
      201,
    );
    const res = await app.inject({
      method: 'POST',
      url: `/hooks/${t.id}`,
      headers: { authorization: `Bearer ${t.secret}`, 'idempotency-key': 'k1', 'content-type': 'application/json' },
      payload: '{}',
    });
    expect(res.statusCode).toBe(409);
    expect(res.json().code).toBe('invalid_state');
    expect(await ctx.db.select().from(triggerDeliveries).where(eq(triggerDeliveries.triggerId, t.id))).toEqual([]);
  });

  it('caps the triggers of an agent at 20', async () => {
    const user = await createUser(app);
    const agent = await createAgent(app, user);
    for (let i = 0; i < 20; i++)
      await call(
        app,
        { method: 'POST', url: `/v2/agents/${agent.id}/triggers`, headers: user.headers, payload: { mode: 'bearer' } },
        201,
      );
    const res = await app.inject({
      method: 'POST',
      url: `/v2/agents/${agent.id}/triggers`,
      headers: user.headers,
      payload: { mode: 'bearer' },
    });
    expect(res.statusCode).toBe(409);
    expect(res.json().code).toBe('limit_reached');
  });
});
