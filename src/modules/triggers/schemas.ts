/** TypeBox schemas of the triggers routes (`/v2/agents/:id/triggers`, `/hooks/:trigger_id`). */
import { Type } from 'typebox';
import { Nullable, Timestamp } from '../../http/schemas.js';

export const TriggerMode = Type.Union(
  [Type.Literal('standard_webhooks'), Type.Literal('github'), Type.Literal('stripe'), Type.Literal('bearer')],
  {
    description:
      'how a delivery proves its sender: `standard_webhooks` (webhook-id/-timestamp/-signature headers), `github` (X-Hub-Signature-256), `stripe` (Stripe-Signature), `bearer` (Authorization: Bearer <secret>)',
  },
);

export const TriggerSchema = Type.Object({
  id: Type.String(),
  agent_id: Type.String(),
  name: Nullable(Type.String()),
  mode: TriggerMode,
  url: Type.String({ description: 'where the sender POSTs (no platform credentials: the secret is the proof)' }),
  enabled: Type.Boolean(),
  rate_limit_per_minute: Type.Integer(),
  created_by: Type.String(),
  created_at: Timestamp,
  updated_at: Timestamp,
  last_delivery_at: Nullable(Timestamp),
});

export const TriggerCreatedSchema = Type.Intersect([
  TriggerSchema,
  Type.Object({ secret: Type.String({ description: 'shown once: give it to the sender' }) }),
]);

export const CreateTriggerBody = Type.Object(
  {
    mode: TriggerMode,
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    secret: Type.Optional(
      Type.String({
        minLength: 16,
        maxLength: 256,
        description:
          "the sender's secret when it sets one (Stripe's `whsec_…` endpoint secret, a GitHub webhook secret); generated when absent",
      }),
    ),
    rate_limit_per_minute: Type.Optional(Type.Integer({ minimum: 1, maximum: 6000, default: 120 })),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

export const UpdateTriggerBody = Type.Object(
  {
    name: Type.Optional(Type.Union([Type.Null(), Type.String({ minLength: 1, maxLength: 100 })])),
    rate_limit_per_minute: Type.Optional(Type.Integer({ minimum: 1, maximum: 6000 })),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const TriggerParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 100 }),
  triggerId: Type.String({ minLength: 1, maxLength: 100 }),
});
export const HookParams = Type.Object({ trigger_id: Type.String({ minLength: 1, maxLength: 100 }) });

export const DeliveryAcceptedSchema = Type.Object({
  delivery_id: Type.String(),
  invocation_id: Type.String({ description: 'the async invocation (trigger `trigger`) to poll' }),
  duplicate: Type.Boolean({ description: 'true: this delivery id was accepted in the last 24 h; nothing new was run' }),
});
