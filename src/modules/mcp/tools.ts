/**
 * The platform's MCP tools. Each one calls the same service function as the REST route it
 * mirrors, and that function checks the principal (scopes, roles, grants, subscriptions, quotas):
 * a tool here only adapts arguments and results, so it cannot apply a rule differently:
 *
 * | tool | REST equivalent |
 * |---|---|
 * | `search_tools` | `GET /search/tools` (+ each hit's input schema) |
 * | `describe_tool` | the tool of `GET /services/:id/manifest` |
 * | `execute_tool` | `POST /v1/agents/:id/execute` |
 * | `remember` / `recall` | `POST /memory` / `GET /memory/search` |
 * | `memory_get/put/delete/list` (agents) | `/v2/memory…` and `/v2/agents/:id/memory…` |
 */
import type { Static, TSchema } from 'typebox';
import type { AppContext } from '../../context.js';
import type { Principal } from '../../http/auth.js';
import { AppError, notFound } from '../../http/errors.js';
import { deleteAgentMemory, getAgentMemory, listAgentMemory, putAgentMemory } from '../agent-memory/access.js';
import { addMemoryAs, searchMemoriesAs } from '../memory/access.js';
import { getPublicManifest } from '../registry/service.js';
import { searchTools } from '../search/service.js';
import { executeTool } from '../sessions/execute.js';
import type { SessionActor } from '../../http/auth.js';
import { inputSchemasOf } from './catalog.js';
import {
  DescribeToolArgs,
  ExecuteToolArgs,
  MemoryDeleteArgs,
  MemoryGetArgs,
  MemoryListArgs,
  MemoryPutArgs,
  RecallArgs,
  RememberArgs,
  SearchToolsArgs,
} from './schemas.js';
import { platformSessionOf, type McpSessionRow } from './sessions.js';

/**
 * The `_meta` key of a `tools/call` request that carries the approval id when re-submitting a call
 * of an exposed `<service>__<tool>` tool (whose arguments are the tool's own); `execute_tool` takes
 * `approval_id` as an argument. MCP `_meta` keys are prefixed with a reversed domain.
 */
export const APPROVAL_META = 'dev.agent-platform/approval_id';

/** Who is calling, over which MCP session (null for a client that sent no `Mcp-Session-Id`). */
export interface McpCall {
  principal: Principal;
  actor: SessionActor;
  session: McpSessionRow | null;
  /** Subscribed tools are listed as their own tools (session flag, else `?expose_tools=`, else config). */
  expose: boolean;
}

/** What a tool returns: an object (`structuredContent`) and whether it is a tool error. */
export interface ToolOutcome {
  value: Record<string, unknown>;
  isError?: boolean;
}

/** One platform tool: MCP `Tool` fields plus its handler. */
export interface PlatformTool<S extends TSchema = TSchema> {
  name: string;
  title: string;
  description: string;
  inputSchema: S;
  /** Only listed for (and callable by) agent principals. */
  agentsOnly?: boolean;
  annotations?: {
    readOnlyHint?: boolean;
    destructiveHint?: boolean;
    idempotentHint?: boolean;
    openWorldHint?: boolean;
  };
  run(ctx: AppContext, call: McpCall, args: Static<S>): Promise<ToolOutcome>;
}

function tool<S extends TSchema>(t: PlatformTool<S>): PlatformTool {
  return t as unknown as PlatformTool;
}

/** The agent of an agent-only tool. */
function agentId(call: McpCall): string {
  if (call.principal.kind !== 'agent')
    throw new AppError('agent_token_required', 'This tool needs an agent access token');
  return call.principal.agentId;
}

