/** Tables of the agents module: agent identities, their client secrets and tool subscriptions. */
import { sql } from 'drizzle-orm';
import { index, jsonb, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { userFk } from './identity.js';
import { tz, createdAt, updatedAt } from './columns.js';

/** An agent identity (OAuth 2.0 confidential client using the client_credentials grant). */
export const agents = pgTable(
  'agents',
  {
    id: text('id').primaryKey(),
    ownerId: userFk('owner_id'),
    name: text('name').notNull(),
    description: text('description'),
    /** Public OAuth client identifier (`agc_…`). */
    clientId: text('client_id').notNull(),
    /** `active` | `disabled` | `deleted` */
    status: text('status').notNull().default('active'),
    metadata: jsonb('metadata').$type<Record<string, unknown>>().notNull().default({}),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    deletedAt: tz('deleted_at'),
  },
  (t) => [uniqueIndex('agents_client_id_key').on(t.clientId), index('agents_owner_idx').on(t.ownerId, t.id)],
);

/**
 * Client secrets of an agent (scrypt hashes). Several are live at once only during a rotation
 * grace period; a secret is live while `expires_at` is null or in the future.
 */
export const agentSecrets = pgTable(
  'agent_secrets',
  {
    /** `sec_…`; also embedded in the secret string and carried as `sid` in access tokens. */
    id: text('id').primaryKey(),
    agentId: text('agent_id')
      .notNull()
      .references(() => agents.id, { onDelete: 'cascade' }),
    secretHash: text('secret_hash').notNull(),
    createdAt: createdAt(),
    lastUsedAt: tz('last_used_at'),
    expiresAt: tz('expires_at'),
  },
  (t) => [index('agent_secrets_agent_idx').on(t.agentId)],
);

/** Services an agent may call tools of (spec "subscribe the agent to a service by name"). */
export const agentToolSubscriptions = pgTable(
  'agent_tool_subscriptions',
  {
    agentId: text('agent_id')
      .notNull()
      .references(() => agents.id, { onDelete: 'cascade' }),
    serviceId: text('service_id').notNull(),
    /** Service name at subscription time (lets unsubscribe work after the service is gone). */
    serviceName: text('service_name').notNull(),
    createdAt: tz('created_at').notNull().default(sql`now()`),
  },
  (t) => [primaryKey({ columns: [t.agentId, t.serviceId] })],
);
