/**
 * Executing a tool in a session (`POST /v1/agents/:id/execute`).
 *
 * Hot path, in order (each step's failure answers before anything later happens):
 *  0. the credential's `tools:execute` scope (agent token or API key; a set lookup) → 403
 *     `insufficient_scope`: checked here, not by the faces, so REST, the MCP meta tool, the MCP
 *     exposed tools and the deployed-agent runtime cannot differ;
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
 *  4b. the policies that bind the caller (`policies/authorize.ts`) → 403 `policy_denied`, or 202
 *     `approval_required` until a person approves (docs/governance.md);
 *  5. the upstream call (guarded HTTP client or MCP `tools/call`) with the upstream credential
 *     and the platform's signature headers; for `oauth2` services the credential is the caller's
 *     own connection (`withCallerGrant`, 409 `connection_required` without one, before any quota
 *     is used), and an upstream 401 gets one refresh and one retry (`grantAfterUnauthorized`);
 *  6. one statement records the execution, the session counters and the usage counters; the
 *     `execution.recorded` event is emitted on `ctx.events` (memory subscribes in `app.ts` and works
 *     off the request path).
 */
import type { Static } from 'typebox';
import type { AppContext } from '../../context.js';
import { AppError, type FieldError } from '../../http/errors.js';
import { newId } from '../../http/ids.js';
import { actorOf, requireScope, type Principal, type SessionActor } from '../../http/auth.js';
import { argumentErrors, validatorFor } from '../../upstream/arguments.js';
import { buildHttpRequest } from '../../upstream/request.js';
import { callHttpTool, callMcpTool, failedCall } from '../../upstream/tool-call.js';
import { isAgentSubscribed } from '../agents/service.js';
import { authorizeToolCall } from '../policies/authorize.js';
import { grantAfterUnauthorized, withCallerGrant } from '../connections/grant.js';
import { resolveExecutableTool } from '../registry/executable.js';
import { assertDefinitionPinned } from '../subscriptions/pins.js';
import { consumeQuota } from '../subscriptions/quota.js';
import { hasActiveSubscription } from '../subscriptions/service.js';
import { quotaHeaders, type QuotaState } from '../subscriptions/windows.js';
import type { ExecuteBody, ExecuteResultSchema } from './schemas.js';
import { sessionState } from './service.js';
import { recordExecution, type ExecutionRecord } from './usage.js';
import { annotateToolCall, traceToolCall } from '../../telemetry/spans.js';

/** Body of `POST /v1/agents/:id/execute` (`ExecuteBody`). */
export type ExecuteInput = Static<typeof ExecuteBody>;

/** The 200 answer (`ExecuteResultSchema`). `http_status` only for HTTP tools; `error` only when `status` is `failed`. */
export type ExecuteResult = Static<typeof ExecuteResultSchema>;

/**
 * The session an execution is recorded in: its id, or a function that gives one (creating the
 * session on first use, as the MCP and runtime faces do) — called only after the scope check, so a
 * caller without `tools:execute` creates nothing.
 */
export type SessionRef = string | (() => Promise<string>);

/** What the route sends: the body plus the `X-Quota-*` headers (empty when no quota applies). */
export interface ExecuteAnswer {
  result: ExecuteResult;
  headers: Record<string, string>;
}

/**
 * THE execute entry point: run one tool execution for `principal` in session `sessionId`. Every
 * face — REST (`sessions/routes.ts`), the MCP `execute_tool` and exposed `<service>__<tool>`
 * tools, the deployed-agent runtime's broker — calls this and nothing else, with the caller's
 * principal as authenticated (a user, an API key or an agent token; the broker's per-invocation
 * agent identity), an active session ({@link SessionRef}) and `{ service, tool, arguments?, timeout_ms? }` (service
 * by id or name, tool by name, former name or id). It checks the credential's scope, visibility,
 * arguments, subscription and quota, calls the upstream (`src/upstream/tool-call.ts`), records the
 * execution and emits `execution.recorded`. The principal acts as `actorOf(principal)`.
 * @returns the result body and the `X-Quota-*` headers to send (empty for the owner's own services)
 * @throws AppError insufficient_scope (403), not_found (session, service or tool), session_closed,
 *         validation_failed, not_subscribed, quota_exceeded, upstream_blocked / upstream_error (502),
 *         upstream_timeout (504) — the last three after recording, with `execution_id` in the problem
 */
export function executeTool(
  ctx: AppContext,
  principal: Principal,
  sessionRef: SessionRef,
  input: ExecuteInput,
): Promise<ExecuteAnswer> {
  // The `execute_tool {tool}` span (OpenTelemetry GenAI conventions; docs/observability.md) around the whole body.
  const { accountId, agentId } = actorOf(principal);
  const call = { accountId, agentId, service: input.service, tool: input.tool, arguments: input.arguments };
  return traceToolCall(call, () => runExecute(ctx, principal, sessionRef, input));
}

