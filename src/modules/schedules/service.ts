/**
 * Cron schedules of deployed agents (`/v2/agents/:id/schedules`): each tick invokes the agent's
 * active deployment asynchronously with the schedule's input, as an invocation with
 * `trigger: schedule` (ticks are handled in `runner.ts`). Who may manage an agent's schedules is
 * who may invoke it: its owner, or the agent itself (another account's agent answers 404).
 */
import { and, count, desc, eq } from 'drizzle-orm';
import type { Static } from 'typebox';
import type { AppContext } from '../../context.js';
import { agentSchedules, scheduleRuns } from '../../db/schema/index.js';
import type { Principal } from '../../http/auth.js';
import { AppError, notFound } from '../../http/errors.js';
import { iso, newId } from '../../http/ids.js';
import { mapPage, selectPage, type Page } from '../../http/pagination.js';
import { nextTicks, type CronSpec, type RecurringScheduler } from '../../jobs/scheduler.js';
import { agentInScope, principalId } from '../deployments/service.js';
import type { CreateScheduleBody, ScheduleRunSchema, ScheduleSchema, UpdateScheduleBody } from './schemas.js';

export type ScheduleView = Static<typeof ScheduleSchema>;
export type ScheduleRunView = Static<typeof ScheduleRunSchema>;
export type ScheduleRow = typeof agentSchedules.$inferSelect;

/** Schedules one agent may have. */
export const MAX_SCHEDULES_PER_AGENT = 20;

/** The app's recurring scheduler. @throws Error when the schedules routes did not set it up */
export function schedulerOf(ctx: AppContext): RecurringScheduler {
  if (!ctx.scheduler) throw new Error('the recurring scheduler is not started');
  return ctx.scheduler;
}

/** The cron spec of a row. */
export function specOf(s: Pick<ScheduleRow, 'cron' | 'timezone'>): CronSpec {
  return { pattern: s.cron, timezone: s.timezone };
}

function invalid(pointer: string, message: string): AppError {
  return new AppError('validation_failed', `${pointer.slice(1)}: ${message}`, {
    errors: [{ in: 'body', pointer, message }],
  });
}

/**
 * Check `spec` and return its first tick after now.
 * @throws AppError validation_failed (unknown time zone, malformed expression, one that never fires)
 */
function firstTick(spec: CronSpec): Date {
  try {
    new Intl.DateTimeFormat('en', { timeZone: spec.timezone });
  } catch {
    throw invalid('/timezone', `unknown IANA time zone "${spec.timezone}"`);
  }
  let next: Date[];
  try {
    next = nextTicks(spec, 1);
  } catch (err) {
    throw invalid('/cron', (err as Error).message);
  }
  if (!next.length) throw invalid('/cron', 'the expression never fires');
  return next[0];
}

export function scheduleView(s: ScheduleRow): ScheduleView {
  return {
    id: s.id,
    agent_id: s.agentId,
    name: s.name,
    cron: s.cron,
    timezone: s.timezone,
    input: s.input ?? null,
    enabled: s.enabled,
    overlap: s.overlap as ScheduleView['overlap'],
    next_runs: s.enabled ? nextTicks(specOf(s), 5).map((d) => d.toISOString()) : [],
    last_run_at: iso(s.lastRunAt),
    last_invocation_id: s.lastInvocationId,
    created_by: s.createdBy,
    created_at: iso(s.createdAt),
    updated_at: iso(s.updatedAt),
  };
}

/** Register (or drop) `s` with the scheduler. @throws AppError service_unavailable when Redis is unreachable */
async function sync(ctx: AppContext, s: ScheduleRow): Promise<void> {
  try {
    if (s.enabled) await schedulerOf(ctx).upsert(s.id, specOf(s));
    else await schedulerOf(ctx).remove(s.id);
  } catch (err) {
    ctx.log.warn({ err: (err as Error).message, schedule_id: s.id }, 'could not update the scheduler');
    throw new AppError('service_unavailable', 'The scheduler is unavailable right now; retry shortly', {
      headers: { 'retry-after': '5' },
    });
  }
}

/**
 * Create a schedule of agent `agentId` (body: `CreateScheduleBody`; timezone defaults to UTC,
 * overlap to `skip`, enabled to true).
 * @throws AppError not_found; validation_failed (cron, timezone); limit_reached (20 per agent); service_unavailable
 */
