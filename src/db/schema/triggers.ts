/**
 * Tables of the triggers module: inbound webhook endpoints (`/hooks/:trigger_id`) of deployed
 * agents, and the delivery ids seen in the last 24 h (deduplication).
 */
import { index, integer, pgTable, primaryKey, text, boolean } from 'drizzle-orm/pg-core';
import { agents } from './agents.js';
import { userFk } from './identity.js';
import { createdAt, tz, updatedAt } from './columns.js';

/** An inbound trigger (`trg_…`): a verified POST to its URL invokes agent `agent_id`. */
export const agentTriggers = pgTable(
  'agent_triggers',
  {
    id: text('id').primaryKey(),
    agentId: text('agent_id')
      .notNull()
      .references(() => agents.id, { onDelete: 'cascade' }),
    ownerId: userFk('owner_id'),
    name: text('name'),
    /** `standard_webhooks` | `github` | `stripe` | `bearer`: how a delivery proves its sender. */
    mode: text('mode').notNull(),
    /** The shared secret, AES-256-GCM (`lib/secrets.ts`); shown once at creation. */
    secretEncrypted: text('secret_encrypted').notNull(),
    enabled: boolean('enabled').notNull().default(true),
    /** Verified deliveries accepted per minute. */
    rateLimitPerMinute: integer('rate_limit_per_minute').notNull(),
    createdBy: text('created_by').notNull(),
    /** Scopes of the credential that created it (space-separated; null: every scope): its runs hold no more. */
    invokerScope: text('invoker_scope'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    lastDeliveryAt: tz('last_delivery_at'),
  },
  (t) => [index('agent_triggers_agent_idx').on(t.agentId, t.id)],
);

/** A verified delivery of a trigger, kept 24 h so a redelivery with the same id is not run again. */
export const triggerDeliveries = pgTable(
  'trigger_deliveries',
  {
    triggerId: text('trigger_id')
      .notNull()
      .references(() => agentTriggers.id, { onDelete: 'cascade' }),
    /** The sender's delivery id (`webhook-id`, `X-GitHub-Delivery`, the Stripe event id, `Idempotency-Key`) or one made here. */
    deliveryId: text('delivery_id').notNull(),
    invocationId: text('invocation_id'),
    receivedAt: tz('received_at').notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.triggerId, t.deliveryId] }),
    index('trigger_deliveries_received_idx').on(t.triggerId, t.receivedAt),
  ],
);
