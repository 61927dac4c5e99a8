/**
 * Executing a tool in a session (`POST /v1/agents/:id/execute`, issue 4 §2).
 *
 * Hot path, in order (each step's failure answers before anything later happens):
 *  1. the session (visible to the actor, 404; active, 409 `session_closed`);
 *  2. service + tool through the registry (`resolveExecutableTool`, decrypted upstream credential
 *     and signing secret); visibility: own services in any state, other services only when
 *     published (else 404);
 *  3. `arguments` against the tool's `input_schema` (cached ajv validator) → 400 with pointers;
 *     nothing is sent upstream (on failure, an unsubscribed caller still gets the 403 of step 4);
 *  4. an agent must be subscribed to the service itself (`isAgentSubscribed`, agent tool
 *     subscriptions, also for its owner's services); for services of other accounts the account's
 *     subscription is checked and its quota counted in ONE conditional UPDATE (`consumeQuota`)
 *     → 403 `not_subscribed` / 429 `quota_exceeded`. Owners call their own services unmetered;
 *  5. the upstream call (guarded HTTP client or MCP `tools/call`) with the upstream credential
 *     and the platform's signature headers; for `oauth2` services the credential is the caller's
 *     own connection (`withCallerGrant`, 409 `connection_required` without one, before any quota
 *     is used), and an upstream 401 gets one refresh and one retry (`grantAfterUnauthorized`);
 *  6. one statement records the execution, the session counters and the usage counters; the
 *     automatic memory is handed to the memory module (which works off the request path).
 */
import type { AppContext } from '../../context.js';
import { AppError, type FieldError } from '../../http/errors.js';
import { newId } from '../../http/ids.js';
import { upstreamFetch } from '../../upstream/http.js';
import { mcpCallTool } from '../../upstream/mcp.js';
import { isAgentSubscribed } from '../agents/service.js';
import { grantAfterUnauthorized, withCallerGrant } from '../connections/grant.js';
import { rememberExecution } from '../memory/service.js';
import { resolveExecutableTool, type ExecutableTool } from '../registry/service.js';
import { consumeQuota, hasActiveSubscription, quotaHeaders, type QuotaState } from '../subscriptions/service.js';
import { sessionState, type SessionActor } from './service.js';
import { HEADER_REQUEST_ID, HEADER_SIGNATURE, HEADER_USER, signRequest, userPseudonym } from './signing.js';
import { recordExecution, type ExecutionRecord } from './usage.js';
import { argumentErrors, validatorFor } from './validation.js';

/** Body of `POST /v1/agents/:id/execute`. */
export interface ExecuteInput {
  service: string;
  tool: string;
  arguments?: Record<string, unknown>;
  timeout_ms?: number;
}

/** The 200 answer. `http_status` only for HTTP tools; `error` only when `status` is `failed`. */
export interface ExecuteResult {
  execution_id: string;
  status: 'succeeded' | 'failed';
  http_status?: number;
  output: unknown;
  error?: { code: string; message: string };
  duration_ms: number;
}

/** What the route sends: the body plus the `X-Quota-*` headers (empty when no quota applies). */
export interface ExecuteAnswer {
  result: ExecuteResult;
  headers: Record<string, string>;
}

/** Outcome of one upstream call, before recording. */
interface CallOutcome {
  status: 'succeeded' | 'failed';
  httpStatus: number | null;
  output: unknown;
  error: { code: string; message: string } | null;
  durationMs: number;
  /** Set when the platform could not do its job (502/504): recorded, then thrown. */
  failure?: AppError;
}

const BODYLESS = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS']);
/** Headers an argument may not set: framing, hop-by-hop, and the platform's own. */
const RESERVED_HEADER = /^(?:host|content-length|content-type|transfer-encoding|connection|keep-alive|te|trailer|upgrade|expect|proxy-.*|x-agent-platform-.*)$/;

/**
 * Run one tool execution for `actor` in session `sessionId`.
 * @throws AppError not_found (session, service or tool), session_closed, validation_failed,
 *         not_subscribed, quota_exceeded, upstream_blocked / upstream_error (502),
 *         upstream_timeout (504) — the last three after recording, with `execution_id` in the problem
 */
