/** TypeBox schemas of the analytics routes (Stripe/PostHog-like: a period, totals, zero-filled daily series, breakdowns). */
import { Type, type TSchema } from 'typebox';
import { Nullable, Timestamp } from '../../http/schemas.js';

function windowParam(def: string) {
  return Type.Union([Type.Literal('24h'), Type.Literal('7d'), Type.Literal('30d'), Type.Literal('90d')], {
    description: `period ending now (default ${def}); not combinable with from/to`,
  });
}

/** `window` or `from`/`to` (ISO 8601; at most 366 days apart; `to` defaults to now). */
function periodQuery<P extends Record<string, TSchema>>(def: string, extra: P) {
  return Type.Object(
    {
      window: Type.Optional(windowParam(def)),
      from: Type.Optional(Type.String({ format: 'date-time', description: 'start (inclusive), ISO 8601' })),
      to: Type.Optional(Type.String({ format: 'date-time', description: 'end (exclusive), ISO 8601; default now' })),
      ...extra,
    },
    { additionalProperties: false },
  );
}

export const PeriodSchema = Type.Object({
  from: Timestamp,
  to: Timestamp,
  window: Nullable(Type.String()),
  from_day: Type.String({ description: 'first UTC day covered by the daily usage counters' }),
  to_day: Type.String({ description: 'last UTC day covered by the daily usage counters' }),
});

const Usage = {
  calls: Type.Integer(),
  successes: Type.Integer(),
  failures: Type.Integer(),
  success_rate: Nullable(Type.Number({ description: 'successes / calls (null without calls)' })),
  avg_duration_ms: Type.Integer(),
};

const Day = Type.Object({ day: Type.String(), ...Usage, success_rate: Type.Optional(Nullable(Type.Number())) });

// ------------------------------------------------------------------ user

export const UserQuery = periodQuery('30d', {});

export const UserAnalytics = Type.Object({
  period: PeriodSchema,
  totals: Type.Object({
    ...Usage,
    p50_duration_ms: Nullable(Type.Integer({ description: 'from the executions of the exact period' })),
    p95_duration_ms: Nullable(Type.Integer()),
  }),
  by_day: Type.Array(Day),
  top_tools: Type.Array(
    Type.Object({
      tool_id: Type.String(),
      tool_name: Type.String(),
      service_id: Type.String(),
      service_name: Nullable(Type.String()),
      ...Usage,
    }),
  ),
  top_services: Type.Array(Type.Object({ service_id: Type.String(), service_name: Nullable(Type.String()), ...Usage })),
  sessions: Type.Object({ total: Type.Integer(), active: Type.Integer(), created_in_period: Type.Integer() }),
  memories: Type.Object({
    total: Type.Integer(),
    by_source: Type.Object({ explicit: Type.Integer(), execution: Type.Integer(), summary: Type.Integer() }),
    summaries: Type.Integer(),
  }),
});

// ------------------------------------------------------------------ services

export const ServicesQuery = periodQuery('30d', {
  service_id: Type.Optional(
    Type.String({ minLength: 1, maxLength: 100, description: 'one service: adds by_day and tools' }),
  ),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 100 })),
});

const Breakdown = { ...Usage, last_day: Nullable(Type.String()) };
const OwnerBreakdown = Type.Object({
  ...Breakdown,
  unique_users: Type.Integer({ description: 'distinct accounts that called it' }),
});

export const ServicesAnalytics = Type.Object({
  period: PeriodSchema,
  data: Type.Array(
    Type.Object({
      service: Type.Object({
        id: Type.String(),
        name: Type.String(),
        display_name: Type.String(),
        status: Type.String(),
      }),
      owned: Type.Boolean(),
      usage: Nullable(OwnerBreakdown),
      my_usage: Type.Object(Breakdown),
      by_day: Type.Optional(Type.Array(Day)),
      tools: Type.Optional(
        Type.Array(
          Type.Object({
            tool_id: Type.String(),
            tool_name: Type.String(),
            ...Breakdown,
            unique_users: Type.Optional(Type.Integer()),
            p50_duration_ms: Nullable(Type.Integer()),
            p95_duration_ms: Nullable(Type.Integer()),
          }),
        ),
      ),
    }),
  ),
});

// ------------------------------------------------------------------ tools

export const ToolsQuery = periodQuery('30d', {
  scope: Type.Optional(
    Type.Union([Type.Literal('mine'), Type.Literal('owned')], {
      description: "mine: the caller's calls (default); owned: all users' calls of the caller's services' tools",
    }),
  ),
  service_id: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
});

export const ToolsAnalytics = Type.Object({
  period: PeriodSchema,
  scope: Type.String(),
  data: Type.Array(
    Type.Object({
      tool_id: Type.String(),
      tool_name: Type.String(),
      service_id: Type.String(),
      service_name: Nullable(Type.String()),
      ...Breakdown,
      unique_users: Type.Optional(Type.Integer()),
      p50_duration_ms: Nullable(Type.Integer()),
      p95_duration_ms: Nullable(Type.Integer()),
    }),
  ),
});

// ------------------------------------------------------------------ sessions

export const SessionsQuery = periodQuery('30d', {
  agent_id: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
});