async function runExecute(
  ctx: AppContext,
  principal: Principal,
  sessionRef: SessionRef,
  input: ExecuteInput,
): Promise<ExecuteAnswer> {
  requireScope(principal, 'tools:execute');
  const actor = actorOf(principal);
  const sessionId = typeof sessionRef === 'string' ? sessionRef : await sessionRef();
  // Independent lookups: run them together (parallel on PostgreSQL, one event-loop turn less on PGlite).
  const [session, resolved] = await Promise.all([
    sessionState(ctx, actor, sessionId),
    resolveExecutableTool(ctx, input.service, input.tool),
  ]);
  if (session.status !== 'active')
    throw new AppError('session_closed', 'The session is closed; create a new session to execute tools');

  const own = resolved !== null && resolved.service.ownerId === actor.accountId;
  if (!resolved || (!own && resolved.service.status !== 'published')) {
    throw new AppError(
      'not_found',
      resolved ? 'Service not found' : `Service "${input.service}" or its tool "${input.tool}" not found`,
    );
  }
  const { service, tool } = resolved;

  const args = input.arguments ?? {};
  const validate = validatorFor(tool.id, tool.inputSchema);
  if (!validate(args)) {
    const errors = argumentErrors(validate.errors);
    await assertSubscribed(ctx, actor, service.id, own);
    throw invalidArguments(tool.name, errors);
  }

  if (actor.agentId && !(await isAgentSubscribed(ctx, actor.agentId, service.id)))
    throw agentNotSubscribed(service.name);
  // Pinned tool definitions (docs/governance.md): a changed definition answers 409 until accepted.
  await assertDefinitionPinned(ctx, actor, resolved);
  // Governance hook (docs/governance.md): Cedar policies, and a person's approval where one requires it.
  await authorizeToolCall(ctx, principal, actor, resolved, args, input.approval_id);
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
  annotateToolCall(executionId);
  const timeoutMs = Math.min(input.timeout_ms ?? ctx.config.upstream.timeoutMs, ctx.config.upstream.maxTimeoutMs);
  let outcome = httpRequest
    ? await callHttpTool(ctx, grant.tool, httpRequest, actor.accountId, executionId, timeoutMs)
    : await callMcpTool(ctx, grant.tool, actor.accountId, executionId, args, timeoutMs);
  // An upstream 401 on a connection's token: one refresh, one retry (HTTP tools); a refused
  // refresh (409 connection_required) is recorded like any failed call.
  const first = outcome;
  const retry =
    httpRequest &&
    (await grantAfterUnauthorized(ctx, actor, grant, first.httpStatus).catch((err: unknown) =>
      failedCall(err, performance.now() - first.durationMs),
    ));
  if (retry && 'tool' in retry)
    outcome = await callHttpTool(
      ctx,
      retry.tool,
      buildHttpRequest(retry.tool, args),
      actor.accountId,
      executionId,
      timeoutMs,
    );
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
  ctx.events.emit('execution.recorded', { executionId, serviceName: service.name, ...executed });

  if (outcome.failure) {
    const f = outcome.failure;
    throw new AppError(f.code, f.message, {
      headers: { ...headers, ...f.headers },
      extra: { ...f.extra, execution_id: executionId },
    });
  }
  const result: ExecuteResult = {
    execution_id: executionId,
    status: outcome.status,
    output: outcome.output,
    duration_ms: outcome.durationMs,
  };
  if (outcome.httpStatus !== null) result.http_status = outcome.httpStatus;
  if (outcome.error) result.error = outcome.error;
  return { result, headers };
}

/** Cold path (invalid arguments): the 403 of a caller that may not call the service at all wins over the 400. */
async function assertSubscribed(ctx: AppContext, actor: SessionActor, serviceId: string, own: boolean): Promise<void> {
  if (!own && !(await hasActiveSubscription(ctx, actor.accountId, serviceId)))
    throw new AppError('not_subscribed', 'Subscribe to this service first (POST /subscriptions)');
  if (actor.agentId && !(await isAgentSubscribed(ctx, actor.agentId, serviceId))) throw agentNotSubscribed(serviceId);
}

function agentNotSubscribed(service: string): AppError {
  return new AppError(
    'not_subscribed',
    `This agent is not subscribed to ${service}; its owner subscribes it with POST /v2/agents/:id/tools/subscribe`,
  );
}

function invalidArguments(toolName: string, errors: FieldError[]): AppError {
  const where = errors.map((e) => `${e.pointer} ${e.message}`).join('; ');
  return new AppError('validation_failed', `Arguments do not match the input schema of ${toolName}: ${where}`, {
    errors,
  });
}
