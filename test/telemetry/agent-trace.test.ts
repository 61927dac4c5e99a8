/**
 * A deployed agent's run traced end to end (issue #41): `POST /v2/agents/:id/invoke` with a
 * caller's `traceparent` → HTTP SERVER span → `invoke_agent {agent}` → `context.tools.execute` (the
 * handler's call, answered by the broker across the sandbox boundary) → `execute_tool {tool}` →
 * upstream CLIENT span, one trace id, the upstream saw it in `traceparent`; the handler's `console`
 * lines are `log` events of `invoke_agent`, and the handler got the run's `traceparent` in its
 * context. Checked in the OTLP export (a real receiver, JSON) and in the store
 * (`GET /v1/traces?invocation_id=`). Runs on PGlite and on PostgreSQL (TEST_DATABASE_URL).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { telemetryRuntime } from '../../src/telemetry/sdk.js';
import { call, createUser, setupApp } from '../helpers/app.js';
import { expectHttp, listen } from '../helpers/exec.js';
import { startToolUpstream } from '../helpers/tool-upstream.js';
import { deployedToolAgent } from '../modules/deployments/fixtures.js';
import { type OtlpSpan, startReceiver } from './receiver.js';

const HANDLER = `
export default async function (input, context) {
  console.log('calling the tool');
  const r = await context.tools.execute(input.service, 'get_item', { id: '7' });
  return { status: r.status, traceparent: context.traceparent ?? null };
}
`;

const receiver = await startReceiver();
const { spans } = receiver;
afterAll(() => receiver.close());

const { app } = await setupApp({
  OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  TRACES_STORE: 'on',
});
const base = await listen(app);
const upstream = await startToolUpstream();
afterAll(() => upstream.close());

const hex = (n: number) => Array.from({ length: n }, () => Math.floor(Math.random() * 16).toString(16)).join('');

describe('traces — deployed agent', () => {
  it('one trace from the invoking request through the sandboxed handler’s tool call to the upstream', async () => {
    const u = await createUser(app);
    const { body: svc } = await call(
      app,
      {
        method: 'POST',
        url: '/owner/services',
        headers: u.headers,
        payload: {
          name: `otel-agent-${Date.now().toString(36)}`,
          description: 'items',
          base_url: upstream.url,
          tools: [
            {
              name: 'get_item',
              description: 'Get an item',
              method: 'GET',
              path: '/items/{id}',
              input_schema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
            },
          ],
        },
      },
      201,
    );
    const agent = await deployedToolAgent(app, u, svc.name, HANDLER);

    const traceId = hex(32);
    const callerSpan = hex(16);
    const { body: inv } = await expectHttp(base, 'POST', `/v2/agents/${agent.id}/invoke`, 200, {
      headers: { ...u.headers, traceparent: `00-${traceId}-${callerSpan}-01` },
      body: { input: { service: svc.name } },
    });
    expect(inv.error ?? null).toBeNull();
    expect(inv.status).toBe('succeeded');
    expect(inv.output.status).toBe('succeeded');

    let got: OtlpSpan[] = [];
    for (let i = 0; i < 50 && !got.some((s) => s.name === 'POST /v2/agents/:id/invoke'); i++) {
      await telemetryRuntime()?.flush();
      got = spans.filter((s) => s.traceId === traceId);
      await new Promise((r) => setTimeout(r, 50));
    }
    const by = (name: string) => got.find((s) => s.name === name) as OtlpSpan;
    const server = by('POST /v2/agents/:id/invoke');
    const run = by(`invoke_agent ${agent.id}`);
    const brokered = by('context.tools.execute');
    const tool = by('execute_tool get_item');
    const client = by('GET');
    expect(server.parentSpanId).toBe(callerSpan);
    expect(run.parentSpanId).toBe(server.spanId);
    expect(brokered.parentSpanId).toBe(run.spanId);
    expect(tool.parentSpanId).toBe(brokered.spanId);
    expect(client.parentSpanId).toBe(tool.spanId);
    expect(upstream.seenAt('/items/7').at(-1)?.headers.traceparent).toBe(`00-${traceId}-${client.spanId}-01`);
    // The handler saw the run's context; its console line is an event of the invoke_agent span.
    expect(inv.output.traceparent).toBe(`00-${traceId}-${run.spanId}-01`);
    const logs = (run.events ?? []).filter((e) => e.name === 'log');
    expect(
      logs.some((e) => e.attributes.some((a) => a.key === 'log.message' && a.value.stringValue === 'calling the tool')),
    ).toBe(true);

    // The store: the owner finds the trace by invocation id; the waterfall holds the same spans.
    const list = await expectHttp(base, 'GET', `/v1/traces?invocation_id=${inv.id}`, 200, { headers: u.headers });
    expect(list.body.data).toEqual([expect.objectContaining({ trace_id: traceId, error: false })]);
    const one = await expectHttp(base, 'GET', `/v1/traces/${traceId}`, 200, { headers: u.headers });
    expect(one.body.spans.map((s: { name: string }) => s.name)).toEqual(
      expect.arrayContaining([`invoke_agent ${agent.id}`, 'context.tools.execute', 'execute_tool get_item', 'GET']),
    );
  }, 180_000);
});
