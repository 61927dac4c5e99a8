/** TypeBox schemas of the deployment routes (spec group "Deployment (v2)"). */
import { Type, type Static } from 'typebox';
import { Nullable, Timestamp } from '../../http/schemas.js';

export const DeploymentStatus = Type.Union(
  [
    Type.Literal('preparing'),
    Type.Literal('active'),
    Type.Literal('failed'),
    Type.Literal('superseded'),
    Type.Literal('stopped'),
    Type.Literal('rolled_back'),
  ],
  {
    description:
      'preparing → active | failed; active → superseded (a newer version became active) | stopped | rolled_back',
  },
);

export const DeploymentSchema = Type.Object({
  id: Type.String({ description: 'dep_…' }),
  agent_id: Type.String(),
  version: Type.Integer({ minimum: 1, description: '1, 2, … per agent' }),
  status: DeploymentStatus,
  entrypoint: Type.String({ description: 'module loaded by the sandbox, relative to the artifact root' }),
  description: Nullable(Type.String()),
  artifact: Type.Object({
    sha256: Type.String(),
    size_bytes: Type.Integer(),
    files: Type.Integer({ description: 'entries in the archive' }),
    unpacked_bytes: Type.Integer(),
  }),
  env_keys: Type.Array(Type.String(), {
    description: 'names of the environment variables (values are never returned)',
  }),
  egress: Type.Array(Type.String(), {
    description:
      'egress allow-list: hosts the code may reach through the platform proxy ("host", "*.domain", optional ":port"; without a port 80 and 443); empty: no network',
  }),
  failure_reason: Nullable(Type.String()),
  created_by: Type.String(),
  created_at: Timestamp,
  updated_at: Timestamp,
  prepared_at: Nullable(Timestamp),
  activated_at: Nullable(Timestamp),
});

/** Multipart form of `POST /v2/agents/:id/deploy` (documentation; the handler parses the parts). */
export const DeployForm = Type.Object({
  artifact: Type.String({
    format: 'binary',
    description: 'gzip-compressed tar archive (.tar.gz / .tgz); the first file part if none is named "artifact"',
  }),
  entrypoint: Type.Optional(
    Type.String({
      description: 'module to load, relative path; default package.json "main", else index.js / index.mjs / index.cjs',
    }),
  ),
  env: Type.Optional(
    Type.String({ description: 'JSON object of environment variables (string values), stored encrypted' }),
  ),
  egress: Type.Optional(
    Type.String({
      description:
        'JSON array of egress patterns ("api.example.com", "*.example.org:443"); overrides "egress" of agent.json in the bundle; default: none (no network)',
    }),
  ),
  description: Type.Optional(Type.String({ maxLength: 256 })),
});

/** Largest value of a PostgreSQL `integer` column (deployment versions, timeouts): larger input is a 400, not a database error. */
const INT4_MAX = 2_147_483_647;

export const RollbackBody = Type.Object(
  {
    version: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: INT4_MAX,
        description: 'version to make active; default: the newest earlier good version',
      }),
    ),
  },
  { additionalProperties: false },
);

export const RedeployBody = Type.Object(
  {
    version: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: INT4_MAX,
        description: 'version to prepare again; default: the current version',
      }),
    ),
  },
  { additionalProperties: false },
);

export const InvokeBody = Type.Object(
  {
    input: Type.Optional(Type.Unknown({ description: 'any JSON; the handler receives it as its first argument' })),
    timeout_ms: Type.Optional(
      Type.Integer({
        minimum: 100,
        maximum: INT4_MAX,
        description: 'wall-clock limit of the run (process start included), ms; at most SANDBOX_MAX_TIMEOUT_MS',
      }),
    ),
    async: Type.Optional(Type.Boolean({ description: 'queue the run and answer 202 at once (same as ?async=true)' })),
  },
  { additionalProperties: false },
);

export const InvokeQuery = Type.Object({ async: Type.Optional(Type.Boolean()) });

export const InvocationStatus = Type.Union([
  Type.Literal('queued'),
  Type.Literal('running'),
  Type.Literal('succeeded'),
  Type.Literal('failed'),
  Type.Literal('timed_out'),
]);