export async function executeTool(ctx: AppContext, actor: SessionActor, sessionId: string, input: ExecuteInput): Promise<ExecuteAnswer> {
  // Independent lookups: run them together (parallel on PostgreSQL, one event-loop turn less on PGlite).
  const [session, resolved] = await Promise.all([sessionState(ctx, actor, sessionId), resolveExecutableTool(ctx, input.service, input.tool)]);
  if (session.status !== 'active') throw new AppError('session_closed', 'The session is closed; create a new session to execute tools');

  const own = resolved !== null && resolved.service.ownerId === actor.accountId;
  if (!resolved || (!own && resolved.service.status !== 'published')) {
    throw new AppError('not_found', resolved ? 'Service not found' : `Service "${input.service}" or its tool "${input.tool}" not found`);
  }
  const { service, tool } = resolved;

  const args = input.arguments ?? {};
  const validate = validatorFor(tool.id, tool.inputSchema);
  if (!validate(args)) {
    const errors = argumentErrors(validate.errors);
    await assertSubscribed(ctx, actor, service.id, own);
    throw invalidArguments(tool.name, errors);
  }

  if (actor.agentId && !(await isAgentSubscribed(ctx, actor.agentId, service.id))) throw agentNotSubscribed(service.name);
  // Connected accounts hook (docs/connections.md): oauth2 services get the caller's own token as
  // their credential; no usable connection → 409 (after the subscription's 403, before any quota).
  const grant = await withCallerGrant(ctx, actor, resolved).catch(async (err: unknown) => {
    await assertSubscribed(ctx, actor, service.id, own);
    throw err;
  });
  // Built before counting, so a tool whose path cannot be filled is refused without using quota.
  const httpRequest = service.source === 'mcp' ? null : buildHttpRequest(grant.tool, args);
  const quota: QuotaState | null = own ? null : await consumeQuota(ctx, actor.accountId, service.id);
  const headers = quota ? quotaHeaders(quota) : {};

  const executionId = newId('exe');
  const timeoutMs = Math.min(input.timeout_ms ?? ctx.config.upstream.timeoutMs, ctx.config.upstream.maxTimeoutMs);
  let outcome = httpRequest ? await callHttp(ctx, grant.tool, httpRequest, actor, executionId, timeoutMs) : await callMcp(ctx, grant.tool, actor, executionId, args, timeoutMs);
  // An upstream 401 on a connection's token: one refresh, one retry (HTTP tools); a refused
  // refresh (409 connection_required) is recorded like any failed call.
  const first = outcome;
  const retry = httpRequest && (await grantAfterUnauthorized(ctx, actor, grant, first.httpStatus).catch((err: unknown) => failedCall(err, performance.now() - first.durationMs)));
  if (retry && 'tool' in retry) outcome = await callHttp(ctx, retry.tool, buildHttpRequest(retry.tool, args), actor, executionId, timeoutMs);
  else if (retry) outcome = retry;

  const agentId = actor.agentId ?? session.agentId;
  const executed: Omit<ExecutionRecord, 'id' | 'at'> = {
    sessionId: session.id,
    userId: actor.accountId,
    agentId,
    serviceId: service.id,
    toolId: tool.id,
    toolName: tool.name,
    arguments: args,
    status: outcome.status,
    httpStatus: outcome.httpStatus,
    output: outcome.output,
    error: outcome.error,
    durationMs: outcome.durationMs,
  };
  await recordExecution(ctx, { id: executionId, ...executed });
  rememberExecution(ctx, { executionId, serviceName: service.name, ...executed });

  if (outcome.failure) {
    const f = outcome.failure;
    throw new AppError(f.code, f.message, { headers: { ...headers, ...f.headers }, extra: { ...f.extra, execution_id: executionId } });
  }
  const result: ExecuteResult = { execution_id: executionId, status: outcome.status, output: outcome.output, duration_ms: outcome.durationMs };
  if (outcome.httpStatus !== null) result.http_status = outcome.httpStatus;
  if (outcome.error) result.error = outcome.error;
  return { result, headers };
}

/** Cold path (invalid arguments): the 403 of a caller that may not call the service at all wins over the 400. */
async function assertSubscribed(ctx: AppContext, actor: SessionActor, serviceId: string, own: boolean): Promise<void> {
  if (!own && !(await hasActiveSubscription(ctx, actor.accountId, serviceId))) throw new AppError('not_subscribed', 'Subscribe to this service first (POST /subscriptions)');
  if (actor.agentId && !(await isAgentSubscribed(ctx, actor.agentId, serviceId))) throw agentNotSubscribed(serviceId);
}

function agentNotSubscribed(service: string): AppError {
  return new AppError('not_subscribed', `This agent is not subscribed to ${service}; its owner subscribes it with POST /v2/agents/:id/tools/subscribe`);
}

function invalidArguments(toolName: string, errors: FieldError[]): AppError {
  const where = errors.map((e) => `${e.pointer} ${e.message}`).join('; ');
  return new AppError('validation_failed', `Arguments do not match the input schema of ${toolName}: ${where}`, { errors });
}

// ------------------------------------------------------------------ HTTP tools

/** Where an argument goes on the HTTP request. */
type Location = 'path' | 'query' | 'header' | 'body';

