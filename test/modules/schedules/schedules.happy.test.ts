/**
 * Schedules, end to end on the engine under test (PGlite + embedded scheduler, or PostgreSQL +
 * BullMQ job schedulers): second-granularity ticks invoke the active deployment once per tick with
 * `trigger: schedule`; pausing stops the ticks; a tick delivered twice runs once; the first missed
 * tick after downtime runs once at start-up.
 */
import { and, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { agentInvocations, agentSchedules } from '../../../src/db/schema/index.js';
import { onTick, startScheduling } from '../../../src/modules/schedules/runner.js';
import { call, setupApp } from '../../helpers/app.js';
import { createSchedule, deployedAgent, jobsPrefix, pauseSchedule, runsOf, waitFor, waitForRuns } from './fixtures.js';

const { app, ctx } = await setupApp({ JOBS_PREFIX: jobsPrefix() });

async function scheduleInvocations(agentId: string) {
  return ctx.db
    .select()
    .from(agentInvocations)
    .where(and(eq(agentInvocations.agentId, agentId), eq(agentInvocations.trigger, 'schedule')));
}

describe('schedules', () => {
  it('fires every second, once per tick, as invocations with trigger "schedule"; pause stops it', async () => {
    const { user, agentId } = await deployedAgent(app);
    const s = await createSchedule(app, user.headers, agentId, {
      cron: '* * * * * *',
      input: { n: 1 },
      name: 'every second',
    });
    expect(s).toMatchObject({ cron: '* * * * * *', timezone: 'UTC', enabled: true, overlap: 'skip', input: { n: 1 } });
    expect(s.next_runs).toHaveLength(5);
    expect(new Date(s.next_runs[1]).getTime() - new Date(s.next_runs[0]).getTime()).toBe(1000);

    const runs = await waitForRuns(
      app,
      user.headers,
      agentId,
      s.id,
      (r) => r.filter((x) => x.status === 'started').length >= 3,
    );
    await pauseSchedule(app, user.headers, agentId, s.id);
    for (const r of runs) expect(new Date(r.tick_at).getMilliseconds()).toBe(0);
    const started = runs.filter((r) => r.status === 'started');
    const inv = await call(
      app,
      { method: 'GET', url: `/v2/agents/${agentId}/executions/${started[0].invocation_id}`, headers: user.headers },
      200,
    );
    expect(inv.body.input).toEqual({ n: 1 });
    await waitFor(async () => {
      const { body } = await call(
        app,
        { method: 'GET', url: `/v2/agents/${agentId}/executions/${started[0].invocation_id}`, headers: user.headers },
        200,
      );
      return body.status === 'succeeded' ? body : null;
    });

    // Paused: no new ticks, no next runs.
    const paused = await call(
      app,
      { method: 'GET', url: `/v2/agents/${agentId}/schedules/${s.id}`, headers: user.headers },
      200,
    );
    expect(paused.body).toMatchObject({ enabled: false, next_runs: [] });
    const before = (await runsOf(app, user.headers, agentId, s.id)).length;
    await new Promise((r) => setTimeout(r, 2100));
    const after = await runsOf(app, user.headers, agentId, s.id);
    expect(after.length).toBe(before);
    // One invocation per started tick, each with trigger "schedule".
    const invs = await scheduleInvocations(agentId);
    expect(invs.length).toBe(after.filter((r) => r.status === 'started').length);
    expect(new Set(after.map((r) => r.tick_at)).size).toBe(after.length);
  });

  it('a tick delivered twice runs once', async () => {
    const { user, agentId } = await deployedAgent(app);
    const s = await createSchedule(app, user.headers, agentId, { cron: '0 0 1 1 *', timezone: 'Europe/Paris' });
    expect(new Date(s.next_runs[0]).toISOString()).toMatch(/-12-31T23:00:00.000Z$/); // midnight in Paris on 1 January
    const tick = new Date(Math.floor(Date.now() / 1000) * 1000);
    await Promise.all([onTick(ctx, s.id, tick), onTick(ctx, s.id, tick)]);
    await onTick(ctx, s.id, tick);
    const runs = await runsOf(app, user.headers, agentId, s.id);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ tick_at: tick.toISOString(), status: 'started' });
    const invs = await scheduleInvocations(agentId);
    expect(invs).toHaveLength(1);
    // Created with a user token (every scope): the run holds every agent scope, no more.
    expect(invs[0].invokerScope?.split(' ').sort()).toEqual([
      'memory:read',
      'memory:write',
      'permissions:manage',
      'tools:execute',
    ]);
  });

  it('after downtime, the first missed tick runs once at start-up (and only once)', async () => {
    const { user, agentId } = await deployedAgent(app);
    const s = await createSchedule(app, user.headers, agentId, { cron: '*/5 * * * *' });
    // As if the platform had been down since a tick an hour ago (twelve ticks missed).
    const missed = new Date(Math.floor(Date.now() / 300_000) * 300_000 - 3_600_000);
    await ctx.db.update(agentSchedules).set({ nextRunAt: missed }).where(eq(agentSchedules.id, s.id));
    await startScheduling(ctx);
    await startScheduling(ctx);
    const runs = await runsOf(app, user.headers, agentId, s.id);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ tick_at: missed.toISOString(), status: 'started' });
    const [row] = await ctx.db.select().from(agentSchedules).where(eq(agentSchedules.id, s.id));
    expect(row.nextRunAt!.getTime()).toBeGreaterThan(missed.getTime());
  });

  it('overlap "skip" skips ticks while a run is going; "queue" runs them one after the other', async () => {
    const slow =
      'export default async function (input) { await new Promise((r) => setTimeout(r, 1800)); return input; }\n';
    const { user, agentId } = await deployedAgent(app, slow);
    const skip = await createSchedule(app, user.headers, agentId, { cron: '* * * * * *', overlap: 'skip' });
    const skipped = await waitForRuns(
      app,
      user.headers,
      agentId,
      skip.id,
      (r) => r.some((x) => x.status === 'skipped') && r.some((x) => x.status === 'started'),
    );
    await call(
      app,
      { method: 'DELETE', url: `/v2/agents/${agentId}/schedules/${skip.id}`, headers: user.headers },
      204,
    );
    expect(skipped.find((x) => x.status === 'skipped').error.code).toBe('overlap');

    const queue = await createSchedule(app, user.headers, agentId, { cron: '* * * * * *', overlap: 'queue' });
    await waitForRuns(
      app,
      user.headers,
      agentId,
      queue.id,
      (r) => r.filter((x) => x.status === 'started').length >= 3,
      20_000,
    );
    await pauseSchedule(app, user.headers, agentId, queue.id);
    const runs = (await runsOf(app, user.headers, agentId, queue.id)).filter((x) => x.status === 'started').reverse();
    expect(runs.some((x) => x.status === 'skipped')).toBe(false);
    const invs = await Promise.all(
      runs.map((r) =>
        waitFor(async () => {
          const { body } = await call(
            app,
            { method: 'GET', url: `/v2/agents/${agentId}/executions/${r.invocation_id}`, headers: user.headers },
            200,
          );
          return body.finished_at ? body : null;
        }, 20_000),
      ),
    );
    for (let i = 1; i < invs.length; i++)
      expect(new Date(invs[i].started_at).getTime()).toBeGreaterThanOrEqual(
        new Date(invs[i - 1].finished_at).getTime(),
      );
  }, 40_000);
});