export const InvocationError = Type.Object({
  code: Type.String({
    description:
      'handler_error, load_error, invalid_handler, permission_denied, timeout, out_of_memory, output_too_large, crashed, …',
  }),
  message: Type.String(),
  name: Type.Optional(Type.String()),
  stack: Type.Optional(Type.String()),
  permission: Type.Optional(Type.String()),
  resource: Type.Optional(Type.String()),
});

export const LogEntrySchema = Type.Object({
  ts: Timestamp,
  stream: Type.Union([Type.Literal('stdout'), Type.Literal('stderr'), Type.Literal('platform')], {
    description: 'platform: a context.log line, or an event of the platform (a refused egress attempt, …)',
  }),
  message: Type.String(),
  level: Type.Optional(Type.Union([Type.Literal('info'), Type.Literal('warn'), Type.Literal('error')])),
  fields: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
});

/** One platform call of the handler (`context.tools.execute`, `context.memory.get`, …). */
export const CallRecordSchema = Type.Object({
  op: Type.String({
    description: 'tools.execute, tools.search, memory.get|put|delete|list|read, userMemory.search|add',
  }),
  target: Type.Optional(Type.String({ description: 'service/tool, memory key, or query' })),
  status: Type.Union([Type.Literal('ok'), Type.Literal('error')]),
  error: Type.Optional(Type.String({ description: 'the problem code of a refused or failed call' })),
  execution_id: Type.Optional(
    Type.String({ description: 'exe_… of a tool execution (in the session of the invocation)' }),
  ),
  duration_ms: Type.Number(),
  at: Timestamp,
});

const invocationFields = {
  id: Type.String({ description: 'inv_…' }),
  agent_id: Type.String(),
  deployment_id: Type.String(),
  version: Type.Integer(),
  status: InvocationStatus,
  async: Type.Boolean(),
  trigger: Type.Union([Type.Literal('api'), Type.Literal('schedule'), Type.Literal('trigger'), Type.Literal('a2a')], {
    description:
      'what started it: api (POST …/invoke), schedule (a cron tick), trigger (a delivery to /hooks/:id), a2a (an A2A message)',
  }),
  error: Nullable(InvocationError),
  timeout_ms: Type.Integer(),
  duration_ms: Nullable(
    Type.Integer({ description: 'cold start: process start + module load + handler; warm: the handler alone, ms' }),
  ),
  cpu_ms: Nullable(
    Type.Integer({
      description:
        'CPU time (user + system) of the execution environment during the invocation, ms (10 ms resolution; module load excluded), measured by the host; null until it ran or when unavailable',
    }),
  ),
  cold: Nullable(
    Type.Boolean({ description: 'true when the invocation started a new execution environment; null until it ran' }),
  ),
  created_at: Timestamp,
  started_at: Nullable(Timestamp),
  finished_at: Nullable(Timestamp),
};

/** List item: no input, output or logs. */
export const InvocationSummarySchema = Type.Object(invocationFields);

/** Full record (invoke answer and execution detail). */
export const InvocationSchema = Type.Object({
  ...invocationFields,
  input: Type.Unknown(),
  output: Type.Unknown(),
  logs: Type.Array(LogEntrySchema),
  logs_truncated: Type.Boolean(),
  calls: Type.Array(CallRecordSchema, { description: 'platform calls the handler made, in order (at most 200 kept)' }),
});

export const ExecutionParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 100 }),
  exeId: Type.String({ minLength: 1, maxLength: 100 }),
});

export const FollowQuery = Type.Object(
  {
    follow: Type.Optional(
      Type.Boolean({
        default: false,
        description: 'true: stream the lines as Server-Sent Events (text/event-stream) until the invocation ends',
      }),
    ),
  },
  { additionalProperties: false },
);

/** A log line with its invocation (log listings and SSE `log` events). */
export const FollowedLineSchema = Type.Intersect([LogEntrySchema, Type.Object({ invocation_id: Type.String() })]);
export const LogLinesSchema = Type.Object({ data: Type.Array(FollowedLineSchema), logs_truncated: Type.Boolean() });

export type DeploymentView = Static<typeof DeploymentSchema>;
/** Full invocation record (invoke answer, execution detail). */
export type InvocationView = Static<typeof InvocationSchema>;
/** List form: no `input`, `output`, `logs`, `logs_truncated`. */
export type InvocationSummary = Static<typeof InvocationSummarySchema>;