/** Placeholders `{name}` of a tool path. Cached per path string. */
const placeholderCache = new Map<string, string[]>();
function placeholders(path: string): string[] {
  let p = placeholderCache.get(path);
  if (!p) {
    p = [...path.matchAll(/\{([^{}]+)\}/g)].map((m) => m[1]);
    if (placeholderCache.size > 10_000) placeholderCache.clear();
    placeholderCache.set(path, p);
  }
  return p;
}

function queryValue(v: unknown): string {
  return typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v);
}

/**
 * Build the upstream HTTP request of a tool call. Arguments go where the tool says
 * (`argLocations` of OpenAPI tools), else: `{name}` placeholders of the path, then the query
 * string for GET/HEAD/DELETE/OPTIONS or a JSON body object otherwise. `bodyArgument` names an
 * argument whose value is the whole JSON body. The upstream credential is injected last
 * (bearer → Authorization, header → its header, query → its query parameter).
 * @throws AppError validation_failed when a path parameter is missing
 */
export function buildHttpRequest(
  t: ExecutableTool,
  args: Record<string, unknown>,
): { method: string; url: URL; headers: Record<string, string>; body?: string } {
  const method = t.tool.method.toUpperCase();
  const names = placeholders(t.tool.path);
  const declared = t.tool.argLocations;
  let path = t.tool.path;
  for (const n of names) {
    const v = args[n];
    if (v === undefined || v === null) {
      throw new AppError('validation_failed', `Missing path parameter "${n}"`, { errors: [{ in: 'body', pointer: `/arguments/${n}`, message: 'is required (path parameter)' }] });
    }
    const value = queryValue(v);
    // `.`/`..` would be resolved as dot-segments (even percent-encoded) and leave the tool's path.
    if (value === '.' || value === '..') {
      throw new AppError('validation_failed', `Path parameter "${n}" may not be "${value}"`, { errors: [{ in: 'body', pointer: `/arguments/${n}`, message: 'may not be a dot-segment' }] });
    }
    path = path.replaceAll(`{${n}}`, encodeURIComponent(value));
  }
  const base = t.service.baseUrl.replace(/\/+$/, '');
  const url = new URL(base + (path.startsWith('/') ? path : `/${path}`));
  const headers: Record<string, string> = { accept: 'application/json, text/plain;q=0.9, */*;q=0.5' };
  const fallback: Location = BODYLESS.has(method) ? 'query' : 'body';
  let bodyObject: Record<string, unknown> | undefined;
  let wholeBody: unknown;
  let hasWholeBody = false;
  for (const [k, v] of Object.entries(args)) {
    if (v === undefined) continue;
    if (k === t.tool.bodyArgument) {
      wholeBody = v;
      hasWholeBody = true;
      continue;
    }
    const loc: Location = names.includes(k) ? 'path' : (declared?.[k] ?? fallback);
    if (loc === 'path') continue;
    if (loc === 'query') {
      if (v === null) continue;
      if (Array.isArray(v)) for (const item of v) url.searchParams.append(k, queryValue(item));
      else url.searchParams.append(k, queryValue(v));
    } else if (loc === 'header') {
      const name = k.toLowerCase();
      if (v !== null && !RESERVED_HEADER.test(name)) headers[name] = queryValue(v).replace(/[\r\n]/g, ' ');
    } else {
      (bodyObject ??= {})[k] = v;
    }
  }
  const a = t.upstreamAuth;
  if (a.type === 'bearer' && a.secret) headers.authorization = `Bearer ${a.secret}`;
  else if (a.type === 'header' && a.name && a.secret) headers[a.name.toLowerCase()] = a.secret;
  else if (a.type === 'query' && a.name && a.secret) url.searchParams.set(a.name, a.secret);
  let body: string | undefined;
  if (hasWholeBody) body = JSON.stringify(wholeBody);
  else if (bodyObject || !BODYLESS.has(method)) body = JSON.stringify(bodyObject ?? {});
  if (body !== undefined) headers['content-type'] = 'application/json';
  return { method, url, headers, body };
}

type HttpRequest = ReturnType<typeof buildHttpRequest>;

async function callHttp(ctx: AppContext, t: ExecutableTool, req: HttpRequest, actor: SessionActor, executionId: string, timeoutMs: number): Promise<CallOutcome> {
  const started = performance.now();
  req.headers[HEADER_REQUEST_ID] = executionId;
  req.headers[HEADER_USER] = userPseudonym(t.signingSecret, actor.accountId);
  req.headers[HEADER_SIGNATURE] = signRequest(t.signingSecret, req.method, req.url.pathname + req.url.search, req.body);
  try {
    const res = await upstreamFetch(ctx, { method: req.method, url: req.url.toString(), headers: req.headers, body: req.body, timeoutMs });
    const durationMs = Math.round(performance.now() - started);
    const parsed = parseBody(res.headers['content-type'], res.body);
    if (!parsed.ok) {
      return { status: 'failed', httpStatus: res.status, output: null, error: { code: 'upstream_error', message: parsed.message }, durationMs, failure: new AppError('upstream_error', parsed.message) };
    }
    const ok = res.status >= 200 && res.status < 300;
    return {
      status: ok ? 'succeeded' : 'failed',
      httpStatus: res.status,
      output: parsed.value,
      error: ok ? null : { code: 'upstream_status', message: `Upstream answered HTTP ${res.status}` },
      durationMs,
    };
  } catch (err) {
    return failedCall(err, started);
  }
}

