/**
 * Database statements and queued jobs in the trace (issue #41), checked in a real OTLP/HTTP
 * receiver (JSON) and in the in-process store:
 *  - an execute's SQL statements are CLIENT spans inside the request (on PGlite through the database
 *    layer, telemetry/db.ts; on PostgreSQL from the `pg` instrumentation), some under `execute_tool`,
 *    with the parameterised text only — no parameter value (the session id) in any of them;
 *  - an async invocation (`?async=true`, 202) is queued in a PRODUCER span `send deployments.invoke`
 *    of the request's trace; the job's CONSUMER span `process deployments.invoke` is its child and
 *    links to it, and the run (`invoke_agent`) is under the job span — in-process queue, or BullMQ
 *    when TEST_REDIS_URL is set.
 * Runs on PGlite and on PostgreSQL (TEST_DATABASE_URL).
 */
import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { telemetryRuntime } from '../../src/telemetry/sdk.js';
import { call, createUser, setupApp } from '../helpers/app.js';
import { execute, expectHttp, listen, subscribedFastTool } from '../helpers/exec.js';
import { createAgent, deployReady, HANDLERS, tarball, waitFor } from '../modules/deployments/fixtures.js';
import { attr, type OtlpSpan, startReceiver } from './receiver.js';

const receiver = await startReceiver();
const { spans } = receiver;
afterAll(() => receiver.close());

const { app, ctx } = await setupApp({
  OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  TRACES_STORE: 'on',
});
const base = await listen(app);

const hex = (n: number) => Array.from({ length: n }, () => Math.floor(Math.random() * 16).toString(16)).join('');

