/**
 * The MCP server of one request (`@modelcontextprotocol/sdk` low-level `Server`): `tools/list`
 * and `tools/call` over {@link PLATFORM_TOOLS} and, when exposure is on, the caller's subscribed
 * tools. Built per request (stateless transport); what outlives a request is in `mcp_sessions`.
 *
 * Errors: a platform error inside a tool (AppError: 4xx/5xx problem) is an MCP tool error
 * (`isError: true`, `structuredContent` = `{ code, status, title, detail, errors?, … }`); a
 * call of an unknown tool is a JSON-RPC error (-32602, MCP spec "Tools" §Error Handling); any
 * other failure is logged and answered as tool error `internal_error` — never an HTTP 500.
 *
 * A call held for a person's approval (`approval_required`, docs/governance.md#approvals): for a
 * client that declared URL-mode elicitation, the JSON-RPC error -32042 (URLElicitationRequired,
 * MCP 2025-11-25) naming the approval page, whose `elicitationId` is the approval id — the client
 * retries the same call once the user approved; for any other client a tool error whose text gives
 * the URL, the approval id and how to retry (`approval_id` of `execute_tool`, or `_meta`
 * {@link APPROVAL_META} for an exposed tool; the same call without either also finds its approval).
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  UrlElicitationRequiredError,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { AppContext } from '../../context.js';
import { AppError, CODES } from '../../http/errors.js';
import { argumentErrors, validatorFor } from '../../upstream/arguments.js';
import { exposedTools } from './catalog.js';
import { APPROVAL_META, PLATFORM_TOOLS, runTool, type McpCall, type PlatformTool, type ToolOutcome } from './tools.js';

/** `_meta` key of an exposed tool whose definition changed since the caller pinned it (docs/governance.md). */
export const PENDING_CHANGE_META = 'dev.agent-platform/pending_change';

/** Server name and version announced in `initialize` (`serverInfo`). */
export const SERVER_INFO = { name: 'agent-platform', title: 'Agent Platform', version: '1.0.0' };

const INSTRUCTIONS =
  'Agent Platform: a marketplace of tools plus long-term memory. Find tools with search_tools, read one with describe_tool, ' +
  'run it with execute_tool (you must be subscribed to its service). Keep facts with remember and find them with recall.';

function toolsFor(call: McpCall): PlatformTool[] {
  return PLATFORM_TOOLS.filter((t) => !t.agentsOnly || call.principal.kind === 'agent');
}

function asMcpTool(t: PlatformTool): Tool {
  return {
    name: t.name,
    title: t.title,
    description: t.description,
    inputSchema: t.inputSchema as Tool['inputSchema'],
    ...(t.annotations ? { annotations: t.annotations } : {}),
  };
}

/** The tool list of `call` (MCP `tools/list` result `tools`). */
export async function listTools(ctx: AppContext, call: McpCall): Promise<Tool[]> {
  const list = toolsFor(call).map(asMcpTool);
  if (call.expose) {
    for (const t of await exposedTools(ctx, call.actor)) {
      list.push({
        name: t.name,
        title: t.title,
        description: t.description,
        inputSchema: { ...t.inputSchema, type: 'object' } as Tool['inputSchema'],
        // The pinned definition is shown; calling answers tool_definition_changed until accepted.
        ...(t.pendingChange ? { _meta: { [PENDING_CHANGE_META]: true } } : {}),
      });
    }
  }
  return list;
}

/** A platform problem as a tool result (MCP tool error). */
export function toolError(err: AppError): CallToolResult {
  const [status, title] = CODES[err.code];
  const value: Record<string, unknown> = {
    code: err.code,
    status,
    title,
    detail: err.message,
    ...(err.errors ? { errors: err.errors } : {}),
    ...err.extra,
  };
  const retry = err.headers?.['retry-after'];
  if (retry) value.retry_after_seconds = Number(retry);
  return { isError: true, content: [{ type: 'text', text: `${err.code}: ${err.message}` }], structuredContent: value };
}

