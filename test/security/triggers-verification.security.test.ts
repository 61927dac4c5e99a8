/**
 * `POST /hooks/:trigger_id` is unauthenticated: every tampered, replayed-too-late, wrongly-keyed or
 * unsigned delivery answers 401 and leaves nothing behind (no delivery row, no invocation); an
 * unknown or disabled trigger 404; a body over 1 MiB 413; the per-trigger limit 429. Secrets are
 * stored encrypted and shown once; another account cannot manage the triggers.
 */
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { agentInvocations, agentTriggers, triggerDeliveries } from '../../src/db/schema/index.js';
import { call, createUser, setupApp } from '../helpers/app.js';
import { deployedAgent } from '../modules/schedules/fixtures.js';
import { eventBody, signedHeaders, type Mode } from '../modules/triggers/fixtures.js';

const { app, ctx } = await setupApp();
const { user, agentId } = await deployedAgent(app);

async function trigger(mode: Mode, extra: Record<string, unknown> = {}): Promise<{ id: string; secret: string }> {
  return (
    await call(
      app,
      { method: 'POST', url: `/v2/agents/${agentId}/triggers`, headers: user.headers, payload: { mode, ...extra } },
      201,
    )
  ).body;
}

async function nothingStored(triggerId: string): Promise<void> {
  expect(await ctx.db.select().from(triggerDeliveries).where(eq(triggerDeliveries.triggerId, triggerId))).toEqual([]);
  const invs = await ctx.db
    .select({ input: agentInvocations.input })
    .from(agentInvocations)
    .where(eq(agentInvocations.agentId, agentId));
  expect(invs.filter((i) => (i.input as { trigger_id?: string } | null)?.trigger_id === triggerId)).toEqual([]);
}

