/** TypeBox schemas of the subscriptions routes (spec group "Subscriptions"). */
import { Type } from 'typebox';
import { Nullable, PageQuery, Timestamp } from '../../http/schemas.js';

export const PlanSchema = Type.Union([Type.Literal('free'), Type.Literal('pro'), Type.Literal('enterprise')]);

const Limit = Nullable(Type.Integer({ minimum: 0, description: 'calls per window; null = unlimited' }));

export const SubscriptionSchema = Type.Object({
  id: Type.String(),
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
