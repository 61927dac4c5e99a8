/**
 * Traces end to end (issue #41): a real OTLP/HTTP receiver (JSON encoding, `http/json`) gets the
 * trace of an execute through REST and through MCP, each continuing the caller's `traceparent`:
 * one trace id from the caller through the HTTP SERVER span, `execute_tool {tool}` and the upstream
 * CLIENT span to the fake upstream, which saw the same trace id in `traceparent` (HTTP tools) and in
 * `params._meta` (MCP upstreams). The in-process store answers `GET /v1/traces/:id` for the owner
 * only. Runs on PGlite and on PostgreSQL (TEST_DATABASE_URL).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { telemetryRuntime } from '../../src/telemetry/sdk.js';
import { createUser, setupApp } from '../helpers/app.js';
import { execute, expectHttp, httpCall, listen, subscribedFastTool } from '../helpers/exec.js';
import { connectMcp } from '../helpers/mcp.js';
import { startMcpServer } from '../helpers/upstreams.js';
import { attr, type OtlpSpan, startReceiver } from './receiver.js';

const hex = (n: number) => Array.from({ length: n }, () => Math.floor(Math.random() * 16).toString(16)).join('');

const receiver = await startReceiver();
const { app, ctx } = await setupApp({
  OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  OTEL_METRIC_EXPORT_INTERVAL: '60000',
  TRACES_STORE: 'on',
});
const base = await listen(app);
afterAll(() => receiver.close());

async function exported(traceId: string, name: RegExp): Promise<OtlpSpan[]> {
  for (let i = 0; i < 50; i++) {
    await telemetryRuntime()?.flush();
    const got = receiver.spans.filter((s) => s.traceId === traceId);
    if (got.some((s) => name.test(s.name))) return got;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no span ${name} of trace ${traceId} exported`);
}

describe('traces — REST execute', () => {
  it('continues the caller trace through execute_tool to the upstream, and the owner reads it back', async () => {
    const t = await subscribedFastTool(app, ctx, base, 'otel-rest');
    try {
      const traceId = hex(32);
      const callerSpan = hex(16);
      const res = await execute(base, { ...t.user.headers, traceparent: `00-${traceId}-${callerSpan}-01` }, t.sid, {
        service: t.svc.name,
        tool: 'fast',
        arguments: {},
      });
      expect(res.status).toBe(200);
      const spans = await exported(traceId, /^GET$/);
      const server = spans.find((s) => s.name === 'POST /v1/agents/:id/execute') as OtlpSpan;
      const tool = spans.find((s) => s.name === 'execute_tool fast') as OtlpSpan;
      const client = spans.find((s) => s.name === 'GET') as OtlpSpan;
      expect(server.parentSpanId).toBe(callerSpan);
      expect(server.kind).toBe(2); // SERVER
      expect(tool.parentSpanId).toBe(server.spanId);
      expect(attr(tool, 'gen_ai.operation.name')).toBe('execute_tool');
      expect(attr(tool, 'gen_ai.tool.name')).toBe('fast');
      expect(attr(tool, 'gen_ai.tool.type')).toBe('extension');
      expect(attr(tool, 'gen_ai.tool.call.id')).toBe(res.body.execution_id);
      expect(attr(tool, 'gen_ai.tool.call.arguments')).toBeUndefined(); // not recorded by default
      expect(client.parentSpanId).toBe(tool.spanId);
      expect(client.kind).toBe(3); // CLIENT
      const seen = t.upstream.seenAt('/fast').at(-1);
      expect(seen?.headers.traceparent).toBe(`00-${traceId}-${client.spanId}-01`);

      // The in-process store: the owner reads the trace, by id and by execution; another account gets 404.
      const got = await expectHttp(base, 'GET', `/v1/traces/${traceId}`, 200, { headers: t.user.headers });
      const names = got.body.spans.map((s: { name: string }) => s.name);
      expect(names).toEqual(expect.arrayContaining(['POST /v1/agents/:id/execute', 'execute_tool fast', 'GET']));
      const byExe = await expectHttp(base, 'GET', `/v1/traces?execution_id=${res.body.execution_id}`, 200, {
        headers: t.user.headers,
      });
      expect(byExe.body.data[0].trace_id).toBe(traceId);
      const other = await createUser(app);
      const denied = await httpCall(base, 'GET', `/v1/traces/${traceId}`, { headers: other.headers });
      expect(denied.status).toBe(404);
      expect(denied.body.code).toBe('not_found');
      const none = await httpCall(base, 'GET', `/v1/traces?execution_id=${res.body.execution_id}`, {
        headers: other.headers,
      });
      expect(none.body.data).toEqual([]);
      expect((await httpCall(base, 'GET', '/v1/traces/not-hex', { headers: t.user.headers })).status).toBe(400);
    } finally {
      await t.upstream.close();
    }
  });
});

describe('traces — MCP', () => {
  it('continues a traceparent from the MCP request _meta and sends it in the upstream MCP _meta', async () => {
    const mcp = await startMcpServer();
    try {
      const owner = await createUser(app);
      const reg = await expectHttp(base, 'POST', '/owner/services', 201, {
        headers: owner.headers,
        body: { mcp_url: mcp.mcpUrl, description: 'mcp tools for traces' },
      });
      const conn = await connectMcp(base, owner.headers);
      try {
        const traceId = hex(32);
        const callerSpan = hex(16);
        const result = await conn.client.callTool({
          name: 'execute_tool',
          arguments: { service: reg.body.name, tool: 'add', arguments: { a: 2, b: 3 } },
          _meta: { traceparent: `00-${traceId}-${callerSpan}-01` },
        });
        expect(result.isError).toBeFalsy();
        const spans = await exported(traceId, /^execute_tool add$/);
        const mcpServer = spans.find((s) => s.name === 'tools/call execute_tool') as OtlpSpan;
        const httpServer = spans.find((s) => s.name.startsWith('POST /mcp')) as OtlpSpan;
        const tool = spans.find((s) => s.name === 'execute_tool add') as OtlpSpan;
        const mcpClient = spans.find((s) => s.name === 'tools/call add') as OtlpSpan;
        expect(httpServer.parentSpanId).toBe(callerSpan);
        expect(mcpServer.parentSpanId).toBe(httpServer.spanId);
        expect(attr(mcpServer, 'mcp.method.name')).toBe('tools/call');
        expect(tool.parentSpanId).toBe(mcpServer.spanId);
        expect(mcpClient.parentSpanId).toBe(tool.spanId);
        // The upstream MCP server got the context in params._meta of its tools/call.
        const call = mcp.seen
          .map((s) => (s.body ? JSON.parse(s.body) : null))
          .find((b) => b?.method === 'tools/call' && b.params?.name === 'add');
        expect(call.params._meta.traceparent).toBe(`00-${traceId}-${mcpClient.spanId}-01`);
        // Each HTTP request of the MCP exchange carries the header too, under the client span.
        const posted = mcp.seen.filter(
          (s) => s.method === 'POST' && String(s.headers.traceparent ?? '').includes(traceId),
        );
        expect(posted.length).toBeGreaterThan(0);
      } finally {
        await conn.close();
      }
    } finally {
      await mcp.close();
    }
  });
});
