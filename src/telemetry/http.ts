/**
 * One SERVER span per HTTP request (HTTP semantic conventions: name `{method} {route}`,
 * `http.request.method`, `http.route`, `url.path`, `http.response.status_code`, `error.type` for
 * 5xx), through Fastify hooks rather than the `http` module's instrumentation so that injected
 * requests (tests, in-process calls) are traced the same way. The parent is the request's W3C
 * `traceparent` header, else — for a JSON-RPC request to the MCP endpoint — the `traceparent` in its
 * `params._meta` (MCP semantic conventions, "Context propagation"); such a request also gets an
 * MCP SERVER span `{mcp.method.name} {target}` and the `mcp.server.operation.duration` metric.
 * The span carries `platform.account_id` once the request is authenticated, which makes the trace
 * visible to that account (`GET /v1/traces/:id`).
 *
 * The span starts (with the request's arrival time) in `preHandler`, after authentication and body
 * parsing, and is entered there: a parsed body's stream events run in the connection's async
 * context, so a context entered in `onRequest` would not reach the handler. A request answered
 * before `preHandler` (401, 404, a bad body) gets its span in `onResponse`.
 */
import { context, ROOT_CONTEXT, SpanStatusCode, trace, type Context, type Span } from '@opentelemetry/api';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { accountOf, type Principal } from '../http/auth.js';
import { ATTR, GEN_AI, PLATFORM } from './names.js';
import { recordMcpServerDuration } from './spans.js';
import { contextFrom, SpanKind, startSpan, tracingOn } from './trace.js';

interface RequestSpans {
  started: number;
  span?: Span;
  mcp?: { span: Span; method: string; target: string };
  ctx?: Context;
}

const state = new WeakMap<FastifyRequest, RequestSpans>();

/** Routes never traced: health probes, metrics scrapes, static console assets. */
const UNTRACED = /^\/(?:health|ready|live|metrics|console\/assets)(?:\/|$)/;

/** The JSON-RPC method, target and `_meta` of an MCP request body, if it is one. */
function mcpRequest(req: FastifyRequest): { method: string; target: string; meta: unknown } | undefined {
  if (req.method !== 'POST' || !req.url.startsWith('/mcp')) return undefined;
  const b = req.body as { jsonrpc?: unknown; method?: unknown; params?: { name?: unknown; _meta?: unknown } } | null;
  if (!b || typeof b !== 'object' || b.jsonrpc !== '2.0' || typeof b.method !== 'string') return undefined;
  const target = typeof b.params?.name === 'string' ? b.params.name : '';
  return { method: b.method, target, meta: b.params?._meta };
}

function begin(req: FastifyRequest, s: RequestSpans): void {
  const route = req.routeOptions.url;
  const mcp = mcpRequest(req);
  let parent = contextFrom(req.headers, ROOT_CONTEXT);
  if (mcp && !trace.getSpanContext(parent)) parent = contextFrom(mcp.meta, ROOT_CONTEXT);
  const span = startSpan(route ? `${req.method} ${route}` : req.method, {
    kind: SpanKind.SERVER,
    parent,
    startTime: s.started,
    attributes: {
      [ATTR.httpMethod]: req.method,
      [ATTR.urlPath]: req.url.split('?')[0] as string,
      ...(route ? { [ATTR.httpRoute]: route } : {}),
    },
  }) as Span;
  s.span = span;
  s.ctx = trace.setSpan(parent, span);
  if (mcp) {
    const name = mcp.target ? `${mcp.method} ${mcp.target}` : mcp.method;
    const attributes: Record<string, string> = { [ATTR.mcpMethod]: mcp.method };
    if (mcp.method === 'tools/call' && mcp.target) attributes[GEN_AI.toolName] = mcp.target;
    const ms = startSpan(name, { kind: SpanKind.SERVER, parent: s.ctx, attributes }) as Span;
    s.mcp = { span: ms, method: mcp.method, target: mcp.target };
    s.ctx = trace.setSpan(s.ctx, ms);
  }
}

function finish(req: FastifyRequest, reply: FastifyReply, s: RequestSpans): void {
  const principal = (req as { principal?: Principal | null }).principal;
  const account = principal ? accountOf(principal) : undefined;
  const failed = reply.statusCode >= 500;
  if (s.mcp) {
    if (account) s.mcp.span.setAttribute(PLATFORM.accountId, account);
    s.mcp.span.end();
    recordMcpServerDuration(s.mcp.method, s.mcp.target, (performance.now() - s.started) / 1000);
  }
  const span = s.span as Span;
  if (account) span.setAttribute(PLATFORM.accountId, account);
  span.setAttribute(ATTR.httpStatus, reply.statusCode);
  if (failed) {
    span.setAttribute(ATTR.errorType, String(reply.statusCode));
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}

/** Register the request-span hooks on `app`; each is a plain `done()` while tracing is off. */
export function registerHttpTracing(app: FastifyInstance): void {
  app.addHook('onRequest', (req, _reply, done) => {
    if (tracingOn() && !UNTRACED.test(req.url)) state.set(req, { started: performance.now() });
    done();
  });
  app.addHook('preHandler', (req, _reply, done) => {
    const s = state.get(req);
    if (!s) return done();
    begin(req, s);
    context.with(s.ctx as Context, done);
  });
  app.addHook('onResponse', (req, reply, done) => {
    const s = state.get(req);
    if (s) {
      if (!s.span) begin(req, s);
      finish(req, reply, s);
      state.delete(req);
    }
    done();
  });
}
