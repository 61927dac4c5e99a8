/**
 * Every outbound event type reaches an endpoint subscribed to it, signed per Standard Webhooks
 * (verified with the `standardwebhooks` package): invocation.completed / invocation.failed and
 * deployment.activated / deployment.failed from real deployments and invocations in the sandbox;
 * quota.exhausted from real refused quota counts (once per window, however many refusals, also
 * from a second instance on PostgreSQL); connection.expired and approval.requested from their
 * platform events on the hub. An endpoint not subscribed to a type
 * receives none of it.
 */
import { describe, expect, it } from 'vitest';
import { subscriptions } from '../../../src/db/schema/index.js';
import { newId } from '../../../src/http/ids.js';
import { consumeQuota } from '../../../src/modules/subscriptions/quota.js';
import { call, createUser, setupApp, type TestUser } from '../../helpers/app.js';
import { createAgent, deployReady, HANDLERS, tarball, waitFor } from '../deployments/fixtures.js';
import { ofType, subscribed as subscribedOn } from './receiver.js';

const { app, ctx } = await setupApp({ WEBHOOK_RETRY_BASE_MS: '50', QUOTA_FREE_DAY: '3' });

/** A receiver subscribed to `events` for `user` on this file's app. */
const subscribed = (user: TestUser, events: string[]) => subscribedOn(app, user, events);

