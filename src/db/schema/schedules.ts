/**
 * Tables of the schedules module: cron schedules of deployed agents and the record of each tick
 * (whose primary key makes a tick run at most once, however many instances fire it).
 */
import { sql } from 'drizzle-orm';
import { boolean, index, jsonb, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { agents } from './agents.js';
import { userFk } from './identity.js';
import { createdAt, tz, updatedAt } from './columns.js';

/** A cron schedule (`sch_…`) that invokes agent `agent_id`'s active deployment with `input`. */
export const agentSchedules = pgTable(
  'agent_schedules',
  {
    id: text('id').primaryKey(),
    agentId: text('agent_id')
      .notNull()
      .references(() => agents.id, { onDelete: 'cascade' }),
    ownerId: userFk('owner_id'),
    name: text('name'),
    /** Cron expression, 5 fields or 6 with seconds first (croner syntax). */
    cron: text('cron').notNull(),
    /** IANA time zone the expression is read in. */
    timezone: text('timezone').notNull(),
    input: jsonb('input'),
    enabled: boolean('enabled').notNull().default(true),
    /** `skip` | `queue`: what a tick does while the previous run is still going. */
    overlap: text('overlap').notNull(),
    /** The next tick not handled yet (null while paused); a value in the past at start-up is a missed tick. */
    nextRunAt: tz('next_run_at'),
    lastRunAt: tz('last_run_at'),
    lastInvocationId: text('last_invocation_id'),
    createdBy: text('created_by').notNull(),
    /** Scopes of the credential that created it (space-separated; null: every scope): its runs hold no more. */
    invokerScope: text('invoker_scope'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index('agent_schedules_agent_idx').on(t.agentId, t.id)],
);

/**
 * One tick of a schedule. Status: `waiting` (queued behind a run still going) → `starting` →
 * `started` (invocation created) | `failed` (could not start); or `skipped` (overlap `skip`).
 */
export const scheduleRuns = pgTable(
  'schedule_runs',
  {
    scheduleId: text('schedule_id')
      .notNull()
      .references(() => agentSchedules.id, { onDelete: 'cascade' }),
    /** The scheduled instant of the tick (not when it was handled). */
    tickAt: tz('tick_at').notNull(),
    status: text('status').notNull(),
    invocationId: text('invocation_id'),
    error: jsonb('error').$type<{ code: string; message: string } | null>(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    primaryKey({ columns: [t.scheduleId, t.tickAt] }),
    /** At most one run of a schedule is being started at a time (serialises `queue` overlap). */
    uniqueIndex('schedule_runs_one_starting_key').on(t.scheduleId).where(sql`status = 'starting'`),
    index('schedule_runs_waiting_idx').on(t.scheduleId, t.tickAt).where(sql`status = 'waiting'`),
  ],
);
