/** Tables of the sessions module: sessions, their tool executions (DESIGN.md §7) and the daily usage counters. */
import { bigint, date, index, integer, jsonb, pgTable, text, unique } from 'drizzle-orm/pg-core';
import { userFk } from './identity.js';
import { tz, createdAt, updatedAt } from './columns.js';

export const sessions = pgTable(
  'sessions',
  {
    id: text('id').primaryKey(),
    userId: userFk(),
    /** Agent (`agt_…`) the session runs for, if any. */
    agentId: text('agent_id'),
    name: text('name'),
    /** `active` | `closed` */
    status: text('status').notNull().default('active'),
    metadata: jsonb('metadata').$type<Record<string, unknown>>().notNull().default({}),
    executionCount: integer('execution_count').notNull().default(0),
    lastActivityAt: tz('last_activity_at'),
    closedAt: tz('closed_at'),
    createdAt: createdAt(),
  },
  (t) => [index('sessions_user_idx').on(t.userId, t.id)],
);

export const executions = pgTable(
  'executions',
  {
    id: text('id').primaryKey(),
    sessionId: text('session_id')
      .notNull()
      .references(() => sessions.id, { onDelete: 'cascade' }),
    userId: text('user_id').notNull(),
    agentId: text('agent_id'),
    serviceId: text('service_id').notNull(),
    toolId: text('tool_id').notNull(),
    /** Tool name at execution time (tools can be renamed). */
    toolName: text('tool_name').notNull(),
    arguments: jsonb('arguments').$type<Record<string, unknown>>().notNull().default({}),
    /** `succeeded` | `failed` */
    status: text('status').notNull(),
    httpStatus: integer('http_status'),
    output: jsonb('output'),
    error: jsonb('error').$type<{ code: string; message: string } | null>(),
    durationMs: integer('duration_ms').notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    index('executions_session_idx').on(t.sessionId, t.id),
    index('executions_user_idx').on(t.userId, t.id),
    index('executions_tool_idx').on(t.toolId, t.createdAt),
  ],
);

/**
 * Usage counters: one row per UTC day, user, service, tool and agent (null = the user itself).
 * Written only by the execution recorder (one write path); read by analytics and search.
 */
export const toolUsage = pgTable(
  'tool_usage',
  {
    day: date('day', { mode: 'string' }).notNull(),
    userId: text('user_id').notNull(),
    agentId: text('agent_id'),
    serviceId: text('service_id').notNull(),
    toolId: text('tool_id').notNull(),
    /** Latest tool name seen (tools can be renamed). */
    toolName: text('tool_name').notNull(),
    calls: integer('calls').notNull().default(0),
    successes: integer('successes').notNull().default(0),
    failures: integer('failures').notNull().default(0),
    totalDurationMs: bigint('total_duration_ms', { mode: 'number' }).notNull().default(0),
    updatedAt: updatedAt(),
  },
  (t) => [
    unique('tool_usage_key').on(t.day, t.userId, t.serviceId, t.toolId, t.agentId).nullsNotDistinct(),
    index('tool_usage_tool_idx').on(t.toolId, t.day),
    index('tool_usage_service_idx').on(t.serviceId, t.day),
    index('tool_usage_agent_idx').on(t.agentId, t.day),
  ],
);

/**
 * Call counters per UTC minute, tool, account and agent (null = the account itself): what a
 * policy's `context.calls` sums (policies/authorize.ts `callCounts`, ADR 0997). Written only by the
 * execution recorder, in the statement that inserts the executions; rows older than 25 hours are pruned.
 */
export const toolCallMinutes = pgTable(
  'tool_call_minutes',
  {
    toolId: text('tool_id').notNull(),
    userId: text('user_id').notNull(),
    /** Start of the minute (`date_trunc('minute', created_at)`). */
    minute: tz('minute').notNull(),
    agentId: text('agent_id'),
    calls: integer('calls').notNull(),
  },
  (t) => [unique('tool_call_minutes_key').on(t.toolId, t.userId, t.minute, t.agentId).nullsNotDistinct()],
);
