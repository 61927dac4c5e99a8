/** TypeBox schemas of the session routes (spec group "Executor (sessions)"). */
import { Type } from 'typebox';
import { Nullable, PageQuery, Timestamp } from '../../http/schemas.js';

const SessionStatus = Type.Union([Type.Literal('active'), Type.Literal('closed')]);
const Metadata = Type.Record(Type.String(), Type.Unknown());
const ErrorInfo = Type.Object({ code: Type.String(), message: Type.String() });

export const SessionSchema = Type.Object({
  id: Type.String(),
  name: Nullable(Type.String()),
  agent_id: Nullable(Type.String()),
  status: SessionStatus,
  metadata: Metadata,
  execution_count: Type.Integer(),
  last_activity_at: Nullable(Timestamp),
  closed_at: Nullable(Timestamp),
  created_at: Timestamp,
});

export const ExecutionSchema = Type.Object({
  id: Type.String(),
  session_id: Type.String(),
  agent_id: Nullable(Type.String()),
  service_id: Type.String(),
  tool_id: Type.String(),
  tool_name: Type.String(),
  arguments: Metadata,
  status: Type.Union([Type.Literal('succeeded'), Type.Literal('failed')]),
  http_status: Nullable(Type.Integer()),
  output: Type.Unknown(),
  error: Nullable(ErrorInfo),
  duration_ms: Type.Integer(),
  created_at: Timestamp,
});

export const SessionDetailsSchema = Type.Intersect([
  SessionSchema,
  Type.Object({ executions: Type.Array(ExecutionSchema, { description: 'latest executions, newest first' }) }),
]);

export const CreateSessionBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    agent_id: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description: 'one of your agents (`agt_…`); agents get their own id',
      }),
    ),
    metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { maxProperties: 50 })),
  },
  { additionalProperties: false },
);

export const SessionListQuery = Type.Intersect([
  PageQuery,
  Type.Object({
    status: Type.Optional(SessionStatus),
    agent_id: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  }),
]);

export const ExecuteBody = Type.Object(
  {
    service: Type.String({ minLength: 1, maxLength: 200, description: 'service name or id' }),
    tool: Type.String({ minLength: 1, maxLength: 200, description: 'tool name, former name (alias) or id' }),
    arguments: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    timeout_ms: Type.Optional(
      Type.Integer({
        minimum: 100,
        maximum: 900_000,
        description: 'upstream timeout; capped by UPSTREAM_MAX_TIMEOUT_MS',
      }),
    ),
    approval_id: Type.Optional(
      Type.String({
        maxLength: 64,
        description: 'a granted approval (`apr_…`) of exactly this call, after a 202 `approval_required` (single use)',
      }),
    ),
  },
  { additionalProperties: false },
);

export const ExecuteResultSchema = Type.Object({
  execution_id: Type.String(),
  status: Type.Union([Type.Literal('succeeded'), Type.Literal('failed')]),
  http_status: Type.Optional(Type.Integer({ description: 'upstream HTTP status (HTTP tools)' })),
  output: Type.Unknown({ description: 'upstream JSON body, or text when the body is not JSON' }),
  error: Type.Optional(ErrorInfo),
  duration_ms: Type.Integer(),
});
