/**
 * Tables of the subscriptions module: a user's subscription to a service, with its plan and the
 * counters of the current quota windows (DESIGN.md §7). Limits are configuration (`config.quotas`),
 * not stored, so operators can change them without a migration.
 */
import { sql } from 'drizzle-orm';
import { date, index, integer, jsonb, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { userFk } from './identity.js';
import { tools } from './registry.js';
import { tz, createdAt, updatedAt } from './columns.js';

export const subscriptions = pgTable(
  'subscriptions',
  {
    id: text('id').primaryKey(),
    userId: userFk(),
    /** `svc_…` of the registry (no foreign key: modules do not share tables). */
    serviceId: text('service_id').notNull(),
    /** `free` | `pro` | `enterprise` */
    plan: text('plan').notNull(),
    /** `active` | `canceled` */
    status: text('status').notNull().default('active'),
    /** UTC calendar day the `day_used` counter belongs to. */
    dayStart: date('day_start', { mode: 'string' }).notNull().default(sql`(now() at time zone 'utc')::date`),
    dayUsed: integer('day_used').notNull().default(0),
    /** First day (UTC) of the calendar month the `month_used` counter belongs to. */
    monthStart: date('month_start', { mode: 'string' })
      .notNull()
      .default(sql`date_trunc('month', now() at time zone 'utc')::date`),
    monthUsed: integer('month_used').notNull().default(0),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    canceledAt: tz('canceled_at'),
  },
  (t) => [
    index('subscriptions_user_idx').on(t.userId, t.id),
    /** At most one active subscription per user and service (canceled ones stay as history). */
    uniqueIndex('subscriptions_active_key').on(t.userId, t.serviceId).where(sql`status = 'active'`),
  ],
);

/**
 * Pinned tool definitions (docs/governance.md "Pinned tool definitions"): the definition of a tool
 * a holder trusted — an account (its subscription) or an agent (its agent tool subscription) — by
 * hash, with the snapshot a diff is computed from. Executing a tool whose current hash differs
 * answers 409 `tool_definition_changed` until the holder accepts the change.
 */
export const toolPins = pgTable(
  'tool_pins',
  {
    /** `usr_…` (account) or `agt_…` (agent). */
    holderId: text('holder_id').notNull(),
    /** `account` | `agent` */
    holderKind: text('holder_kind').notNull(),
    serviceId: text('service_id').notNull(),
    /** The registry's `tools.id` (the row goes with the tool). */
    toolId: text('tool_id')
      .notNull()
      .references(() => tools.id, { onDelete: 'cascade' }),
    definitionHash: text('definition_hash').notNull(),
    /** `{ name, description, input_schema, output_schema, annotations }` as pinned. */
    definition: jsonb('definition').$type<Record<string, unknown>>().notNull(),
    pinnedAt: tz('pinned_at').notNull().default(sql`now()`),
  },
  (t) => [
    primaryKey({ name: 'tool_pins_pkey', columns: [t.holderId, t.toolId] }),
    index('tool_pins_holder_service_idx').on(t.holderId, t.serviceId),
    index('tool_pins_tool_idx').on(t.toolId),
  ],
);
