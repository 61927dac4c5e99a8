/**
 * Outbound webhooks against a flaky receiver on loopback: every event arrives (signature verified
 * with the `standardwebhooks` package), retries reuse the message id (the only duplicates, as
 * documented: at-least-once), the delivery log shows attempts with status and latency; a receiver
 * that never answers 2xx sends the message to the dead-letter list and disables the endpoint, and
 * a replay after it recovers delivers it.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { waitFor } from '../deployments/fixtures.js';

const { app, ctx } = await setupApp({ WEBHOOK_RETRY_BASE_MS: '50', WEBHOOK_MAX_AGE_MS: '4000' });

/** A receiver that fails the first `failures` attempts of each message (500, or a dropped connection every other time). */
async function receiver(failures: number | 'always') {
  const seen: Array<{ id: string; body: string; headers: http.IncomingHttpHeaders }> = [];
  const attempts = new Map<string, number>();
  const state = { failures };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const id = String(req.headers['webhook-id']);
      const n = (attempts.get(id) ?? 0) + 1;
      attempts.set(id, n);
      if (state.failures === 'always' || n <= state.failures) {
        if (n % 2 === 0) return req.socket.destroy();
        res.writeHead(500).end('try later');
        return;
      }
      seen.push({ id, body: Buffer.concat(chunks).toString(), headers: req.headers });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, seen, attempts, state };
}

function failedExecution(userId: string, n: number) {
  ctx.events.emit('execution.recorded', {
    executionId: `exe_test${n}`,
    sessionId: 'ses_x',
    userId,
    agentId: null,
    serviceId: 'svc_x',
    serviceName: 'svc',
    toolId: 'tool_x',
    toolName: 'tool',
    arguments: {},
    status: 'failed',
    httpStatus: 500,
    output: null,
    error: { code: 'upstream_error', message: 'boom' },
    durationMs: 12,
  });
}

