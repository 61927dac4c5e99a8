/** TypeBox schemas of the subscriptions routes (spec group "Subscriptions"). */
import { Type } from 'typebox';
import { Nullable, PageQuery, Timestamp } from '../../http/schemas.js';

export const PlanSchema = Type.Union([Type.Literal('free'), Type.Literal('pro'), Type.Literal('enterprise')]);

const Limit = Nullable(Type.Integer({ minimum: 0, description: 'calls per window; null = unlimited' }));

/** A tool whose definition changed (or was added) since the holder pinned it (`subscriptions/pins.ts`). */
export const PendingChangeSchema = Type.Object({
  tool_id: Type.String(),
  tool: Type.String(),
  change: Type.Union([Type.Literal('changed'), Type.Literal('added')]),
  pinned_hash: Nullable(Type.String()),
  current_hash: Type.String(),
  diff: Type.Array(Type.Record(Type.String(), Type.Unknown()), {
    description: 'RFC 6902 JSON Patch from the pinned definition to the current one',
  }),
  pinned_definition: Type.Optional(
    Nullable(Type.Record(Type.String(), Type.Unknown()), {
      description:
        'the definition as pinned (`name`, `description`, `input_schema`, `output_schema`, `annotations`; null for an added tool): the old value of each diff operation is at its `path` here',
    }),
  ),
});

/** Body of `POST /subscriptions/:id/accept-changes` and `POST /v2/agents/:id/tools/accept-changes`. */
export const AcceptChangesBody = Type.Object({
  tools: Type.Optional(
    Type.Array(Type.String({ maxLength: 64 }), { maxItems: 500, description: 'tool names; all when absent' }),
  ),
});

/** Answer of accept-changes: the tools re-pinned and what is still pending. */
export const AcceptChangesResult = Type.Object({
  pinned: Type.Array(Type.String()),
  pending_changes: Type.Array(PendingChangeSchema),
});

export const SubscriptionSchema = Type.Object({
  id: Type.String(),
  pending_changes: Type.Optional(
    Type.Array(PendingChangeSchema, { description: 'GET /subscriptions/:id only: definitions changed since pinned' }),
  ),
  service_id: Type.String(),
  plan: Type.Union(PlanSchema.anyOf, { description: 'the plan chosen (PUT /subscriptions/:id changes it)' }),
  effective_plan: Type.Union(PlanSchema.anyOf, {
    description:
      "the plan whose limits apply now: `plan` capped at the highest plan the account's roles allow (an account demoted from pro is counted on free; restoring the role restores the plan)",
  }),
  status: Type.Union([Type.Literal('active'), Type.Literal('canceled')]),
  quotas: Type.Object(
    { day: Limit, month: Limit },
    { description: 'calls allowed per UTC day and month by `effective_plan` (null = unlimited)' },
  ),
  used: Type.Object(
    { day: Type.Integer(), month: Type.Integer() },
    { description: 'calls counted in the current UTC day and month' },
  ),
  created_at: Timestamp,
  updated_at: Timestamp,
  canceled_at: Nullable(Timestamp),
});

export const CreateSubscriptionBody = Type.Object(
  {
    service_id: Type.String({ minLength: 1, maxLength: 200, description: 'service id (`svc_…`) or name' }),
    plan: Type.Optional(PlanSchema),
  },
  { additionalProperties: false },
);

export const UpdateSubscriptionBody = Type.Object({ plan: PlanSchema }, { additionalProperties: false });

export const SubscriptionListQuery = Type.Intersect([
  PageQuery,
  Type.Object({
    status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('canceled')])),
    service_id: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  }),
]);

export const ServiceIdsSchema = Type.Object({ data: Type.Array(Type.String()) });

export const QuotaWindowSchema = Type.Object({
  window: Type.Union([Type.Literal('day'), Type.Literal('month')]),
  limit: Limit,
  used: Type.Integer(),
  remaining: Nullable(Type.Integer()),
  resets_at: Timestamp,
});

export const QuotasSchema = Type.Object({ plan: PlanSchema, windows: Type.Array(QuotaWindowSchema) });
