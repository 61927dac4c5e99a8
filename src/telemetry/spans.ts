/**
 * The platform's own spans and metrics around its domain operations, following the OpenTelemetry
 * GenAI and MCP semantic conventions (names.ts): `execute_tool {tool}` around one tool execution,
 * the upstream HTTP CLIENT span with `traceparent` sent, MCP `tools/call {tool}` CLIENT and SERVER
 * spans with the context in `params._meta`, and `invoke_agent {agent}` around a deployment
 * invocation. Each helper is a plain call of `fn` while tracing is off.
 */
import { metrics, type Histogram, type Counter } from '@opentelemetry/api';
import { ATTR, GEN_AI, METRICS, OP_EXECUTE_TOOL, OP_INVOKE_AGENT, PLATFORM } from './names.js';
import { annotate, argumentsAttribute, injectTraceHeaders, SpanKind, tracingOn, withSpan } from './trace.js';

let instruments: { tool: Histogram; mcp: Histogram; sandbox: Counter } | undefined;
function meter() {
  instruments ??= (() => {
    const m = metrics.getMeter('agent-platform');
    return {
      tool: m.createHistogram(METRICS.toolDuration, { unit: 's', description: 'Duration of tool executions' }),
      mcp: m.createHistogram(METRICS.mcpServerDuration, { unit: 's', description: 'MCP request duration (server)' }),
      sandbox: m.createCounter(METRICS.sandboxStarts, { description: 'Sandbox starts, cold or warm' }),
    };
  })();
  return instruments;
}

/** What the `execute_tool` span needs to know before the call. */
export interface ToolCallInfo {
  /** Owning account of the call (the actor's account). */
  accountId: string;
  agentId: string | null;
  service: string;
  tool: string;
  arguments: unknown;
}

/**
 * Run one tool execution (`fn`) in an `execute_tool {tool}` INTERNAL span: `gen_ai.operation.name`
 * `execute_tool`, `gen_ai.tool.name`, `gen_ai.tool.type` `extension`, `platform.service.name`, the
 * owning account; `gen_ai.tool.call.id` (the execution id) is added by the body once known
 * ({@link annotateToolCall}); a `failed` result or a thrown AppError sets `error.type`. Records the
 * `gen_ai.execute_tool.duration` histogram (seconds).
 */
export async function traceToolCall<T extends { result: { status: string; error?: { code: string } } }>(
  info: ToolCallInfo,
  fn: () => Promise<T>,
): Promise<T> {
  if (!tracingOn()) return fn();
  const started = performance.now();
  const attrs: Record<string, string> = {
    [GEN_AI.operationName]: OP_EXECUTE_TOOL,
    [GEN_AI.toolName]: info.tool,
    [GEN_AI.toolType]: 'extension',
    [PLATFORM.serviceName]: info.service,
    [PLATFORM.accountId]: info.accountId,
  };
  if (info.agentId) attrs[GEN_AI.agentId] = info.agentId;
  const args = argumentsAttribute(info.arguments);
  if (args !== undefined) attrs[GEN_AI.toolCallArguments] = args;
  let errorType: string | undefined;
  try {
    return await withSpan(`${OP_EXECUTE_TOOL} ${info.tool}`, { attributes: attrs }, async (span) => {
      const answer = await fn();
      if (answer.result.status === 'failed') {
        errorType = answer.result.error?.code ?? 'tool_error';
        span?.setAttribute(ATTR.errorType, errorType);
        span?.setStatus({ code: 2 });
      }
      return answer;
    });
  } catch (err) {
    errorType = String((err as { code?: unknown }).code ?? 'error');
    throw err;
  } finally {
    meter().tool.record((performance.now() - started) / 1000, {
      [GEN_AI.operationName]: OP_EXECUTE_TOOL,
      [GEN_AI.toolName]: info.tool,
      ...(errorType ? { [ATTR.errorType]: errorType } : {}),
    });
  }
}

/** Add the execution id to the active `execute_tool` span (and the trace store's index). */
export function annotateToolCall(executionId: string): void {
  annotate({ [GEN_AI.toolCallId]: executionId, [PLATFORM.executionId]: executionId });
}

/**
 * One upstream HTTP request (`fn`) in a CLIENT span named `{method}` (HTTP client conventions:
 * `http.request.method`, `url.full` without its query, `server.address`/`port`,
 * `http.response.status_code`), with `traceparent` written into `headers` (mutated) first.
 */
export async function traceUpstreamRequest<T extends { status: number }>(
  req: { method: string; url: string; headers: Record<string, string> },
  fn: () => Promise<T>,
): Promise<T> {
  if (!tracingOn()) return fn();
  let u: URL | undefined;
  try {
    u = new URL(req.url);
  } catch {
    return fn();
  }
  const method = req.method.toUpperCase();
  return withSpan(
    method,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        [ATTR.httpMethod]: method,
        [ATTR.urlFull]: `${u.origin}${u.pathname}`,
        [ATTR.serverAddress]: u.hostname,
        [ATTR.serverPort]: Number(u.port || (u.protocol === 'https:' ? 443 : 80)),
      },
    },
    async (span) => {
      injectTraceHeaders(req.headers);
      const res = await fn();
      span?.setAttribute(ATTR.httpStatus, res.status);
      if (res.status >= 500) span?.setAttribute(ATTR.errorType, String(res.status));
      return res;
    },
  );
}

/** An MCP client request (`tools/call {tool}`, CLIENT) to an upstream MCP server around `fn`. */
export function traceMcpClientCall<T>(method: string, target: string, fn: () => Promise<T>): Promise<T> {
  if (!tracingOn()) return fn();
  return withSpan(
    `${method} ${target}`,
    { kind: SpanKind.CLIENT, attributes: { [ATTR.mcpMethod]: method, [GEN_AI.toolName]: target } },
    fn,
  );
}

/** Record one served MCP request's duration (`mcp.server.operation.duration`, seconds). */
export function recordMcpServerDuration(method: string, target: string, seconds: number): void {
  if (!tracingOn()) return;
  const attrs: Record<string, string> = { [ATTR.mcpMethod]: method };
  if (method === 'tools/call' && target) attrs[GEN_AI.toolName] = target;
  meter().mcp.record(seconds, attrs);
}

/** What the `invoke_agent` span names. */
export interface AgentRunInfo {
  accountId: string;
  agentId: string;
  agentName: string;
  invocationId: string;
}

/**
 * A deployment invocation (`fn`) in an `invoke_agent {agent}` INTERNAL span (GenAI agent spans:
 * `gen_ai.operation.name` `invoke_agent`, `gen_ai.agent.id`, `gen_ai.agent.name`), owned by the
 * agent's account and indexed by invocation id.
 */
export function traceAgentRun<T>(info: AgentRunInfo, fn: () => Promise<T>): Promise<T> {
  if (!tracingOn()) return fn();
  return withSpan(
    `${OP_INVOKE_AGENT} ${info.agentName}`,
    {
      attributes: {
        [GEN_AI.operationName]: OP_INVOKE_AGENT,
        [GEN_AI.agentId]: info.agentId,
        [GEN_AI.agentName]: info.agentName,
        [PLATFORM.accountId]: info.accountId,
        [PLATFORM.invocationId]: info.invocationId,
      },
    },
    fn,
  );
}

/** Count one sandbox start (`platform.sandbox.starts`, `platform.sandbox.start` = cold | warm). */
export function countSandboxStart(kind: 'cold' | 'warm'): void {
  if (tracingOn()) meter().sandbox.add(1, { 'platform.sandbox.start': kind });
}
