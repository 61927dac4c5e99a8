/**
 * Tables of the a2a module (publication of deployed agents over A2A) and of the webhooks module's
 * once-per-window `quota.exhausted` notices.
 */
import { boolean, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { agents } from './agents.js';
import { userFk } from './identity.js';
import { createdAt, tz, updatedAt } from './columns.js';

/** An agent published over A2A (opt-in): its card and JSON-RPC endpoint answer while `enabled`. */
export const a2aPublications = pgTable('a2a_publications', {
  agentId: text('agent_id')
    .primaryKey()
    .references(() => agents.id, { onDelete: 'cascade' }),
  ownerId: userFk('owner_id'),
  enabled: boolean('enabled').notNull().default(true),
  createdAt: createdAt(),
  updatedAt: updatedAt(),
});

/** A quota window (`day` | `month`, identified by when it resets) whose exhaustion was announced. */
export const quotaExhaustions = pgTable(
  'quota_exhaustions',
  {
    subscriptionId: text('subscription_id').notNull(),
    window: text('window').notNull(),
    resetsAt: tz('resets_at').notNull(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.subscriptionId, t.window, t.resetsAt] })],
);
