/**
 * Table of the approvals module: one request for a person's approval of one held tool call,
 * bound to the requesting actor (account + agent) and to the SHA-256 of the call's canonical JSON.
 */
import { sql } from 'drizzle-orm';
import { index, jsonb, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { createdAt, tz, updatedAt } from './columns.js';
import { userFk } from './identity.js';

/**
 * An approval request (`apr_…`) of account `account_id`. Status: `pending` → `approved` → `used`,
 * or `pending` → `denied`; `pending`/`approved` past `expires_at` read as (and are later stored as)
 * `expired`. At most one `pending` request per actor and call (`tool_approvals_pending_uq`).
 */
export const toolApprovals = pgTable(
  'tool_approvals',
  {
    id: text('id').primaryKey(),
    accountId: userFk('account_id'),
    /** The requesting agent; null when the account's user (token or API key) called. */
    agentId: text('agent_id'),
    /** The API key (`key_…`) that made the held call; it may not decide it (ADR 0973). Null for tokens. */
    requestedByKey: text('requested_by_key'),
    serviceId: text('service_id').notNull(),
    serviceName: text('service_name').notNull(),
    toolId: text('tool_id').notNull(),
    toolName: text('tool_name').notNull(),
    arguments: jsonb('arguments').$type<Record<string, unknown>>().notNull(),
    /** Hex SHA-256 of the RFC 8785 canonical JSON of `{ service, tool, arguments }` (ids). */
    callHash: text('call_hash').notNull(),
    /** The policies that required the approval (empty when a tool tag did). */
    policyIds: text('policy_ids').array().notNull().default(sql`'{}'::text[]`),
    status: text('status').notNull(),
    /** The user who approved or denied, and the denial's reason. */
    decidedBy: text('decided_by'),
    decidedAt: tz('decided_at'),
    reason: text('reason'),
    usedAt: tz('used_at'),
    /** A pending request lapses at this instant; once approved, the approval's own deadline. */
    expiresAt: tz('expires_at').notNull(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index('tool_approvals_account_idx').on(t.accountId, t.id),
    uniqueIndex('tool_approvals_pending_uq')
      .on(t.accountId, sql`coalesce(${t.agentId}, '')`, t.callHash)
      .where(sql`status = 'pending'`),
  ],
);