describe('inbound trigger verification', () => {
  for (const mode of ['standard_webhooks', 'github', 'stripe', 'bearer'] as Mode[]) {
    it(`${mode}: tampered, wrongly keyed, stale or unsigned deliveries → 401, nothing stored`, async () => {
      const t = await trigger(mode);
      const url = `/hooks/${t.id}`;
      const payload = eventBody(mode);
      const good = await signedHeaders(mode, t.secret, payload);
      const cases: Array<[string, Record<string, string>, string]> = [
        ['unsigned', {}, payload],
        [
          'wrong secret',
          await signedHeaders(
            mode,
            mode === 'standard_webhooks' || mode === 'stripe'
              ? `whsec_${Buffer.from('another secret, 24 bytes').toString('base64')}`
              : 'another-secret-of-enough-length',
            payload,
          ),
          payload,
        ],
      ];
      // A bearer secret proves the sender, not the body (TLS protects it in transit): only signatures cover the bytes.
      if (mode !== 'bearer')
        cases.push(
          ['body changed after signing', good, payload.replace('7', '8').replace('4200', '4300')],
          ['one byte appended', good, `${payload} `],
        );
      if (mode === 'bearer')
        cases.push(
          [
            'secret with one character changed',
            { authorization: `Bearer ${t.secret.slice(0, -1)}${t.secret.endsWith('A') ? 'B' : 'A'}` },
            payload,
          ],
          ['secret prefix only', { authorization: `Bearer ${t.secret.slice(0, 20)}` }, payload],
        );
      if (mode !== 'bearer' && mode !== 'github')
        cases.push([
          'signed 10 minutes ago',
          await signedHeaders(mode, t.secret, payload, { at: new Date(Date.now() - 600_000) }),
          payload,
        ]);
      if (mode === 'github')
        cases.push([
          'sha1 header only',
          { 'x-hub-signature': good['x-hub-signature-256'].replace('sha256=', 'sha1=') },
          payload,
        ]);
      if (mode === 'bearer')
        cases.push([
          'secret as Basic',
          { authorization: `Basic ${Buffer.from(`x:${t.secret}`).toString('base64')}` },
          payload,
        ]);
      for (const [what, headers, body] of cases) {
        const res = await app.inject({
          method: 'POST',
          url,
          headers: { 'content-type': 'application/json', ...headers },
          payload: body,
        });
        expect(res.statusCode, what).toBe(401);
        expect(res.json().code, what).toBe('invalid_credentials');
      }
      await nothingStored(t.id);
      // The untampered delivery still works afterwards.
      const ok = await app.inject({
        method: 'POST',
        url,
        headers: { 'content-type': 'application/json', ...good },
        payload,
      });
      expect(ok.statusCode).toBe(202);
    });
  }

  it('unknown, malformed and disabled triggers → 404; deleted → 404', async () => {
    const t = await trigger('bearer');
    for (const id of ['trg_00000000000000000000000000', 'not-an-id', "trg_' or 1=1 --"]) {
      const res = await app.inject({
        method: 'POST',
        url: `/hooks/${encodeURIComponent(id)}`,
        headers: { authorization: `Bearer ${t.secret}` },
        payload: '{}',
      });
      expect(res.statusCode, id).toBe(404);
    }
    await call(
      app,
      {
        method: 'PATCH',
        url: `/v2/agents/${agentId}/triggers/${t.id}`,
        headers: user.headers,
        payload: { enabled: false },
      },
      200,
    );
    expect(
      (
        await app.inject({
          method: 'POST',
          url: `/hooks/${t.id}`,
          headers: { authorization: `Bearer ${t.secret}` },
          payload: '{}',
        })
      ).statusCode,
    ).toBe(404);
    await call(app, { method: 'DELETE', url: `/v2/agents/${agentId}/triggers/${t.id}`, headers: user.headers }, 204);
    expect(
      (
        await app.inject({
          method: 'POST',
          url: `/hooks/${t.id}`,
          headers: { authorization: `Bearer ${t.secret}` },
          payload: '{}',
        })
      ).statusCode,
    ).toBe(404);
  });

  it('bodies over 1 MiB → 413 (exactly 1 MiB is accepted)', async () => {
    const t = await trigger('bearer');
    const auth = { authorization: `Bearer ${t.secret}`, 'content-type': 'text/plain' };
    const big = await app.inject({
      method: 'POST',
      url: `/hooks/${t.id}`,
      headers: auth,
      payload: 'x'.repeat(1024 * 1024 + 1),
    });
    expect(big.statusCode).toBe(413);
    await nothingStored(t.id);
    const max = await app.inject({
      method: 'POST',
      url: `/hooks/${t.id}`,
      headers: auth,
      payload: 'x'.repeat(1024 * 1024),
    });
    expect(max.statusCode).toBe(202);
  });

  it('verified deliveries over the per-minute limit → 429 with Retry-After; unverified ones do not use it up', async () => {
    const t = await trigger('bearer', { rate_limit_per_minute: 3 });
    for (let i = 0; i < 5; i++)
      expect(
        (
          await app.inject({
            method: 'POST',
            url: `/hooks/${t.id}`,
            headers: { authorization: 'Bearer wrong' },
            payload: '{}',
          })
        ).statusCode,
      ).toBe(401);
    const send = () =>
      app.inject({
        method: 'POST',
        url: `/hooks/${t.id}`,
        headers: { authorization: `Bearer ${t.secret}`, 'content-type': 'application/json' },
        payload: '{}',
      });
    for (let i = 0; i < 3; i++) expect((await send()).statusCode).toBe(202);
    const over = await send();
    expect(over.statusCode).toBe(429);
    expect(Number(over.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('stores the secret encrypted, shows it once, and hides the triggers from other accounts', async () => {
    const t = await trigger('github');
    const [row] = await ctx.db.select().from(agentTriggers).where(eq(agentTriggers.id, t.id));
    expect(row.secretEncrypted).not.toContain(t.secret);
    expect(row.secretEncrypted.startsWith('v1.')).toBe(true);
    const other = await createUser(app);
    for (const [method, url] of [
      ['GET', `/v2/agents/${agentId}/triggers`],
      ['GET', `/v2/agents/${agentId}/triggers/${t.id}`],
      ['PATCH', `/v2/agents/${agentId}/triggers/${t.id}`],
      ['DELETE', `/v2/agents/${agentId}/triggers/${t.id}`],
      ['POST', `/v2/agents/${agentId}/triggers`],
    ] as const) {
      const res = await app.inject({
        method,
        url,
        headers: other.headers,
        ...(method === 'PATCH'
          ? { payload: { enabled: false } }
          : method === 'POST'
            ? { payload: { mode: 'bearer' } }
            : {}),
      });
      expect(res.statusCode, `${method} ${url}`).toBe(404);
    }
    expect((await app.inject({ method: 'GET', url: `/v2/agents/${agentId}/triggers` })).statusCode).toBe(401);
  });
});
