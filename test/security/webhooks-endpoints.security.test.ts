/**
 * Outbound webhook endpoints: only http(s) URLs without credentials; the signing secret is shown
 * once and stored encrypted; another account's endpoints and messages answer 404; agents (tokens
 * of an account's agents) cannot manage them; no credentials 401.
 */
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { webhookEndpoints } from '../../src/db/schema/index.js';
import { call, createUser, setupApp } from '../helpers/app.js';
import { agentToken, createAgent } from '../modules/deployments/fixtures.js';

const { app, ctx } = await setupApp();

describe('webhook endpoints security', () => {
  it('refuses non-http(s) URLs and URLs with credentials', async () => {
    const user = await createUser(app);
    for (const url of [
      'file:///etc/passwd',
      'gopher://127.0.0.1:6379/_FLUSHALL',
      'javascript:alert(1)',
      'https://user:pass@example.com/hook',
      'ftp://example.com/x',
      'not a url',
    ]) {
      const res = await app.inject({
        method: 'POST',
        url: '/v2/webhooks',
        headers: user.headers,
        payload: { url, events: ['execution.failed'] },
      });
      expect(res.statusCode, url).toBe(400);
    }
    expect(
      (
        await app.inject({
          method: 'POST',
          url: '/v2/webhooks',
          headers: user.headers,
          payload: { url: 'https://example.com/h', events: ['everything'] },
        })
      ).statusCode,
    ).toBe(400);
  });

  it('shows the secret once, stores it encrypted, and hides endpoints from other accounts and agents', async () => {
    const user = await createUser(app);
    const { body: ep, res } = await call(
      app,
      {
        method: 'POST',
        url: '/v2/webhooks',
        headers: user.headers,
        payload: { url: 'https://example.com/hook', events: ['*'] },
      },
      201,
    );
    expect(res.headers['cache-control']).toBe('no-store');
    const [row] = await ctx.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, ep.id));
    expect(row.secretEncrypted).not.toContain(ep.secret.slice(6));
    const list = await call(app, { method: 'GET', url: '/v2/webhooks', headers: user.headers }, 200);
    expect(JSON.stringify(list.body)).not.toContain(ep.secret);
    const other = await createUser(app);
    for (const [method, url] of [
      ['GET', `/v2/webhooks/${ep.id}`],
      ['PATCH', `/v2/webhooks/${ep.id}`],
      ['DELETE', `/v2/webhooks/${ep.id}`],
      ['GET', `/v2/webhooks/${ep.id}/messages`],
      ['POST', `/v2/webhooks/${ep.id}/messages/msg_00000000000000000000000000/replay`],
    ] as const) {
      const r = await app.inject({
        method,
        url,
        headers: other.headers,
        ...(method === 'PATCH' ? { payload: { enabled: false } } : {}),
      });
      expect(r.statusCode, `${method} ${url}`).toBe(404);
    }
    expect((await call(app, { method: 'GET', url: '/v2/webhooks', headers: other.headers }, 200)).body.data).toEqual(
      [],
    );
    const agent = await createAgent(app, user);
    const auth = await agentToken(app, agent);
    expect((await app.inject({ method: 'GET', url: '/v2/webhooks', headers: auth })).statusCode).toBe(403);
    expect((await app.inject({ method: 'GET', url: '/v2/webhooks' })).statusCode).toBe(401);
    expect(
      (await call(app, { method: 'GET', url: `/v2/webhooks/${ep.id}`, headers: user.headers }, 200)).body.enabled,
    ).toBe(true);
  });
});
