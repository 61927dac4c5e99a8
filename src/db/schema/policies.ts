/**
 * Tables of the policies module: Cedar policies on tool calls (one `forbid` statement each) and the
 * log of the decisions they made (docs/governance.md#policies, ADRs 0971–0974).
 */
import { sql } from 'drizzle-orm';
import { boolean, index, jsonb, pgTable, text } from 'drizzle-orm/pg-core';
import { createdAt, tz, updatedAt } from './columns.js';

/**
 * A policy (`pol_…`): one Cedar `forbid` statement. `scope` is `account` (binds `owner_id`'s own
 * calls, its agents and its API keys) or `global` (written by an admin, binds everyone; `owner_id`
 * is then the admin who created it). Disabled policies are kept but not evaluated.
 */
export const policies = pgTable(
  'policies',
  {
    id: text('id').primaryKey(),
    /** `account` | `global` */
    scope: text('scope').notNull(),
    /** The owning account (user id); the creating admin for a global policy. */
    ownerId: text('owner_id').notNull(),
    description: text('description').notNull().default(''),
    /** The Cedar text of the policy, as written (one statement). */
    source: text('source').notNull(),
    enabled: boolean('enabled').notNull().default(true),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index('policies_owner_idx').on(t.ownerId, t.id), index('policies_scope_idx').on(t.scope)],
);

/**
 * One policy decision on a tool call (`pdc_…`): `allow` (a non-empty policy set applied and none
 * forbade), `deny` or `approval`; written off the request path in batches; rows older than
 * `POLICY_DECISIONS_RETENTION_DAYS` are deleted.
 */
export const policyDecisions = pgTable(
  'policy_decisions',
  {
    id: text('id').primaryKey(),
    /** The account whose call it was (readers see only their own). */
    accountId: text('account_id').notNull(),
    /** The Cedar principal, e.g. `Platform::Agent::"agt_…"`. */
    principal: text('principal').notNull(),
    agentId: text('agent_id'),
    serviceId: text('service_id').notNull(),
    toolId: text('tool_id').notNull(),
    /** `<service name>/<tool name>` as the policies saw it. */
    tool: text('tool').notNull(),
    /** `allow` | `deny` | `approval` */
    decision: text('decision').notNull(),
    /** The policies that decided (the forbids that matched; empty for an allow). */
    policyIds: text('policy_ids').array().notNull().default(sql`'{}'::text[]`),
    /** Policies that failed to evaluate (`{ policy_id, message }`); they did not apply. */
    errors: jsonb('errors').$type<Array<{ policy_id: string; message: string }>>().notNull().default([]),
    at: tz('at').notNull().defaultNow(),
  },
  (t) => [index('policy_decisions_account_idx').on(t.accountId, t.at), index('policy_decisions_at_idx').on(t.at)],
);
