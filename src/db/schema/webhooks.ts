/**
 * Tables of the outbound webhooks module: endpoints an account subscribes to platform events,
 * and one message per (event, endpoint) with its delivery state and attempt log.
 */
import { sql } from 'drizzle-orm';
import { boolean, index, integer, jsonb, pgTable, text } from 'drizzle-orm/pg-core';
import { userFk } from './identity.js';
import { createdAt, tz, updatedAt } from './columns.js';

/** An endpoint (`whk_…`) of account `owner_id` receiving the events in `events`. */
export const webhookEndpoints = pgTable(
  'webhook_endpoints',
  {
    id: text('id').primaryKey(),
    ownerId: userFk('owner_id'),
    url: text('url').notNull(),
    description: text('description'),
    events: text('events').array().notNull().default(sql`'{}'::text[]`),
    /** Standard Webhooks signing secret `whsec_…`, AES-256-GCM (`lib/secrets.ts`). */
    secretEncrypted: text('secret_encrypted').notNull(),
    enabled: boolean('enabled').notNull().default(true),
    disabledReason: text('disabled_reason'),
    /** Start of the current run of failures (null after a success). */
    failingSince: tz('failing_since'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index('webhook_endpoints_owner_idx').on(t.ownerId, t.id)],
);

/** One event for one endpoint (`msg_…`). Status: `pending` → `delivered` | `failed` (dead letter; replayable). */
export const webhookMessages = pgTable(
  'webhook_messages',
  {
    id: text('id').primaryKey(),
    endpointId: text('endpoint_id')
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: 'cascade' }),
    eventType: text('event_type').notNull(),
    payload: jsonb('payload').notNull(),
    status: text('status').notNull(),
    attempts: integer('attempts').notNull().default(0),
    /** `[{ at, status, latency_ms, error }]` of the latest attempts (capped). */
    log: jsonb('log')
      .$type<Array<{ at: string; status: number | null; latency_ms: number | null; error: string | null }>>()
      .notNull()
      .default([]),
    nextAttemptAt: tz('next_attempt_at'),
    /** Retries stop (dead letter) after this instant. */
    giveUpAt: tz('give_up_at').notNull(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    deliveredAt: tz('delivered_at'),
  },
  (t) => [
    index('webhook_messages_endpoint_idx').on(t.endpointId, t.id),
    index('webhook_messages_pending_idx').on(t.nextAttemptAt).where(sql`status = 'pending'`),
  ],
);
