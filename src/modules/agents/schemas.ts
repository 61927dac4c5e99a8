/** TypeBox schemas of the agents routes (spec "Agents (v2)") and the agent token endpoint (RFC 6749 §4.4, §5). */
import { Type } from 'typebox';
import { Nullable, PageQuery, Timestamp } from '../../http/schemas.js';
import { PendingChangeSchema } from '../subscriptions/schemas.js';

const Name = Type.String({ minLength: 1, maxLength: 100 });
const Description = Type.String({ maxLength: 2000 });
const Metadata = Type.Record(Type.String({ maxLength: 100 }), Type.Unknown(), {
  maxProperties: 50,
  description: 'free-form JSON object, at most 16 KiB',
});

export const SecretSchema = Type.Object({
  id: Type.String({ description: 'secret id (`sec_…`), also the `sid` claim of tokens issued with it' }),
  created_at: Timestamp,
  last_used_at: Nullable(Timestamp),
  expires_at: Nullable(Timestamp, {
    description: 'null while it is the current secret; set when a rotation gave it a grace period',
  }),
});

export const AgentSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Nullable(Type.String()),
  client_id: Type.String(),
  status: Type.Union([Type.Literal('active'), Type.Literal('disabled'), Type.Literal('deleted')]),
  metadata: Type.Record(Type.String(), Type.Unknown()),
  secrets: Type.Array(SecretSchema, {
    description: 'live client secrets, newest first: two during a rotation grace period (never the secret itself)',
  }),
  created_at: Timestamp,
  updated_at: Timestamp,
  deleted_at: Nullable(Timestamp),
});

export const AgentWithSecretSchema = Type.Intersect([
  AgentSchema,
  Type.Object({ client_secret: Type.String({ description: 'shown only in this answer; stored as a scrypt hash' }) }),
]);

/** Null first: with ajv `coerceTypes`, `[string, null]` would turn `null` into `""`. */
const NullableDescription = Type.Union([Type.Null(), Description]);

export const CreateAgentBody = Type.Object(
  { name: Name, description: Type.Optional(NullableDescription), metadata: Type.Optional(Metadata) },
  { additionalProperties: false },
);

export const UpdateAgentBody = Type.Object(
  {
    name: Type.Optional(Name),
    description: Type.Optional(NullableDescription),
    metadata: Type.Optional(Metadata),
    status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('disabled')])),
  },
  { additionalProperties: false },
);

export const ListAgentsQuery = Type.Object({
  ...PageQuery.properties,
  include_deleted: Type.Optional(Type.Boolean({ default: false })),
});
export const ToolsQuery = PageQuery;

export const RotateSecretBody = Type.Object(
  {
    grace_period_seconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 86400,
        description: 'how long older secrets (and their tokens) keep working; default 0',
      }),
    ),
  },
  { additionalProperties: false },
);

export const AgentToolSchema = Type.Object({
  service_id: Type.String(),
  service: Type.String({ description: 'service name' }),
  subscribed_at: Timestamp,
});

/** One tool subscription of the agent with its pending definition changes (`GET /v2/agents/:id/tools/changes`). */
export const AgentToolChangesSchema = Type.Object({
  ...AgentToolSchema.properties,
  pending_changes: Type.Array(PendingChangeSchema, {
    description:
      'tools of the service whose definition changed (or that were added) since the agent pinned them, as `GET /subscriptions/:id` lists them for an account; empty when none',
  }),
});

export const ToolChangesQuery = Type.Object({
  ...PageQuery.properties,
  service: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 200,
      description: 'only this service (name or id); 404 when the agent is not subscribed to it',
    }),
  ),
});

export const SubscribeToolBody = Type.Object(
  { service: Type.String({ minLength: 1, maxLength: 200, description: 'service name (or id)' }) },
  { additionalProperties: false },
);
export const UnsubscribeToolQuery = Type.Object({
  service: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
});
export const UnsubscribeToolBody = Type.Object(
  { service: Type.String({ minLength: 1, maxLength: 200 }) },
  { additionalProperties: false },
);

/**
 * Token request parameters (RFC 6749 §4.4.2 and §2.3.1). Form-encoded or JSON. Unrecognised
 * parameters are ignored (§3.2), so no `additionalProperties: false` here.
 */
export const TokenRequestBody = Type.Object({
  grant_type: Type.Optional(Type.Unknown({ description: 'must be "client_credentials"' })),
  scope: Type.Optional(
    Type.Unknown({
      description: 'space-delimited: memory:read memory:write permissions:manage tools:execute (default: all)',
    }),
  ),
  client_id: Type.Optional(Type.Unknown({ description: 'client_secret_post only' })),
  client_secret: Type.Optional(Type.Unknown({ description: 'client_secret_post only' })),
});

export const TokenResponseSchema = Type.Object({
  access_token: Type.String(),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer(),
  scope: Type.String(),
});

/** RFC 6749 §5.2 error body. */
export const OAuthErrorSchema = Type.Object({
  error: Type.String(),
  error_description: Type.String(),
});