const Dist = (t: TSchema) => Type.Object({ avg: t, p50: t, p95: t, max: t });

export const SessionsAnalytics = Type.Object({
  period: PeriodSchema,
  total: Type.Integer({ description: 'sessions created in the period' }),
  by_status: Type.Object({ active: Type.Integer(), closed: Type.Integer() }),
  empty: Type.Integer({ description: 'sessions without executions' }),
  executions: Type.Integer(),
  executions_per_session: Dist(Type.Number()),
  duration_ms: Dist(Nullable(Type.Integer())),
  by_day: Type.Array(Type.Object({ day: Type.String(), sessions: Type.Integer(), executions: Type.Integer() })),
  by_agent: Type.Array(
    Type.Object({ agent_id: Nullable(Type.String()), sessions: Type.Integer(), executions: Type.Integer() }),
  ),
  currently_active: Type.Integer({ description: 'active sessions now, whenever created' }),
});

// ------------------------------------------------------------------ realtime

export const RealtimeQuery = Type.Object(
  {
    scope: Type.Optional(
      Type.Union([Type.Literal('account'), Type.Literal('system')], {
        description: "account (default): the caller's; system: the platform (admin)",
      }),
    ),
  },
  { additionalProperties: false },
);

const RealtimeWindow = Type.Object({
  window_seconds: Type.Integer(),
  requests: Type.Integer(),
  requests_per_second: Type.Number(),
  errors: Type.Integer({ description: '5xx answers' }),
  client_errors: Type.Integer({ description: '4xx answers' }),
  error_rate: Nullable(Type.Number()),
  p50_ms: Nullable(Type.Number()),
  p95_ms: Nullable(Type.Number()),
  max_ms: Nullable(Type.Number()),
  executions: Type.Integer(),
  execution_failures: Type.Integer(),
  execution_p50_ms: Nullable(Type.Integer()),
  execution_p95_ms: Nullable(Type.Integer()),
});

export const RealtimeAnalytics = Type.Object({
  at: Timestamp,
  scope: Type.String(),
  backend: Type.Union([Type.Literal('redis'), Type.Literal('memory')], {
    description: 'redis: shared by all instances; memory: this instance only',
  }),
  last_1m: RealtimeWindow,
  last_5m: RealtimeWindow,
  active_sessions: Type.Integer({ description: 'active sessions with activity in the last 5 minutes' }),
});

// ------------------------------------------------------------------ system

const Counts = Type.Record(Type.String(), Type.Integer());

export const SystemQuery = periodQuery('30d', {});

export const SystemAnalytics = Type.Object({
  period: PeriodSchema,
  users: Type.Object({
    total: Type.Integer(),
    created_in_period: Type.Integer(),
    active_in_period: Type.Integer(),
    by_role: Counts,
  }),
  services: Type.Object({ total: Type.Integer(), by_status: Counts }),
  tools: Type.Object({ total: Type.Integer() }),
  executions: Type.Object({ ...Usage, error_rate: Nullable(Type.Number()) }),
  sessions: Type.Object({ total: Type.Integer(), active: Type.Integer(), created_in_period: Type.Integer() }),
  agents: Type.Object({ total: Type.Integer(), by_status: Counts }),
  deployments: Type.Object({ total: Type.Integer(), by_status: Counts }),
  invocations: Type.Object({ total: Type.Integer(), by_status: Counts }),
  memories: Type.Object({ total: Type.Integer(), by_source: Counts, summaries: Type.Integer() }),
  subscriptions: Type.Object({ active: Type.Integer(), canceled: Type.Integer(), by_plan: Counts }),
  requests: Type.Object({
    total: Type.Integer(),
    errors: Type.Integer(),
    client_errors: Type.Integer(),
    error_rate: Nullable(Type.Number()),
    routes: Type.Integer(),
  }),
});

// ------------------------------------------------------------------ endpoints

export const EndpointsQuery = periodQuery('24h', {
  method: Type.Optional(Type.String({ pattern: '^[A-Za-z]{3,7}$' })),
  route: Type.Optional(
    Type.String({ minLength: 1, maxLength: 200, description: 'route template prefix, e.g. /v1/agents' }),
  ),
  sort: Type.Optional(
    Type.Union([Type.Literal('requests'), Type.Literal('p95'), Type.Literal('errors')], { default: 'requests' }),
  ),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 100 })),
});

export const EndpointsAnalytics = Type.Object({
  period: PeriodSchema,
  totals: Type.Object({
    requests: Type.Integer(),
    errors: Type.Integer(),
    client_errors: Type.Integer(),
    error_rate: Nullable(Type.Number()),
    routes: Type.Integer(),
  }),
  data: Type.Array(
    Type.Object({
      method: Type.String(),
      route: Type.String(),
      operation_id: Nullable(Type.String()),
      requests: Type.Integer(),
      errors: Type.Integer(),
      client_errors: Type.Integer(),
      error_rate: Type.Number(),
      avg_ms: Type.Number(),
      p50_ms: Nullable(Type.Number()),
      p95_ms: Nullable(Type.Number()),
      p99_ms: Nullable(Type.Number()),
      max_ms: Type.Number(),
      by_status: Counts,
    }),
  ),
});
