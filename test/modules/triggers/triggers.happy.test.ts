/**
 * Inbound triggers, end to end: for each verification mode a delivery signed by the sender's own
 * library is accepted (202) and runs the agent asynchronously with `{ headers subset, body }` as
 * an invocation with trigger "trigger"; the same delivery id again is a duplicate (same invocation,
 * nothing run); management lists triggers without secrets.
 */
import { and, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { agentInvocations } from '../../../src/db/schema/index.js';
import { call, setupApp } from '../../helpers/app.js';
import { waitFor } from '../deployments/fixtures.js';
import { deployedAgent } from '../schedules/fixtures.js';
import { eventBody, signedHeaders, type Mode } from './fixtures.js';

const { app, ctx } = await setupApp();
const { user, agentId } = await deployedAgent(app, 'export default async function (input) { return input; }\n');

async function finished(invocationId: string): Promise<any> {
  return waitFor(
    async () => {
      const { body } = await call(
        app,
        { method: 'GET', url: `/v2/agents/${agentId}/executions/${invocationId}`, headers: user.headers },
        200,
      );
      return body.finished_at ? body : null;
    },
    15_000,
    'the invocation',
  );
}

describe('inbound triggers', () => {
  for (const mode of ['standard_webhooks', 'github', 'stripe', 'bearer'] as Mode[]) {
    it(`${mode}: a verified delivery runs the agent once; a redelivery is a duplicate`, async () => {
      const { body: t, res } = await call(
        app,
        { method: 'POST', url: `/v2/agents/${agentId}/triggers`, headers: user.headers, payload: { mode, name: mode } },
        201,
      );
      expect(res.headers['cache-control']).toBe('no-store');
      expect(t.url).toBe(`${ctx.config.publicUrl}/hooks/${t.id}`);
      expect(typeof t.secret).toBe('string');
      const path = new URL(t.url).pathname;
      const payload = eventBody(mode);
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        'user-agent': 'sender/1.0',
        ...(await signedHeaders(mode, t.secret, payload)),
      };
      const first = await app.inject({ method: 'POST', url: path, headers, payload });
      expect(first.statusCode, first.body).toBe(202);
      const accepted = first.json();
      expect(accepted.duplicate).toBe(false);
      const inv = await finished(accepted.invocation_id);
      expect(inv.status).toBe('succeeded');
      expect(inv.output.body).toEqual(JSON.parse(payload));
      expect(inv.output).toMatchObject({ trigger_id: t.id, delivery_id: accepted.delivery_id });
      expect(inv.output.headers).toMatchObject({ 'content-type': 'application/json', 'user-agent': 'sender/1.0' });
      // Proofs never reach the agent.
      for (const h of ['authorization', 'webhook-signature', 'x-hub-signature-256', 'stripe-signature'])
        expect(inv.output.headers[h]).toBeUndefined();
      const [row] = await ctx.db
        .select({ trigger: agentInvocations.trigger, scope: agentInvocations.invokerScope })
        .from(agentInvocations)
        .where(eq(agentInvocations.id, accepted.invocation_id));
      expect(row.trigger).toBe('trigger');
      // Created with a user token (every scope): the run holds every agent scope, no more.
      expect(row.scope?.split(' ').sort()).toEqual([
        'memory:read',
        'memory:write',
        'permissions:manage',
        'tools:execute',
      ]);

      // The sender retries the same delivery (same id, signed again): accepted, nothing new runs.
      const again = await app.inject({
        method: 'POST',
        url: path,
        headers: {
          'content-type': 'application/json',
          ...(await signedHeaders(mode, t.secret, payload, {
            id: headers['webhook-id'] ?? headers['x-github-delivery'] ?? headers['idempotency-key'],
          })),
        },
        payload,
      });
      expect(again.statusCode, again.body).toBe(202);
      expect(again.json()).toEqual({ ...accepted, duplicate: true });
      const runs = await ctx.db
        .select()
        .from(agentInvocations)
        .where(and(eq(agentInvocations.agentId, agentId), eq(agentInvocations.trigger, 'trigger')));
      expect(runs.filter((r) => (r.input as { trigger_id: string }).trigger_id === t.id)).toHaveLength(1);

      // Listing and reading never show the secret again; last_delivery_at is set.
      const got = await call(
        app,
        { method: 'GET', url: `/v2/agents/${agentId}/triggers/${t.id}`, headers: user.headers },
        200,
      );
      expect(got.body.secret).toBeUndefined();
      expect(got.body.last_delivery_at).not.toBeNull();
      const list = await call(
        app,
        { method: 'GET', url: `/v2/agents/${agentId}/triggers`, headers: user.headers },
        200,
      );
      expect(JSON.stringify(list.body)).not.toContain(t.secret);
    });
  }

  it('passes a text body as text and a binary one as base64', async () => {
    const { body: t } = await call(
      app,
      { method: 'POST', url: `/v2/agents/${agentId}/triggers`, headers: user.headers, payload: { mode: 'bearer' } },
      201,
    );
    const path = `/hooks/${t.id}`;
    const text = await app.inject({
      method: 'POST',
      url: path,
      headers: { authorization: `Bearer ${t.secret}`, 'content-type': 'text/plain' },
      payload: 'hello, agent',
    });
    expect(text.statusCode).toBe(202);
    expect((await finished(text.json().invocation_id)).output.body).toBe('hello, agent');
    const bytes = Buffer.from([0, 1, 2, 255]);
    const bin = await app.inject({
      method: 'POST',
      url: path,
      headers: { authorization: `Bearer ${t.secret}`, 'content-type': 'application/octet-stream' },
      payload: bytes,
    });
    expect(bin.statusCode).toBe(202);
    expect((await finished(bin.json().invocation_id)).output).toMatchObject({
      body: bytes.toString('base64'),
      body_encoding: 'base64',
    });
  });

  it('takes the sender’s own secret (Stripe endpoint secret, GitHub webhook secret)', async () => {
    const secret = `whsec_${Buffer.from('a stripe endpoint secret!').toString('base64')}`;
    const { body: t } = await call(
      app,
      {
        method: 'POST',
        url: `/v2/agents/${agentId}/triggers`,
        headers: user.headers,
        payload: { mode: 'stripe', secret },
      },
      201,
    );
    expect(t.secret).toBe(secret);
    const payload = eventBody('stripe');
    const res = await app.inject({
      method: 'POST',
      url: `/hooks/${t.id}`,
      headers: { 'content-type': 'application/json', ...(await signedHeaders('stripe', secret, payload)) },
      payload,
    });
    expect(res.statusCode).toBe(202);
    expect(res.json().delivery_id).toBe(JSON.parse(payload).id);
  });
});
