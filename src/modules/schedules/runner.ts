/**
 * Ticks of agent schedules: each tick is recorded once in `schedule_runs` (primary key
 * (schedule, tick instant), so a tick delivered twice or by two instances runs once), then either
 * skipped (overlap `skip` while the previous run goes on) or started: an async invocation of the
 * active deployment with `trigger: schedule`. With overlap `queue` a tick waits (`waiting`) until
 * the previous invocation has ended; a `schedules.dispatch` job polls for that every second.
 *
 * Missed ticks (the platform was down): the first missed tick of each enabled schedule runs once
 * at start-up, later missed ones are dropped (systemd `Persistent=true`, Kubernetes CronJob with a
 * deadline). With BullMQ the scheduler's pending job is the same tick, deduplicated by the key.
 */
import { and, asc, eq, lt, lte, sql } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { agentSchedules, scheduleRuns } from '../../db/schema/index.js';
import type { AgentPrincipal } from '../../http/auth.js';
import { AppError } from '../../http/errors.js';
import { nextTicks } from '../../jobs/scheduler.js';
import { getInvocation, invokeAgent } from '../deployments/invocations.js';
import { runPrincipal } from './principal.js';
import { schedulerOf, specOf, type ScheduleRow } from './service.js';

/** Job that starts the oldest waiting run of a schedule once nothing of it is in progress. */
export const DISPATCH_JOB = 'schedules.dispatch';
/** Most runs of one schedule waiting behind a run in progress (overlap `queue`); more are skipped. */
export const MAX_WAITING = 10;
/** How often a waiting run checks whether the previous invocation has ended, ms. */
const POLL_MS = 1000;
/** A run `starting` for longer than this at start-up was interrupted by a crash, ms. */
const STALE_STARTING_MS = 60_000;

/** The identity a schedule invokes with ({@link runPrincipal}: the scopes of its creator). */
function principalOf(s: ScheduleRow): AgentPrincipal {
  return runPrincipal(s, `schedule:${s.id}`);
}

function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; cause?: { code?: string } };
  return e?.code === '23505' || e?.cause?.code === '23505';
}

/**
 * True while the schedule's last invocation is queued or running, or one of its runs is being
 * started. Reads the schedule's `last_invocation_id` afresh, in the same statement as the
 * `starting` check: a dispatcher that started a run since `s` was read has set it before its run
 * left `starting`, so one snapshot always shows one or the other (a stale `s` let a second
 * dispatcher start a queued run while the previous one was still going).
 */
async function inProgress(ctx: AppContext, s: ScheduleRow): Promise<boolean> {
  const [now] = await ctx.db
    .select({
      lastInvocationId: agentSchedules.lastInvocationId,
      starting: sql<boolean>`exists (select 1 from ${scheduleRuns} where ${scheduleRuns.scheduleId} = ${agentSchedules.id} and ${scheduleRuns.status} = 'starting')`,
    })
    .from(agentSchedules)
    .where(eq(agentSchedules.id, s.id));
  if (!now) return false;
  if (now.starting) return true;
  if (!now.lastInvocationId) return false;
  try {
    const inv = await getInvocation(ctx, principalOf(s), s.agentId, now.lastInvocationId);
    return inv.status === 'queued' || inv.status === 'running';
  } catch (err) {
    if (err instanceof AppError && err.code === 'not_found') return false;
    throw err;
  }
}

async function waitingCount(ctx: AppContext, scheduleId: string): Promise<number> {
  const [{ n }] = await ctx.db
    .select({ n: sql<number>`count(*)::int` })
    .from(scheduleRuns)
    .where(and(eq(scheduleRuns.scheduleId, scheduleId), eq(scheduleRuns.status, 'waiting')));
  return Number(n);
}

/**
 * Handle tick `tickAt` of schedule `scheduleId` (at-least-once safe). A schedule that no longer
 * exists is removed from the scheduler.
 */
export async function onTick(ctx: AppContext, scheduleId: string, tickAt: Date): Promise<void> {
  const [s] = await ctx.db.select().from(agentSchedules).where(eq(agentSchedules.id, scheduleId));
  if (!s) {
    await schedulerOf(ctx).remove(scheduleId);
    return;
  }
  if (!s.enabled) return;
  // The next tick after now (a late or replayed tick must not leave older missed ones pending).
  const next = nextTicks(specOf(s), 1, new Date(Math.max(tickAt.getTime(), Date.now())))[0] ?? null;
  await ctx.db
    .update(agentSchedules)
    .set({ nextRunAt: next })
    .where(and(eq(agentSchedules.id, s.id), lte(agentSchedules.nextRunAt, tickAt)));
  let status: 'waiting' | 'skipped' = 'waiting';
  let error: { code: string; message: string } | null = null;
  if (await inProgress(ctx, s)) {
    if (s.overlap === 'skip')
      [status, error] = ['skipped', { code: 'overlap', message: 'the previous run was still in progress' }];
    else if ((await waitingCount(ctx, s.id)) >= MAX_WAITING)
      [status, error] = ['skipped', { code: 'queue_full', message: `${MAX_WAITING} runs were already waiting` }];
  }
  const inserted = await ctx.db
    .insert(scheduleRuns)
    .values({ scheduleId: s.id, tickAt, status, error })
    .onConflictDoNothing()
    .returning({ status: scheduleRuns.status });
  if (!inserted.length) return; // this tick was handled already (another instance, or a redelivery)
  if (status === 'waiting') await dispatch(ctx, s.id);
}