describe('outbound webhook events', () => {
  it('deployment.activated / deployment.failed and invocation.completed / invocation.failed, signed', async () => {
    const user = await createUser(app);
    const rx = await subscribed(user, [
      'deployment.activated',
      'deployment.failed',
      'invocation.completed',
      'invocation.failed',
    ]);
    const onlyFailures = await subscribed(user, ['invocation.failed']);
    const agent = await createAgent(app, user);
    const good = await deployReady(app, user.headers, agent.id, await tarball({ 'index.mjs': HANDLERS.echo }));
    expect(good.status).toBe('active');
    const broken = await deployReady(
      app,
      user.headers,
      agent.id,
      await tarball({ 'index.mjs': 'export default async function ( {\n' }),
    );
    expect(broken.status).toBe('failed');
    // The good version stays active: invoke it once successfully, then make it throw.
    const { body: ok } = await call(
      app,
      { method: 'POST', url: `/v2/agents/${agent.id}/invoke`, headers: user.headers, payload: { input: { n: 1 } } },
      200,
    );
    expect(ok.trigger).toBe('api');
    const thrower = await deployReady(app, user.headers, agent.id, await tarball({ 'index.mjs': HANDLERS.throws }));
    const { body: failed } = await call(
      app,
      { method: 'POST', url: `/v2/agents/${agent.id}/invoke`, headers: user.headers, payload: {} },
      200,
    );
    expect(failed.status).toBe('failed');
    await waitFor(async () => rx.got.length >= 5, 15_000, 'five events');
    expect(rx.bad).toEqual([]);
    expect(ofType(rx, 'deployment.activated').map((e) => e.data.deployment_id)).toEqual([good.id, thrower.id]);
    expect(ofType(rx, 'deployment.activated')[0].data).toMatchObject({ agent_id: agent.id, version: 1 });
    expect(ofType(rx, 'deployment.failed')).toHaveLength(1);
    expect(ofType(rx, 'deployment.failed')[0].data).toMatchObject({ deployment_id: broken.id, status: 'failed' });
    expect(ofType(rx, 'deployment.failed')[0].data.failure_reason).toMatch(/smoke load failed/);
    expect(ofType(rx, 'invocation.completed').map((e) => e.data)).toEqual([
      expect.objectContaining({ invocation_id: ok.id, agent_id: agent.id, status: 'succeeded', trigger: 'api' }),
    ]);
    expect(ofType(rx, 'invocation.failed').map((e) => e.data)).toEqual([
      expect.objectContaining({ invocation_id: failed.id, status: 'failed', error: expect.objectContaining({}) }),
    ]);
    await waitFor(async () => onlyFailures.got.length >= 1, 10_000, 'the failure');
    expect(onlyFailures.got.map((g) => g.type)).toEqual(['invocation.failed']);
    // The invocation list shows the trigger too.
    const { body: list } = await call(
      app,
      { method: 'GET', url: `/v2/agents/${agent.id}/executions`, headers: user.headers },
      200,
    );
    expect(list.data.map((i: any) => i.trigger)).toEqual(['api', 'api']);
    // Another account's endpoint sees none of it.
    const other = await createUser(app);
    const stranger = await subscribed(other, ['*']);
    await call(app, { method: 'POST', url: `/v2/agents/${agent.id}/invoke`, headers: user.headers, payload: {} }, 200);
    await waitFor(async () => ofType(rx, 'invocation.failed').length >= 2, 10_000, 'second failure');
    expect(stranger.got).toEqual([]);
  }, 90_000);

  it('connection.expired, approval.requested and quota.exhausted (once per window)', async () => {
    const user = await createUser(app);
    const rx = await subscribed(user, ['connection.expired', 'approval.requested', 'quota.exhausted']);
    ctx.events.emit('connection.expired', {
      connectionId: 'con_1',
      accountId: user.userId,
      serviceId: 'svc_1',
      status: 'expired',
      reason: 'invalid_grant',
    });
    ctx.events.emit('approval.requested', {
      approvalId: 'apr_1',
      accountId: user.userId,
      agentId: null,
      serviceName: 'github',
      toolName: 'create_issue',
      expiresAt: '2030-01-01T00:00:00.000Z',
      url: 'http://127.0.0.1/console/approvals/apr_1',
    });
    // The real counting path: a free plan of 3 calls a day, 10 calls at once, then 5 more.
    const serviceId = newId('svc');
    const subscriptionId = newId('sub');
    await ctx.db.insert(subscriptions).values({ id: subscriptionId, userId: user.userId, serviceId, plan: 'free' });
    const burst = await Promise.allSettled(Array.from({ length: 10 }, () => consumeQuota(ctx, user.userId, serviceId)));
    expect(burst.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
    for (let i = 0; i < 5; i++) await expect(consumeQuota(ctx, user.userId, serviceId)).rejects.toThrow(/quota/);
    await waitFor(async () => ofType(rx, 'quota.exhausted').length >= 1, 10_000, 'exhausted');
    const day = ofType(rx, 'quota.exhausted')[0].data;
    expect(day).toMatchObject({
      subscription_id: subscriptionId,
      service_id: serviceId,
      plan: 'free',
      window: 'day',
      limit: 3,
    });
    const refused = {
      accountId: user.userId,
      serviceId,
      subscriptionId,
      plan: 'free',
      window: 'day' as const,
      limit: 3,
      resetsAt: day.resets_at as string,
    };
    if (process.env.TEST_DATABASE_URL) {
      // A second instance on the same database refuses in the same window: no second announcement.
      const second = await setupApp();
      second.ctx.events.emit('quota.refused', refused);
      await new Promise((r) => setTimeout(r, 300));
    }
    ctx.events.emit('quota.refused', { ...refused, window: 'month', resetsAt: '2030-02-01T00:00:00.000Z' });
    await waitFor(async () => rx.got.length >= 4, 10_000, 'four events');
    await new Promise((r) => setTimeout(r, 300));
    expect(rx.bad).toEqual([]);
    expect(ofType(rx, 'connection.expired').map((e) => e.data)).toEqual([
      { connection_id: 'con_1', service_id: 'svc_1', status: 'expired', reason: 'invalid_grant' },
    ]);
    expect(ofType(rx, 'approval.requested').map((e) => e.data)).toEqual([
      {
        approval_id: 'apr_1',
        agent_id: null,
        service: 'github',
        tool: 'create_issue',
        expires_at: '2030-01-01T00:00:00.000Z',
        url: 'http://127.0.0.1/console/approvals/apr_1',
      },
    ]);
    expect(ofType(rx, 'quota.exhausted').map((e) => [e.data.window, e.data.resets_at])).toEqual([
      ['day', day.resets_at],
      ['month', '2030-02-01T00:00:00.000Z'],
    ]);
  }, 30_000);
});
