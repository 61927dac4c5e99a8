/**
 * Span names and attribute keys used by the platform's traces and metrics, from the OpenTelemetry
 * semantic conventions: GenAI agent and tool spans ("Semantic conventions for generative AI tool
 * execution": span `execute_tool {gen_ai.tool.name}`; "GenAI agent spans": `invoke_agent
 * {gen_ai.agent.name}`), MCP ("Semantic conventions for Model Context Protocol": `mcp.method.name`,
 * metric `mcp.server.operation.duration`, context in `params._meta`), HTTP and database spans.
 * Keys under `platform.` are this service's own (owner account, execution and invocation ids).
 */

/** `gen_ai.operation.name` values. */
export const OP_EXECUTE_TOOL = 'execute_tool';
export const OP_INVOKE_AGENT = 'invoke_agent';

/** GenAI attribute keys (semantic-conventions-genai). */
export const GEN_AI = {
  operationName: 'gen_ai.operation.name',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  /** `function` | `extension` | `datastore`: platform tools call an external API, so `extension`. */
  toolType: 'gen_ai.tool.type',
  toolDescription: 'gen_ai.tool.description',
  /** Tool arguments (opt-in, `OTEL_RECORD_ARGUMENTS=on`; secret-named fields redacted). */
  toolCallArguments: 'gen_ai.tool.call.arguments',
  agentId: 'gen_ai.agent.id',
  agentName: 'gen_ai.agent.name',
} as const;

/** General attribute keys (stable semantic conventions). */
export const ATTR = {
  errorType: 'error.type',
  httpMethod: 'http.request.method',
  httpStatus: 'http.response.status_code',
  httpRoute: 'http.route',
  urlFull: 'url.full',
  urlPath: 'url.path',
  serverAddress: 'server.address',
  serverPort: 'server.port',
  dbSystem: 'db.system.name',
  dbQueryText: 'db.query.text',
  dbOperation: 'db.operation.name',
  mcpMethod: 'mcp.method.name',
  mcpSessionId: 'mcp.session.id',
  messagingSystem: 'messaging.system',
  messagingDestination: 'messaging.destination.name',
  messagingOperation: 'messaging.operation.type',
} as const;

/** The platform's own attribute keys. */
export const PLATFORM = {
  /** The account that owns the span's work: `GET /v1/traces/:id` answers only its spans. */
  accountId: 'platform.account_id',
  executionId: 'platform.execution_id',
  invocationId: 'platform.invocation_id',
  serviceName: 'platform.service.name',
  sessionId: 'platform.session_id',
  /** `log` events carry the sandbox's `console` line here. */
  logMessage: 'log.message',
  logStream: 'log.iostream',
} as const;

/** Metric names. Durations in seconds, as the conventions require. */
export const METRICS = {
  /** Histogram, s: one per tool execution (GenAI convention `gen_ai.execute_tool.duration`). */
  toolDuration: 'gen_ai.execute_tool.duration',
  /** Histogram, s: one per MCP request the platform serves. */
  mcpServerDuration: 'mcp.server.operation.duration',
  /** Counter: sandbox starts, attribute `platform.sandbox.start` = `cold` | `warm`. */
  sandboxStarts: 'platform.sandbox.starts',
} as const;
