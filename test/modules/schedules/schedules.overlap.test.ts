/**
 * Overlap `queue` under concurrent dispatchers: many `schedules.dispatch` calls racing over the
 * same waiting runs (ticks, polls and redeliveries on one or several instances) start exactly one
 * run while its invocation goes on. Regression: a dispatcher that had read the schedule before
 * another started a run judged "nothing in progress" from its stale `last_invocation_id`.
 */
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { scheduleRuns } from '../../../src/db/schema/index.js';
import { dispatch } from '../../../src/modules/schedules/runner.js';
import { setupApp } from '../../helpers/app.js';
import { createSchedule, deployedAgent, jobsPrefix, pauseSchedule } from './fixtures.js';

const { app, ctx } = await setupApp({ JOBS_PREFIX: jobsPrefix() });

describe('schedules overlap "queue"', () => {
  it('racing dispatchers start one run at a time', async () => {
    const slow =
      'export default async function (input) { await new Promise((r) => setTimeout(r, 3000)); return input; }\n';
    const { user, agentId } = await deployedAgent(app, slow);
    // Yearly schedules, so no tick of their own interferes; their runs are made waiting by hand.
    const base = Date.UTC(2020, 0, 1);
    const ids: string[] = [];
    for (let k = 0; k < 8; k++) {
      const s = await createSchedule(app, user.headers, agentId, { cron: '0 0 1 1 *', overlap: 'queue' });
      ids.push(s.id);
      await ctx.db
        .insert(scheduleRuns)
        .values([0, 1, 2, 3].map((i) => ({ scheduleId: s.id, tickAt: new Date(base + i * 1000), status: 'waiting' })));
    }
    // Schedule after schedule, 40 dispatchers staggered over ~80 ms, so that their reads interleave
    // with each other's writes (one storm at a time: concurrent storms queue on the pool and interleave less).
    for (const id of ids)
      await Promise.all(
        Array.from(
          { length: 40 },
          (_, i) =>
            new Promise<void>((resolve, reject) => setTimeout(() => dispatch(ctx, id).then(resolve, reject), i * 2)),
        ),
      );
    for (const id of ids) {
      const runs = await ctx.db.select().from(scheduleRuns).where(eq(scheduleRuns.scheduleId, id));
      const byStatus = (st: string) => runs.filter((r) => r.status === st).length;
      expect({ started: byStatus('started'), waiting: byStatus('waiting') }).toEqual({ started: 1, waiting: 3 });
      expect(runs.find((r) => r.status === 'started')!.tickAt.getTime()).toBe(base);
    }
    // Paused, so that the waiting runs' polls stop and the app closes.
    for (const id of ids) await pauseSchedule(app, user.headers, agentId, id);
  }, 30_000);
});