export async function createSchedule(
  ctx: AppContext,
  p: Principal,
  agentId: string,
  body: Static<typeof CreateScheduleBody>,
): Promise<ScheduleView> {
  const agent = await agentInScope(ctx, p, agentId);
  const spec = { pattern: body.cron.trim(), timezone: body.timezone ?? 'UTC' };
  const next = firstTick(spec);
  const [{ n }] = await ctx.db.select({ n: count() }).from(agentSchedules).where(eq(agentSchedules.agentId, agentId));
  if (n >= MAX_SCHEDULES_PER_AGENT)
    throw new AppError('limit_reached', `An agent has at most ${MAX_SCHEDULES_PER_AGENT} schedules`);
  const enabled = body.enabled ?? true;
  const [row] = await ctx.db
    .insert(agentSchedules)
    .values({
      id: newId('sch'),
      agentId,
      ownerId: agent.ownerId,
      name: body.name ?? null,
      cron: spec.pattern,
      timezone: spec.timezone,
      input: body.input ?? null,
      enabled,
      overlap: body.overlap ?? 'skip',
      nextRunAt: enabled ? next : null,
      createdBy: principalId(p),
      invokerScope: p.scopes ? [...p.scopes].join(' ') : null,
    })
    .returning();
  try {
    await sync(ctx, row);
  } catch (err) {
    await ctx.db.delete(agentSchedules).where(eq(agentSchedules.id, row.id));
    throw err;
  }
  return scheduleView(row);
}

async function scheduleInScope(
  ctx: AppContext,
  p: Principal,
  agentId: string,
  scheduleId: string,
): Promise<ScheduleRow> {
  await agentInScope(ctx, p, agentId);
  const [row] = await ctx.db
    .select()
    .from(agentSchedules)
    .where(and(eq(agentSchedules.id, scheduleId), eq(agentSchedules.agentId, agentId)));
  if (!row) throw notFound('Schedule');
  return row;
}

/** Schedules of the agent, newest first. @throws AppError not_found */
export async function listSchedules(
  ctx: AppContext,
  p: Principal,
  agentId: string,
  q: { limit?: number; cursor?: string },
): Promise<Page<ScheduleView>> {
  await agentInScope(ctx, p, agentId);
  return mapPage(await selectPage(ctx.db, agentSchedules, q, [eq(agentSchedules.agentId, agentId)]), scheduleView);
}

/** One schedule with its next run times. @throws AppError not_found */
export async function getSchedule(
  ctx: AppContext,
  p: Principal,
  agentId: string,
  scheduleId: string,
): Promise<ScheduleView> {
  return scheduleView(await scheduleInScope(ctx, p, agentId, scheduleId));
}

/**
 * Change a schedule (any of `UpdateScheduleBody`; `enabled: false` pauses it, `true` resumes it
 * from the next tick after now — ticks missed while paused are not run).
 * @throws AppError not_found; validation_failed; service_unavailable
 */
export async function updateSchedule(
  ctx: AppContext,
  p: Principal,
  agentId: string,
  scheduleId: string,
  body: Static<typeof UpdateScheduleBody>,
): Promise<ScheduleView> {
  const cur = await scheduleInScope(ctx, p, agentId, scheduleId);
  const spec = { pattern: body.cron?.trim() ?? cur.cron, timezone: body.timezone ?? cur.timezone };
  const next = firstTick(spec);
  const enabled = body.enabled ?? cur.enabled;
  const [row] = await ctx.db
    .update(agentSchedules)
    .set({
      cron: spec.pattern,
      timezone: spec.timezone,
      ...(body.input !== undefined ? { input: body.input } : {}),
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(body.overlap ? { overlap: body.overlap } : {}),
      enabled,
      nextRunAt: enabled ? next : null,
      updatedAt: new Date(),
    })
    .where(eq(agentSchedules.id, cur.id))
    .returning();
  const timing = spec.pattern !== cur.cron || spec.timezone !== cur.timezone || enabled !== cur.enabled;
  if (timing) await sync(ctx, row);
  return scheduleView(row);
}

/** Delete a schedule (its pending ticks are dropped; invocations already made stay). @throws AppError not_found; service_unavailable */
export async function deleteSchedule(
  ctx: AppContext,
  p: Principal,
  agentId: string,
  scheduleId: string,
): Promise<void> {
  const cur = await scheduleInScope(ctx, p, agentId, scheduleId);
  await sync(ctx, { ...cur, enabled: false });
  await ctx.db.delete(agentSchedules).where(eq(agentSchedules.id, cur.id));
}

/** The schedule's most recent ticks (`limit`, default 20), newest first. @throws AppError not_found */
export async function listScheduleRuns(
  ctx: AppContext,
  p: Principal,
  agentId: string,
  scheduleId: string,
  q: { limit?: number },
): Promise<Page<ScheduleRunView>> {
  const s = await scheduleInScope(ctx, p, agentId, scheduleId);
  const rows = await ctx.db
    .select()
    .from(scheduleRuns)
    .where(eq(scheduleRuns.scheduleId, s.id))
    .orderBy(desc(scheduleRuns.tickAt))
    .limit(q.limit ?? 20);
  return {
    data: rows.map((r) => ({
      tick_at: iso(r.tickAt),
      status: r.status as ScheduleRunView['status'],
      invocation_id: r.invocationId,
      error: r.error ?? null,
      created_at: iso(r.createdAt),
    })),
    next_cursor: null,
  };
}
