/** TypeBox schemas of the outbound webhooks routes (`/v2/webhooks`). */
import { Type } from 'typebox';
import { Nullable, Timestamp } from '../../http/schemas.js';

/** Event types an endpoint may subscribe to (`*`: all). */
export const EVENT_TYPES = [
  'execution.failed',
  'invocation.completed',
  'invocation.failed',
  'deployment.activated',
  'deployment.failed',
  'connection.expired',
  'quota.exhausted',
  'approval.requested',
  'webhook.endpoint_disabled',
] as const;

const EventType = Type.Union([...EVENT_TYPES.map((e) => Type.Literal(e)), Type.Literal('*')], {
  description:
    '`execution.failed` (a tool execution failed), `invocation.completed` / `invocation.failed` (an invocation of a deployed agent succeeded / failed or timed out), `deployment.activated` / `deployment.failed` (a deployed version became active / failed its prepare step), `connection.expired` (a connection needs reconnecting: its refresh was refused), `quota.exhausted` (a quota window is used up; once per window), `approval.requested` (a tool call waits for approval), `webhook.endpoint_disabled` (another endpoint was disabled after sustained failure), or `*` (all)',
});

export const EndpointSchema = Type.Object({
  id: Type.String(),
  url: Type.String(),
  description: Nullable(Type.String()),
  events: Type.Array(Type.String()),
  enabled: Type.Boolean(),
  disabled_reason: Nullable(Type.String()),
  failing_since: Nullable(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const EndpointCreatedSchema = Type.Intersect([
  EndpointSchema,
  Type.Object({ secret: Type.String({ description: 'Standard Webhooks signing secret (whsec_…), shown once' }) }),
]);

const Url = Type.String({
  minLength: 8,
  maxLength: 2048,
  format: 'uri',
  description: 'http(s) URL; checked against private and internal addresses at every delivery',
});

export const CreateEndpointBody = Type.Object(
  {
    url: Url,
    events: Type.Array(EventType, { minItems: 1, maxItems: 20, uniqueItems: true }),
    description: Type.Optional(Type.String({ maxLength: 256 })),
  },
  { additionalProperties: false },
);

export const UpdateEndpointBody = Type.Object(
  {
    url: Type.Optional(Url),
    events: Type.Optional(Type.Array(EventType, { minItems: 1, maxItems: 20, uniqueItems: true })),
    description: Type.Optional(Type.Union([Type.Null(), Type.String({ maxLength: 256 })])),
    enabled: Type.Optional(Type.Boolean({ description: 'true re-enables a disabled endpoint' })),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const MessageSchema = Type.Object({
  id: Type.String({ description: 'also the webhook-id header: receivers deduplicate on it' }),
  endpoint_id: Type.String(),
  event_type: Type.String(),
  payload: Type.Unknown(),
  status: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')], {
    description: '`failed`: retried for 24 h without success (the dead-letter list)',
  }),
  attempts: Type.Integer(),
  attempt_log: Type.Array(
    Type.Object({
      at: Timestamp,
      status: Nullable(Type.Integer()),
      latency_ms: Nullable(Type.Integer()),
      error: Nullable(Type.String()),
    }),
  ),
  next_attempt_at: Nullable(Timestamp),
  created_at: Timestamp,
  delivered_at: Nullable(Timestamp),
});

export const MessagesQuery = Type.Object({
  status: Type.Optional(Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')])),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
});

export const MessageParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 100 }),
  messageId: Type.String({ minLength: 1, maxLength: 100 }),
});
