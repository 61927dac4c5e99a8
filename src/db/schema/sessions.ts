/** Tables of the sessions module: sessions and their tool executions (DESIGN.md §7). */
import { index, integer, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { users } from './identity.js';

export const sessions = pgTable(
  'sessions',
  {
    id: text('id').primaryKey(),
    userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
    /** Agent (`agt_…`) the session runs for, if any. */
    agentId: text('agent_id'),
    name: text('name'),
    /** `active` | `closed` */
    status: text('status').notNull().default('active'),
    metadata: jsonb('metadata').$type<Record<string, unknown>>().notNull().default({}),
    executionCount: integer('execution_count').notNull().default(0),
    lastActivityAt: timestamp('last_activity_at', { withTimezone: true }),
    closedAt: timestamp('closed_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('sessions_user_idx').on(t.userId, t.id)],
);

export const executions = pgTable(
  'executions',
  {
    id: text('id').primaryKey(),
    sessionId: text('session_id').notNull().references(() => sessions.id, { onDelete: 'cascade' }),
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
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('executions_session_idx').on(t.sessionId, t.id),
    index('executions_user_idx').on(t.userId, t.id),
    index('executions_tool_idx').on(t.toolId, t.createdAt),
  ],
);
