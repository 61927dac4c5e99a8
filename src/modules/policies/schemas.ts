/** TypeBox schemas of the policy routes (`/v1/policies`). */
import { Type } from 'typebox';
import { Nullable, Timestamp } from '../../http/schemas.js';

const Scope = Type.Union([Type.Literal('account'), Type.Literal('global')], {
  description:
    '`account`: binds the account’s own calls, its agents and API keys; `global` (admins only): binds everyone',
});

const Source = Type.String({
  minLength: 1,
  maxLength: 20_000,
  description:
    'One Cedar `forbid` statement, validated against `GET /v1/policies/schema`; `@approval("required")` holds a matching call for a person’s approval instead of denying it',
});

export const PolicySchema = Type.Object({
  id: Type.String({ description: '`pol_…`; the id a denial names' }),
  scope: Scope,
  owner_id: Type.String({ description: 'the owning account (the creating admin for a global policy)' }),
  description: Type.String(),
  source: Type.String({ description: 'the Cedar text as written' }),
  enabled: Type.Boolean(),
  approval: Type.Boolean({ description: 'true when the policy carries `@approval("required")`' }),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const CreatePolicyBody = Type.Object(
  {
    source: Source,
    description: Type.Optional(Type.String({ maxLength: 1000 })),
    enabled: Type.Optional(Type.Boolean({ default: true })),
    scope: Type.Optional(Scope),
  },
  { additionalProperties: false },
);

export const UpdatePolicyBody = Type.Object(
  {
    source: Type.Optional(Source),
    description: Type.Optional(Type.String({ maxLength: 1000 })),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const PolicyListQuery = Type.Object({
  scope: Type.Optional(Scope),
  enabled: Type.Optional(Type.Boolean()),
});

const Counts = Type.Object(
  {
    last_hour: Type.Integer({ minimum: 0 }),
    last_day: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
);

export const EvaluateBody = Type.Object(
  {
    service: Type.String({ minLength: 1, maxLength: 200, description: 'service id or name' }),
    tool: Type.String({ minLength: 1, maxLength: 200, description: 'tool name or id' }),
    arguments: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    agent_id: Type.Optional(
      Type.String({
        maxLength: 64,
        description: 'evaluate as this agent of the account (default: the account itself)',
      }),
    ),
    scopes: Type.Optional(
      Type.Array(Type.String({ maxLength: 64 }), {
        maxItems: 20,
        description: 'the credential’s scopes (default: all)',
      }),
    ),
    at: Type.Optional(Type.String({ format: 'date-time', description: 'evaluation instant (default: now)' })),
    calls: Type.Optional(Counts),
    source: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 20_000,
        description: 'a draft policy evaluated together with the enabled ones (id `draft`); not stored',
      }),
    ),
  },
  { additionalProperties: false },
);

export const EvaluationSchema = Type.Object({
  decision: Type.Union([Type.Literal('allow'), Type.Literal('deny'), Type.Literal('approval')]),
  policy_ids: Type.Array(Type.String(), { description: 'the policies that decided (the forbids that matched)' }),
  errors: Type.Array(Type.Object({ policy_id: Type.String(), message: Type.String() }), {
    description: 'policies that failed to evaluate (they do not apply)',
  }),
  evaluated: Type.Integer({ description: 'how many policies could apply to this principal and tool' }),
  principal: Type.String(),
  resource: Type.String(),
  context: Type.Record(Type.String(), Type.Unknown(), { description: 'the context as the policies saw it' }),
});

export const DecisionSchema = Type.Object({
  id: Type.String(),
  principal: Type.String(),
  agent_id: Nullable(Type.String()),
  service_id: Type.String(),
  tool_id: Type.String(),
  tool: Type.String({ description: '`<service>/<tool>`' }),
  decision: Type.Union([Type.Literal('allow'), Type.Literal('deny'), Type.Literal('approval')]),
  policy_ids: Type.Array(Type.String()),
  errors: Type.Array(Type.Object({ policy_id: Type.String(), message: Type.String() })),
  at: Timestamp,
});

export const DecisionListQuery = Type.Object({
  decision: Type.Optional(Type.Union([Type.Literal('allow'), Type.Literal('deny'), Type.Literal('approval')])),
  agent_id: Type.Optional(Type.String({ maxLength: 64 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
});
