/** Tables of the permissions module: grants of one agent's memory to another agent. */
import { index, pgTable, text } from 'drizzle-orm/pg-core';
import { agents } from './agents.js';
import { tz, createdAt } from './columns.js';

/** `grantee` may read (or read and write) `owner`'s memory under `key_prefix` until `expires_at`. */
export const agentPermissions = pgTable(
  'agent_permissions',
  {
    id: text('id').primaryKey(),
    ownerAgentId: text('owner_agent_id')
      .notNull()
      .references(() => agents.id, { onDelete: 'cascade' }),
    granteeAgentId: text('grantee_agent_id')
      .notNull()
      .references(() => agents.id, { onDelete: 'cascade' }),
    /** `read` | `write` (write implies read). */
    access: text('access').notNull(),
    /** Keys starting with this string; null = every key. */
    keyPrefix: text('key_prefix'),
    expiresAt: tz('expires_at'),
    /** Who granted it: the owner user (`usr_…`) or the agent itself (`agt_…`). */
    createdBy: text('created_by').notNull(),
    createdAt: createdAt(),
    revokedAt: tz('revoked_at'),
  },
  (t) => [
    index('agent_permissions_owner_idx').on(t.ownerAgentId, t.granteeAgentId),
    index('agent_permissions_grantee_idx').on(t.granteeAgentId, t.id),
  ],
);