function failedCall(err: unknown, started: number): CallOutcome {
  if (!(err instanceof AppError)) throw err;
  return { status: 'failed', httpStatus: null, output: null, error: { code: err.code, message: err.message }, durationMs: Math.round(performance.now() - started), failure: err };
}

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\b/i;
const TEXT_TYPE = /^(?:text\/|application\/(?:xml|x-www-form-urlencoded|javascript|yaml|x-yaml)\b|[\w.+-]+\/[\w.-]+\+xml\b)/i;

/**
 * Decode an upstream body: JSON when declared (malformed JSON → not ok), text for textual types
 * and undeclared bodies (JSON when they parse), base64 for anything binary.
 */
export function parseBody(contentType: string | undefined, body: Buffer): { ok: true; value: unknown } | { ok: false; message: string } {
  if (body.length === 0) return { ok: true, value: null };
  const ct = (contentType ?? '').trim();
  if (JSON_TYPE.test(ct)) {
    try {
      return { ok: true, value: JSON.parse(body.toString('utf8')) };
    } catch {
      return { ok: false, message: 'Upstream declared a JSON body but sent malformed JSON' };
    }
  }
  if (!ct) {
    const text = body.toString('utf8');
    try {
      return { ok: true, value: JSON.parse(text) };
    } catch {
      return { ok: true, value: text };
    }
  }
  if (TEXT_TYPE.test(ct)) return { ok: true, value: body.toString('utf8') };
  return { ok: true, value: { content_type: ct, encoding: 'base64', data: body.toString('base64') } };
}

// ------------------------------------------------------------------ MCP tools

async function callMcp(ctx: AppContext, t: ExecutableTool, actor: SessionActor, executionId: string, args: Record<string, unknown>, timeoutMs: number): Promise<CallOutcome> {
  const started = performance.now();
  const endpoint = t.service.mcpUrl ?? t.service.baseUrl;
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return failedCall(new AppError('upstream_error', 'The MCP endpoint of this service is not a valid URL'), started);
  }
  const headers: Record<string, string> = {};
  const a = t.upstreamAuth;
  if (a.type === 'bearer' && a.secret) headers.authorization = `Bearer ${a.secret}`;
  else if (a.type === 'header' && a.name && a.secret) headers[a.name.toLowerCase()] = a.secret;
  else if (a.type === 'query' && a.name && a.secret) url.searchParams.set(a.name, a.secret);
  headers[HEADER_REQUEST_ID] = executionId;
  headers[HEADER_USER] = userPseudonym(t.signingSecret, actor.accountId);
  // One tool call is several HTTP requests written by the MCP SDK; each is signed over its own
  // method, path + query and body bytes, like HTTP tools (docs/upstream-signing.md "MCP servers").
  const perRequestHeaders = (r: { method: string; pathAndQuery: string; body: string | Buffer | null }) => ({
    [HEADER_SIGNATURE]: signRequest(t.signingSecret, r.method, r.pathAndQuery, r.body),
  });
  try {
    // The registry keeps the server's own tool name in `path` (the platform name may be a slug of it).
    const res = await mcpCallTool(ctx, url.toString(), t.tool.path || t.tool.name, args, { headers, timeoutMs, perRequestHeaders });
    const durationMs = Math.round(performance.now() - started);
    const output = res.structuredContent !== undefined ? res.structuredContent : mcpContentValue(res.content);
    if (res.isError) {
      const text = res.content.map((c) => (c as { text?: unknown }).text).filter((x) => typeof x === 'string').join('\n');
      return { status: 'failed', httpStatus: null, output, error: { code: 'tool_error', message: (text || 'The MCP tool reported an error').slice(0, 1000) }, durationMs };
    }
    return { status: 'succeeded', httpStatus: null, output, error: null, durationMs };
  } catch (err) {
    return failedCall(err, started);
  }
}

/**
 * MCP content → output: a single text item is returned as its JSON value when it parses, else as
 * text; anything else as the content array.
 */
function mcpContentValue(content: unknown[]): unknown {
  if (content.length === 1) {
    const c = content[0] as { type?: unknown; text?: unknown };
    if (c.type === 'text' && typeof c.text === 'string') {
      try {
        return JSON.parse(c.text);
      } catch {
        return c.text;
      }
    }
  }
  return content;
}