export const PLATFORM_TOOLS: PlatformTool[] = [
  tool({
    name: 'search_tools',
    title: 'Search tools',
    description:
      'Find tools in the Agent Platform marketplace (and your own services) by what they do. Returns ranked tools with service, name, description and input_schema; call one with execute_tool.',
    inputSchema: SearchToolsArgs,
    annotations: { readOnlyHint: true, openWorldHint: false },
    async run(ctx, call, args) {
      const res = await searchTools(ctx, call.principal, {
        q: args.query,
        category: args.category,
        limit: args.limit ?? 10,
      });
      const schemas = await inputSchemasOf(
        ctx,
        res.data.map((h) => h.id),
      );
      const tools = res.data.map((h) => ({
        service: h.service.name,
        service_display_name: h.service.display_name,
        name: h.name,
        description: h.description,
        input_schema: schemas.get(h.id) ?? { type: 'object' },
        category: h.service.category,
        score: h.score,
        status: h.status,
      }));
      return { value: { tools, found: res.found, relaxed: res.relaxed } };
    },
  }),
  tool({
    name: 'describe_tool',
    title: 'Describe a tool',
    description: "One tool's full description: input_schema, output_schema, HTTP method, status, and its service.",
    inputSchema: DescribeToolArgs,
    annotations: { readOnlyHint: true, openWorldHint: false },
    async run(ctx, call, args) {
      const m = await getPublicManifest(ctx, call.actor.accountId, args.service);
      const t = m.tools.find((x) => x.name === args.tool || x.id === args.tool || x.aliases.includes(args.tool));
      if (!t) throw notFound(`Tool "${args.tool}" of service "${m.name}"`);
      const service = {
        id: m.id,
        name: m.name,
        display_name: m.display_name,
        description: m.description,
        category: m.category,
        status: m.status,
      };
      return { value: { service, ...t } };
    },
  }),
  tool({
    name: 'execute_tool',
    title: 'Execute a tool',
    description:
      "Run a tool of a service you are subscribed to (or own), with arguments matching its input_schema. Counts against the subscription's quota and is recorded in a platform session (this connection's own, or session_id).",
    inputSchema: ExecuteToolArgs,
    annotations: { readOnlyHint: false, openWorldHint: true },
    async run(ctx, call, args) {
      return runTool(ctx, call, args);
    },
  }),
  tool({
    name: 'remember',
    title: 'Remember',
    description: 'Store a fact or note in your long-term memory (searchable with recall).',
    inputSchema: RememberArgs,
    annotations: { readOnlyHint: false, idempotentHint: false, openWorldHint: false },
    async run(ctx, call, args) {
      const m = await addMemoryAs(ctx, call.principal, { content: args.content, metadata: args.metadata });
      return { value: { ...m } };
    },
  }),
  tool({
    name: 'recall',
    title: 'Recall',
    description:
      'Search your long-term memory (stored notes and past tool executions) by meaning and words; best matches first.',
    inputSchema: RecallArgs,
    annotations: { readOnlyHint: true, openWorldHint: false },
    async run(ctx, call, args) {
      const res = await searchMemoriesAs(ctx, call.principal, {
        q: args.query,
        threshold: args.threshold,
        limit: args.limit,
      });
      return { value: { memories: res.data, threshold: res.threshold, filtered_count: res.filtered_count } };
    },
  }),
  tool({
    name: 'memory_get',
    title: 'Get a memory entry',
    description:
      "Read one key of this agent's key/value memory, or of another agent's memory it holds a read grant for (agent_id).",
    inputSchema: MemoryGetArgs,
    agentsOnly: true,
    annotations: { readOnlyHint: true, openWorldHint: false },
    async run(ctx, call, args) {
      return { value: { ...(await getAgentMemory(ctx, call.principal, args.agent_id ?? agentId(call), args.key)) } };
    },
  }),
  tool({
    name: 'memory_put',
    title: 'Put a memory entry',
    description:
      "Create or replace one key of this agent's key/value memory, or of another agent's memory it holds a write grant for (agent_id).",
    inputSchema: MemoryPutArgs,
    agentsOnly: true,
    annotations: { readOnlyHint: false, idempotentHint: true, openWorldHint: false },
    async run(ctx, call, args) {
      const { entry, created } = await putAgentMemory(ctx, call.principal, args.agent_id ?? agentId(call), args.key, {
        value: args.value,
        ttl_seconds: args.ttl_seconds,
      });
      return { value: { ...entry, created } };
    },
  }),
  tool({
    name: 'memory_delete',
    title: 'Delete a memory entry',
    description: "Delete one key of this agent's own key/value memory.",
    inputSchema: MemoryDeleteArgs,
    agentsOnly: true,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    async run(ctx, call, args) {
      await deleteAgentMemory(ctx, call.principal, agentId(call), args.key);
      return { value: { key: args.key, deleted: true } };
    },
  }),
  tool({
    name: 'memory_list',
    title: 'List memory entries',
    description:
      "List keys and values of this agent's key/value memory (or of a granted agent's, agent_id) in key order, optionally under a prefix.",
    inputSchema: MemoryListArgs,
    agentsOnly: true,
    annotations: { readOnlyHint: true, openWorldHint: false },
    async run(ctx, call, args) {
      const { agent_id, ...q } = args;
      const page = await listAgentMemory(ctx, call.principal, agent_id ?? agentId(call), q);
      return { value: { entries: page.data, next_cursor: page.next_cursor } };
    },
  }),
];

/**
 * `POST /v1/agents/:id/execute` for an MCP call: `session_id`, else the MCP session's own
 * platform session. A failed upstream call (`status: failed`) is a tool error; its record is the
 * structured content either way. `approval_id` re-submits a call held for approval (`server.ts`
 * answers the hold itself: {@link APPROVAL_META}).
 */
export async function runTool(
  ctx: AppContext,
  call: McpCall,
  args: {
    service: string;
    tool: string;
    arguments?: Record<string, unknown>;
    session_id?: string;
    approval_id?: string;
  },
): Promise<ToolOutcome> {
  let sessionId = args.session_id;
  const session = async (): Promise<string> => {
    if (!call.session)
      throw new AppError(
        'validation_failed',
        'session_id is required when the client has no MCP session (Mcp-Session-Id)',
        { errors: [{ pointer: '/session_id', message: 'is required' }] },
      );
    return (sessionId = await platformSessionOf(ctx, call.actor, call.session));
  };
  const { result } = await executeTool(ctx, call.principal, sessionId ?? session, {
    service: args.service,
    tool: args.tool,
    arguments: args.arguments,
    ...(args.approval_id !== undefined ? { approval_id: args.approval_id } : {}),
  });
  return { value: { ...result, session_id: sessionId }, isError: result.status === 'failed' };
}
