/**
 * @agent-platform/sdk — typed client of the Agent Platform API (Node ≥ 20 and browsers).
 *
 * ```ts
 * const client = new AgentPlatform({ baseUrl, apiKey });
 * for await (const s of client.services.list()) console.log(s.name);
 * ```
 */
export { AgentPlatform, ENV, type AgentPlatformOptions } from './client.js';
export { AgentPlatformError, parseRetryAfter, type FieldError } from './errors.js';
export {
  diffLines,
  valueAt,
  type DefinitionChange,
  type DiffLine,
  type JsonPatchOperation,
  type PendingChange,
} from './definitions.js';
export { MemoryTokenStorage, jwtExpiry, type TokenSet, type TokenStorage } from './tokens.js';
export { CursorList, type Page } from './pagination.js';
export { DEFAULT_RETRY, retryDelay, type RetryOptions } from './transport.js';
export type { LogEvent } from './logs.js';
export type { DeployInput } from './resources/agents.js';
export type {
  AnthropicToolDefinition,
  GeminiToolDefinition,
  OpenAIResponsesToolDefinition,
  OpenAIToolDefinition,
  ToolDefinitions,
  ToolExport,
  ToolExportFormat,
} from './resources/tools.js';
export type { Body, Item, Query, Result } from './core.js';
export type { components, operations, paths } from './generated/openapi.js';
