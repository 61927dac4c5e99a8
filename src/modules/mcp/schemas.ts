/**
 * Input schemas of the MCP tools (JSON Schema objects, MCP `Tool.inputSchema`), written once in
 * TypeBox so the handlers get their types from the same schema (STYLE.md).
 */
import { Type, type Static } from 'typebox';

const Key = Type.String({ minLength: 1, maxLength: 256, description: 'the entry key' });
const AgentId = Type.String({
  minLength: 1,
  maxLength: 100,
  description: "another agent's id (agt_…) whose memory this agent holds a grant for; absent = own memory",
});
const strict = { additionalProperties: false };

export const SearchToolsArgs = Type.Object(
  {
    query: Type.String({ minLength: 1, maxLength: 200, description: 'what the tool should do, in plain words' }),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, default: 10 })),
    category: Type.Optional(
      Type.String({ minLength: 1, maxLength: 100, description: 'only tools of services in this category' }),
    ),
  },
  strict,
);

export const DescribeToolArgs = Type.Object(
  {
    service: Type.String({ minLength: 1, maxLength: 100, description: 'service name or id (from search_tools)' }),
    tool: Type.String({ minLength: 1, maxLength: 200, description: 'tool name or id' }),
  },
  strict,
);

export const ExecuteToolArgs = Type.Object(
  {
    service: Type.String({ minLength: 1, maxLength: 100, description: 'service name or id' }),
    tool: Type.String({ minLength: 1, maxLength: 200, description: 'tool name or id' }),
    arguments: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        description: "the tool's arguments, matching its input_schema (describe_tool)",
      }),
    ),
    session_id: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description: 'a platform session (ses_…) to record the call in; absent = this connection’s session',
      }),
    ),
    approval_id: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description: 'after an approval_required result: the approval (apr_…) of this exact call, once granted',
      }),
    ),
  },
  strict,
);

export const RememberArgs = Type.Object(
  {
    content: Type.String({ minLength: 1, description: 'the fact or note to keep' }),
    metadata: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), { description: 'free-form JSON object stored with it (≤ 8 KiB)' }),
    ),
  },
  strict,
);

export const RecallArgs = Type.Object(
  {
    query: Type.String({ minLength: 1, maxLength: 2000 }),
    threshold: Type.Optional(Type.Number({ minimum: 0, maximum: 1, description: 'minimum cosine similarity (0..1)' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, default: 10 })),
  },
  strict,
);

export const MemoryGetArgs = Type.Object({ key: Key, agent_id: Type.Optional(AgentId) }, strict);

export const MemoryPutArgs = Type.Object(
  {
    key: Key,
    value: Type.Unknown({ description: 'any JSON value' }),
    ttl_seconds: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 315_360_000, description: 'expire after this many seconds' }),
    ),
    agent_id: Type.Optional(AgentId),
  },
  { ...strict, required: ['key', 'value'] },
);

export const MemoryDeleteArgs = Type.Object({ key: Key }, strict);

export const MemoryListArgs = Type.Object(
  {
    prefix: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
    cursor: Type.Optional(
      Type.String({ minLength: 1, maxLength: 600, description: 'next_cursor of the previous page' }),
    ),
    agent_id: Type.Optional(AgentId),
  },
  strict,
);

export type SearchToolsInput = Static<typeof SearchToolsArgs>;
export type DescribeToolInput = Static<typeof DescribeToolArgs>;
export type ExecuteToolInput = Static<typeof ExecuteToolArgs>;
export type RememberInput = Static<typeof RememberArgs>;
export type RecallInput = Static<typeof RecallArgs>;
export type MemoryGetInput = Static<typeof MemoryGetArgs>;
export type MemoryPutInput = Static<typeof MemoryPutArgs>;
export type MemoryDeleteInput = Static<typeof MemoryDeleteArgs>;
export type MemoryListInput = Static<typeof MemoryListArgs>;