describe('outbound webhooks', () => {
  it('delivers every event to a flaky receiver, signed, retrying with the same id', async () => {
    const user = await createUser(app);
    const rx = await receiver(2);
    const { body: ep } = await call(
      app,
      {
        method: 'POST',
        url: '/v2/webhooks',
        headers: user.headers,
        payload: { url: rx.url, events: ['execution.failed'] },
      },
      201,
    );
    expect(ep.secret).toMatch(/^whsec_/);
    for (let i = 0; i < 5; i++) failedExecution(user.userId, i);
    await waitFor(async () => rx.seen.length >= 5, 20_000, 'five deliveries');
    const wh = new Webhook(ep.secret);
    for (const s of rx.seen) {
      const event = wh.verify(s.body, {
        'webhook-id': s.id,
        'webhook-timestamp': String(s.headers['webhook-timestamp']),
        'webhook-signature': String(s.headers['webhook-signature']),
      }) as any;
      expect(event.type).toBe('execution.failed');
      expect(event.data.error).toEqual({ code: 'upstream_error', message: 'boom' });
    }
    // Nothing lost: five distinct message ids delivered; each was tried three times (two failures first).
    expect(new Set(rx.seen.map((s) => s.id)).size).toBe(5);
    for (const s of rx.seen) expect(rx.attempts.get(s.id)).toBe(3);
    const log = await waitFor(
      async () => {
        const { body } = await call(
          app,
          { method: 'GET', url: `/v2/webhooks/${ep.id}/messages`, headers: user.headers },
          200,
        );
        return body.data.every((m: any) => m.status === 'delivered') ? body.data : null;
      },
      5000,
      'log',
    );
    expect(log).toHaveLength(5);
    for (const m of log) {
      expect(m.attempts).toBe(3);
      expect(m.attempt_log.map((a: any) => a.status)).toEqual([500, null, 204]);
      expect(m.attempt_log[2].latency_ms).toBeGreaterThanOrEqual(0);
    }
    // Another account sees none of it.
    const other = await createUser(app);
    await call(app, { method: 'GET', url: `/v2/webhooks/${ep.id}/messages`, headers: other.headers }, 404);
  }, 40_000);

  it('a receiver down for the whole retry window: dead letter, endpoint disabled with an event to the owner, replay delivers', async () => {
    const user = await createUser(app);
    const down = await receiver('always');
    const watcher = await receiver(0);
    const { body: ep } = await call(
      app,
      { method: 'POST', url: '/v2/webhooks', headers: user.headers, payload: { url: down.url, events: ['*'] } },
      201,
    );
    await call(
      app,
      {
        method: 'POST',
        url: '/v2/webhooks',
        headers: user.headers,
        payload: { url: watcher.url, events: ['webhook.endpoint_disabled'] },
      },
      201,
    );
    failedExecution(user.userId, 99);
    const dead = await waitFor(
      async () => {
        const { body } = await call(
          app,
          { method: 'GET', url: `/v2/webhooks/${ep.id}/messages?status=failed`, headers: user.headers },
          200,
        );
        return body.data[0];
      },
      20_000,
      'dead letter',
    );
    expect(dead.attempts).toBeGreaterThan(3);
    const disabled = await call(app, { method: 'GET', url: `/v2/webhooks/${ep.id}`, headers: user.headers }, 200);
    expect(disabled.body).toMatchObject({ enabled: false });
    expect(disabled.body.disabled_reason).toContain('failed');
    await waitFor(async () => watcher.seen.length >= 1, 10_000, 'the owner told');
    expect(JSON.parse(watcher.seen[0].body)).toMatchObject({
      type: 'webhook.endpoint_disabled',
      data: { endpoint_id: ep.id },
    });
    // Replay needs the endpoint enabled again; then it is delivered once the receiver is back.
    await call(
      app,
      { method: 'POST', url: `/v2/webhooks/${ep.id}/messages/${dead.id}/replay`, headers: user.headers },
      409,
    );
    await call(
      app,
      { method: 'PATCH', url: `/v2/webhooks/${ep.id}`, headers: user.headers, payload: { enabled: true } },
      200,
    );
    down.state.failures = 0;
    await call(
      app,
      { method: 'POST', url: `/v2/webhooks/${ep.id}/messages/${dead.id}/replay`, headers: user.headers },
      200,
    );
    await waitFor(async () => down.seen.some((s) => s.id === dead.id), 10_000, 'replayed delivery');
  }, 40_000);

  it('refuses private addresses when loopback is not allowed: IP literals at once, host names at delivery (SSRF guard)', async () => {
    const guarded = await setupApp({
      ALLOW_LOOPBACK_UPSTREAMS: 'off',
      WEBHOOK_RETRY_BASE_MS: '50',
      WEBHOOK_MAX_AGE_MS: '1000',
    });
    const rx = await receiver(0);
    const user = await createUser(guarded.app);
    const create = (url: string, status: number) =>
      call(
        guarded.app,
        { method: 'POST', url: '/v2/webhooks', headers: user.headers, payload: { url, events: ['execution.failed'] } },
        status,
      );
    // A literal the guard refuses is refused when the endpoint is made, in any spelling.
    for (const literal of [
      rx.url,
      'http://169.254.169.254/latest/meta-data',
      'http://10.0.0.5/hook',
      'http://[::1]:8080/',
      'http://0x7f000001/',
    ]) {
      const { body } = await create(literal, 400);
      expect(body.errors[0]).toMatchObject({ pointer: '/url', message: expect.stringMatching(/address/) });
    }
    // A host name passes (DNS can change), and is checked at every delivery.
    const { body: ep } = await create(rx.url.replace('127.0.0.1', 'localhost'), 201);
    await call(
      guarded.app,
      { method: 'PATCH', url: `/v2/webhooks/${ep.id}`, headers: user.headers, payload: { url: 'http://192.168.1.1/' } },
      400,
    );
    guarded.ctx.events.emit('execution.recorded', {
      executionId: 'exe_ssrf',
      sessionId: 'ses_x',
      userId: user.userId,
      agentId: null,
      serviceId: 'svc_x',
      serviceName: 'svc',
      toolId: 'tool_x',
      toolName: 'tool',
      arguments: {},
      status: 'failed',
      httpStatus: null,
      output: null,
      error: { code: 'x', message: 'y' },
      durationMs: 1,
    });
    const m = await waitFor(
      async () => {
        const { body } = await call(
          guarded.app,
          { method: 'GET', url: `/v2/webhooks/${ep.id}/messages`, headers: user.headers },
          200,
        );
        return body.data[0]?.attempt_log.length ? body.data[0] : null;
      },
      10_000,
      'an attempt',
    );
    expect(m.attempt_log[0].error).toMatch(/^upstream_blocked/);
    expect(rx.attempts.size).toBe(0);
  }, 30_000);
});