/** The exported spans of `traceId`, once one matches `until`. */
async function exported(traceId: string, until: (s: OtlpSpan) => boolean): Promise<OtlpSpan[]> {
  for (let i = 0; i < 100; i++) {
    await telemetryRuntime()?.flush();
    const got = spans.filter((s) => s.traceId === traceId);
    if (got.some(until)) return got;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no matching span of trace ${traceId} exported`);
}

/** True when `s` descends from the span `ancestorId` within `all`. */
function descends(all: OtlpSpan[], s: OtlpSpan, ancestorId: string): boolean {
  const byId = new Map(all.map((x) => [x.spanId, x]));
  let cur: OtlpSpan | undefined = s;
  for (let i = 0; cur && i < 64; i++) {
    if (cur.parentSpanId === ancestorId) return true;
    cur = cur.parentSpanId ? byId.get(cur.parentSpanId) : undefined;
  }
  return false;
}

const queryText = (s: OtlpSpan) => String(attr(s, 'db.query.text') ?? '');
// A statement span (the `pg` instrumentation also makes `pg-pool.connect` spans, without a text).
const isStatement = (s: OtlpSpan) => attr(s, 'db.system.name') === 'postgresql' && queryText(s) !== '';

describe('traces — database statements', () => {
  it('an execute’s statements are CLIENT spans under the request and execute_tool, without parameter values', async () => {
    const t = await subscribedFastTool(app, ctx, base, 'otel-db');
    try {
      const traceId = hex(32);
      const res = await execute(base, { ...t.user.headers, traceparent: `00-${traceId}-${hex(16)}-01` }, t.sid, {
        service: t.svc.name,
        tool: 'fast',
        arguments: {},
      });
      expect(res.status).toBe(200);
      const got = await exported(traceId, (s) => s.name === 'POST /v1/agents/:id/execute');
      const server = got.find((s) => s.name === 'POST /v1/agents/:id/execute') as OtlpSpan;
      const tool = got.find((s) => s.name === 'execute_tool fast') as OtlpSpan;
      const db = got.filter(isStatement);
      expect(db.length).toBeGreaterThan(1);
      for (const s of db) {
        expect(s.kind).toBe(3); // CLIENT
        expect(descends(got, s, server.spanId)).toBe(true);
        expect(queryText(s)).not.toContain(t.sid); // parameterised: the session id is a value
      }
      expect(db.some((s) => descends(got, s, tool.spanId))).toBe(true);
      if (ctx.database.engine === 'pglite') {
        const select = db.find((s) => attr(s, 'db.operation.name') === 'SELECT') as OtlpSpan;
        expect(select.name).toBe('SELECT');
        expect(queryText(select)).toMatch(/\$1/);
      }
      // The store answers them too, for the waterfall.
      const stored = await expectHttp(base, 'GET', `/v1/traces/${traceId}`, 200, { headers: t.user.headers });
      const storedDb = stored.body.spans.filter(
        (s: { attributes: Record<string, unknown> }) => s.attributes['db.query.text'],
      );
      expect(storedDb.length).toBeGreaterThanOrEqual(db.length); // a deferred write may end after the export was read
    } finally {
      await t.upstream.close();
    }
  });

  it('a statement outside any traced operation makes no span', async () => {
    const before = spans.length;
    await ctx.db.execute(sql`select 1 as untraced_probe`);
    await telemetryRuntime()?.flush();
    expect(spans.slice(before).some((s) => queryText(s).includes('untraced_probe'))).toBe(false);
  });
});

describe('traces — queued jobs', () => {
  it('an async invocation’s job span is a child of, and links to, the request that queued it', async () => {
    const u = await createUser(app);
    const agent = await createAgent(app, u);
    await deployReady(app, u.headers, agent.id, await tarball({ 'index.mjs': HANDLERS.echo }));
    const traceId = hex(32);
    const callerSpan = hex(16);
    const q = await expectHttp(base, 'POST', `/v2/agents/${agent.id}/invoke?async=true`, 202, {
      headers: { ...u.headers, traceparent: `00-${traceId}-${callerSpan}-01` },
      body: { input: [1] },
    });
    await waitFor(
      async () => {
        const { body } = await call(
          app,
          { method: 'GET', url: `/v2/agents/${agent.id}/executions/${q.body.id}`, headers: u.headers },
          200,
        );
        return ['succeeded', 'failed', 'timed_out'].includes(body.status) ? body : null;
      },
      60_000,
      'the queued invocation to finish',
    );
    const got = await exported(traceId, (s) => s.name.startsWith('invoke_agent '));
    const server = got.find((s) => s.name === 'POST /v2/agents/:id/invoke') as OtlpSpan;
    const send = got.find((s) => s.name === 'send deployments.invoke') as OtlpSpan;
    const job = got.find((s) => s.name === 'process deployments.invoke') as OtlpSpan;
    const run = got.find((s) => s.name.startsWith('invoke_agent ')) as OtlpSpan;
    expect(server.parentSpanId).toBe(callerSpan);
    expect(send.kind).toBe(4); // PRODUCER
    expect(send.parentSpanId).toBe(server.spanId);
    expect(attr(send, 'messaging.destination.name')).toBe('deployments.invoke');
    expect(attr(send, 'messaging.system')).toBe(ctx.jobs.kind);
    expect(job.kind).toBe(5); // CONSUMER
    expect(job.parentSpanId).toBe(send.spanId);
    expect(job.links).toEqual([expect.objectContaining({ traceId, spanId: send.spanId })]);
    expect(run.parentSpanId).toBe(job.spanId);

    // The store keeps the link and finds the trace by invocation id.
    const list = await expectHttp(base, 'GET', `/v1/traces?invocation_id=${q.body.id}`, 200, { headers: u.headers });
    expect(list.body.data.map((d: { trace_id: string }) => d.trace_id)).toEqual([traceId]);
    const one = await expectHttp(base, 'GET', `/v1/traces/${traceId}`, 200, { headers: u.headers });
    const storedJob = one.body.spans.find((s: { name: string }) => s.name === 'process deployments.invoke');
    expect(storedJob.links).toEqual([expect.objectContaining({ trace_id: traceId, span_id: send.spanId })]);
  }, 180_000);
});
