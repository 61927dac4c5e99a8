/** Tables of the agent-memory module: per-agent key/value entries and the cross-agent access audit. */
import { sql } from 'drizzle-orm';
import { index, integer, jsonb, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';
import { agents } from './agents.js';

/** One key/value entry of an agent. Expired entries (`expires_at <= now()`) are invisible and purged. */
export const agentMemory = pgTable(
  'agent_memory',
  {
    agentId: text('agent_id')
      .notNull()
      .references(() => agents.id, { onDelete: 'cascade' }),
    key: text('key').notNull(),
    value: jsonb('value').notNull(),
    /** Starts at 1, +1 per write; the entity tag (RFC 9110 §8.8.3). */
    version: integer('version').notNull().default(1),
    /** Size of the serialised JSON value, bytes. */
    sizeBytes: integer('size_bytes').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp('expires_at', { withTimezone: true }),
  },
  (t) => [
    primaryKey({ columns: [t.agentId, t.key] }),
    index('agent_memory_expiry_idx').on(t.expiresAt).where(sql`${t.expiresAt} is not null`),
  ],
);

/** Every cross-agent read and write of an agent's memory (who, which key, when, outcome). */
export const agentMemoryAudit = pgTable(
  'agent_memory_audit',
  {
    id: text('id').primaryKey(),
    /** The agent whose memory was accessed. */
    ownerAgentId: text('owner_agent_id').notNull(),
    /** The agent that accessed it. */
    actorAgentId: text('actor_agent_id').notNull(),
    /** `read` | `write` */
    action: text('action').notNull(),
    /** `allowed` | `denied` */
    outcome: text('outcome').notNull(),
    /** Written key (writes) or null (reads). */
    key: text('key'),
    /** Prefix filter of a read (null = all keys the grants cover). */
    prefix: text('prefix'),
    /** Keys returned by a read (writes: empty). */
    keys: text('keys').array().notNull().default(sql`'{}'::text[]`),
    permissionId: text('permission_id'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('agent_memory_audit_owner_idx').on(t.ownerAgentId, t.id)],
);