/** Poll again in {@link POLL_MS} (one pending poll per schedule and second). */
async function pollLater(ctx: AppContext, scheduleId: string): Promise<void> {
  await ctx.jobs.enqueue(
    DISPATCH_JOB,
    { scheduleId },
    { delayMs: POLL_MS, jobId: `sched-dispatch-${scheduleId}-${Math.floor(Date.now() / POLL_MS)}` },
  );
}

/**
 * Start the oldest waiting run of schedule `scheduleId` unless a run of it is in progress (then
 * poll again later). One run is `starting` at a time (a partial unique index), so two dispatchers
 * never start two runs of a schedule at once.
 */
export async function dispatch(ctx: AppContext, scheduleId: string): Promise<void> {
  const [s] = await ctx.db.select().from(agentSchedules).where(eq(agentSchedules.id, scheduleId));
  if (!s?.enabled) return;
  const [run] = await ctx.db
    .select()
    .from(scheduleRuns)
    .where(and(eq(scheduleRuns.scheduleId, s.id), eq(scheduleRuns.status, 'waiting')))
    .orderBy(asc(scheduleRuns.tickAt))
    .limit(1);
  if (!run) return;
  if (await inProgress(ctx, s)) return pollLater(ctx, s.id);
  try {
    const claimed = await ctx.db
      .update(scheduleRuns)
      .set({ status: 'starting', updatedAt: new Date() })
      .where(
        and(eq(scheduleRuns.scheduleId, s.id), eq(scheduleRuns.tickAt, run.tickAt), eq(scheduleRuns.status, 'waiting')),
      )
      .returning({ tickAt: scheduleRuns.tickAt });
    if (!claimed.length) return;
  } catch (err) {
    if (isUniqueViolation(err)) return; // another dispatcher is starting a run of this schedule
    throw err;
  }
  const key = and(eq(scheduleRuns.scheduleId, s.id), eq(scheduleRuns.tickAt, run.tickAt));
  try {
    const inv = await invokeAgent(
      ctx,
      principalOf(s),
      s.agentId,
      { input: s.input ?? undefined, async: true },
      { trigger: 'schedule' },
    );
    await ctx.db
      .update(agentSchedules)
      .set({ lastRunAt: run.tickAt, lastInvocationId: inv.id })
      .where(eq(agentSchedules.id, s.id));
    await ctx.db
      .update(scheduleRuns)
      .set({ status: 'started', invocationId: inv.id, updatedAt: new Date() })
      .where(key);
  } catch (err) {
    const e =
      err instanceof AppError
        ? { code: err.code, message: err.message }
        : { code: 'internal_error', message: 'the invocation could not be created' };
    if (!(err instanceof AppError)) ctx.log.error({ err, schedule_id: s.id }, 'scheduled run failed to start');
    await ctx.db.update(scheduleRuns).set({ status: 'failed', error: e, updatedAt: new Date() }).where(key);
  }
  if ((await waitingCount(ctx, s.id)) > 0) await pollLater(ctx, s.id);
}

/**
 * Start consuming ticks at once (not in `PROCESS_ROLE=api`), then recover: runs left `starting`
 * by a crash become `failed`, every enabled schedule is (re)registered with the scheduler when it
 * does not know it, its first missed tick runs once, and waiting runs are dispatched.
 */
export async function startScheduling(ctx: AppContext): Promise<void> {
  const scheduler = schedulerOf(ctx);
  scheduler.start((key, tickAt) => onTick(ctx, key, tickAt));
  if (ctx.config.processRole === 'api') return;
  const now = Date.now();
  await ctx.db
    .update(scheduleRuns)
    .set({
      status: 'failed',
      error: { code: 'interrupted', message: 'the process starting this run stopped' },
      updatedAt: new Date(),
    })
    .where(and(eq(scheduleRuns.status, 'starting'), lt(scheduleRuns.updatedAt, new Date(now - STALE_STARTING_MS))));
  const enabled = await ctx.db.select().from(agentSchedules).where(eq(agentSchedules.enabled, true));
  for (const s of enabled) {
    if (!(await scheduler.has(s.id))) await scheduler.upsert(s.id, specOf(s));
    if (s.nextRunAt && s.nextRunAt.getTime() < now - POLL_MS) await onTick(ctx, s.id, s.nextRunAt);
    else if ((await waitingCount(ctx, s.id)) > 0) await dispatch(ctx, s.id);
  }
}
