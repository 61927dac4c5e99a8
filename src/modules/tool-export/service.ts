/**
 * The caller's subscribed tools as function definitions for model APIs called directly (OpenAI,
 * Anthropic, Gemini), and the model's tool calls run back through the execute path.
 *
 * Which tools: the same list the MCP face exposes (`exposedTools`: a user's subscribed services;
 * an agent's own tool subscriptions among its account's), so export and MCP never disagree.
 * Listing decides nothing: a call goes through {@link executeTool} like every other face, which
 * checks the credential's scope, the session, the arguments, the subscription and the quota.
 */
import type { Static } from 'typebox';
import type { AppContext } from '../../context.js';
import { AppError } from '../../http/errors.js';
import { actorOf, type Principal } from '../../http/auth.js';
import { exposedTools, type ExposedTool } from '../mcp/catalog.js';
import { executeTool } from '../sessions/execute.js';
import { createSession } from '../sessions/service.js';
import { functionName, parseToolCall, resultMessage, type ExportFormat } from './calls.js';
import { dropModelNulls, objectRoot, toGemini, toOpenAI } from './reduce.js';
import type { CallResultSchema, ExportResultSchema } from './schemas.js';

export type ExportResult = Static<typeof ExportResultSchema>;
export type CallResult = Static<typeof CallResultSchema>;

/** An exported tool: its function name and what it calls. */
interface Exported extends ExposedTool {
  fn: string;
}

/** The caller's exported tools by function name (the first of two tools that would share a name wins; see `functionName`). */
async function exportedTools(ctx: AppContext, principal: Principal): Promise<Map<string, Exported>> {
  const out = new Map<string, Exported>();
  for (const t of await exposedTools(ctx, actorOf(principal))) {
    const fn = functionName(t.service, t.tool);
    if (!out.has(fn)) out.set(fn, { ...t, fn });
  }
  return out;
}

/** One tool in `format`. */
function definition(t: Exported, format: ExportFormat): Record<string, unknown> {
  const description = t.description;
  switch (format) {
    case 'openai': {
      const { parameters, strict } = toOpenAI(t.inputSchema);
      return { type: 'function', function: { name: t.fn, description, parameters, strict } };
    }
    case 'openai-responses': {
      const { parameters, strict } = toOpenAI(t.inputSchema);
      return { type: 'function', name: t.fn, description, parameters, strict };
    }
    case 'anthropic':
      return { name: t.fn, description, input_schema: objectRoot(t.inputSchema) };
    case 'gemini': {
      const parameters = toGemini(t.inputSchema);
      return { name: t.fn, description, ...(parameters ? { parameters } : {}) };
    }
  }
}

/**
 * `GET /v1/tools/export?format=…`: the caller's subscribed tools as the provider's `tools` list
 * (Gemini: one `Tool` holding every `functionDeclaration`; none when there are no tools), and
 * which service and tool each function name stands for. Users and agents; no tool is listed that
 * the caller could not see through MCP either.
 */
export async function exportTools(ctx: AppContext, principal: Principal, format: ExportFormat): Promise<ExportResult> {
  const list = [...(await exportedTools(ctx, principal)).values()];
  const functions = list.map((t) => ({ name: t.fn, service: t.service, tool: t.tool }));
  if (format === 'gemini') {
    const declarations = list.map((t) => definition(t, format));
    return {
      format,
      tools: (declarations.length ? [{ functionDeclarations: declarations }] : []) as ExportResult['tools'],
      functions,
    };
  }
  return { format, tools: list.map((t) => definition(t, format)) as ExportResult['tools'], functions };
}

/**
 * `POST /v1/tools/call`: run the model's tool call (any provider's shape, see `calls.ts`) through
 * {@link executeTool}, exactly as `POST /v1/agents/:id/execute` does, in session `sessionId` or —
 * without one — in a new session created for it (only once the credential's scope admitted the
 * call), whose id the answer carries so later calls of the same conversation can join it.
 * `null`s the model sent for optional properties (strict mode's "not given") are dropped before
 * the arguments are checked against the registered schema.
 * @returns the execute result, the result message for the model in the call's format, and the `X-Quota-*` headers
 * @throws AppError validation_failed (not a tool call), not_found (no exported tool of that name,
 *         or the session), and everything {@link executeTool} throws
 */
export async function callExportedTool(
  ctx: AppContext,
  principal: Principal,
  body: unknown,
  sessionId?: string,
): Promise<{ answer: CallResult; headers: Record<string, string> }> {
  const call = parseToolCall(body);
  const tool = (await exportedTools(ctx, principal)).get(call.name);
  if (!tool)
    throw new AppError(
      'not_found',
      `No subscribed tool is exported as "${call.name}"; export the tools again (GET /v1/tools/export)`,
    );
  let session = sessionId;
  const implicit = async () =>
    (session = (
      await createSession(ctx, actorOf(principal), {
        name: 'tools.call',
        metadata: { via: 'tools.call', format: call.format },
      })
    ).id);
  const args = dropModelNulls(call.arguments, tool.inputSchema) as Record<string, unknown>;
  const { result, headers } = await executeTool(ctx, principal, session ?? implicit, {
    service: tool.service,
    tool: tool.tool,
    arguments: args,
  });
  const answer: CallResult = {
    format: call.format,
    name: call.name,
    service: tool.service,
    tool: tool.tool,
    session_id: session!,
    result,
    message: resultMessage(call, result),
  };
  return { answer, headers };
}