/**
 * A call held for approval, for MCP: the URL elicitation error (-32042) when the session's client
 * declared URL mode; else a tool error telling where to approve and how to retry.
 * @throws UrlElicitationRequiredError for a URL-mode client
 */
function approvalAnswer(err: AppError, call: McpCall, name: string): CallToolResult {
  const id = String(err.extra?.approval_id);
  const url = String(err.extra?.approval_url);
  const message = `A person must approve this call of ${name} before it runs (approval ${id}, until ${String(err.extra?.expires_at)}).`;
  if (call.session?.elicitationUrl)
    throw new UrlElicitationRequiredError([{ mode: 'url', message, url, elicitationId: id }]);
  const how =
    name === 'execute_tool'
      ? `call execute_tool again with the same arguments plus "approval_id": "${id}"`
      : `call ${name} again with the same arguments (optionally with _meta {"${APPROVAL_META}": "${id}"})`;
  const out = toolError(err);
  out.content = [
    {
      type: 'text',
      text: `approval_required: ${message} Show the user ${url}: a person approves or denies it there; once approved, ${how}.`,
    },
  ];
  return out;
}

function toolResult(out: ToolOutcome): CallToolResult {
  return {
    content: [{ type: 'text', text: JSON.stringify(out.value) }],
    structuredContent: out.value,
    ...(out.isError ? { isError: true } : {}),
  };
}

/** Run tool `name` for `call`. @throws McpError InvalidParams for an unknown tool name */
export async function callTool(
  ctx: AppContext,
  call: McpCall,
  name: string,
  args: Record<string, unknown>,
  meta?: Record<string, unknown>,
): Promise<CallToolResult> {
  try {
    const platform = toolsFor(call).find((t) => t.name === name);
    if (platform) {
      const validate = validatorFor(`mcp:${platform.name}`, platform.inputSchema as unknown as Record<string, unknown>);
      if (!validate(args)) {
        const errors = argumentErrors(validate.errors).map((e) => ({
          ...e,
          pointer: e.pointer.replace(/^\/arguments/, '') || '/',
        }));
        throw new AppError(
          'validation_failed',
          `Arguments do not match the input schema of ${name}: ${errors.map((e) => `${e.pointer} ${e.message}`).join('; ')}`,
          { errors },
        );
      }
      return toolResult(await platform.run(ctx, call, args as never));
    }
    if (call.expose && name.includes('__')) {
      const exposed = (await exposedTools(ctx, call.actor)).find((t) => t.name === name);
      if (exposed)
        return toolResult(
          await runTool(ctx, call, {
            service: exposed.service,
            tool: exposed.tool,
            arguments: args,
            approval_id: typeof meta?.[APPROVAL_META] === 'string' ? (meta[APPROVAL_META] as string) : undefined,
          }),
        );
    }
  } catch (err) {
    if (err instanceof AppError && err.code === 'approval_required') return approvalAnswer(err, call, name);
    if (err instanceof AppError) return toolError(err);
    ctx.log.error({ err, tool: name }, 'mcp tool failed');
    return toolError(new AppError('internal_error', 'The tool failed unexpectedly; the error was logged'));
  }
  throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
}

/**
 * One JSON Schema validator for every per-request server: the SDK's `Server` otherwise builds a
 * new Ajv instance in its constructor, which was 89 % of `buildServer` and ~5 % of the CPU of an
 * `execute_tool` call in `npm run bench:mcp`. It holds only compiled schemas (a pure cache).
 */
const jsonSchemaValidator = new AjvJsonSchemaValidator();

/** The SDK server of one request. */
export function buildServer(ctx: AppContext, call: McpCall): Server {
  const server = new Server(SERVER_INFO, {
    capabilities: { tools: { listChanged: true } },
    instructions: INSTRUCTIONS,
    jsonSchemaValidator,
  });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: await listTools(ctx, call) }));
  server.setRequestHandler(CallToolRequestSchema, async (req) =>
    callTool(
      ctx,
      call,
      req.params.name,
      (req.params.arguments ?? {}) as Record<string, unknown>,
      req.params._meta as Record<string, unknown> | undefined,
    ),
  );
  return server;
}
