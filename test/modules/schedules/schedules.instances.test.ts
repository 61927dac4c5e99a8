/**
 * Two API instances on one PostgreSQL and one Redis (same JOBS_PREFIX, so they share the BullMQ
 * job schedulers): a schedule firing every second runs exactly once per tick — one invocation per
 * tick, no tick twice, no gap. Needs TEST_DATABASE_URL and TEST_REDIS_URL (PGlite in memory cannot
 * be shared by two apps); on PGlite the same guarantee is tested by double delivery in the happy tests.
 */
import { and, eq } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../../src/app.js';
import { loadConfig } from '../../../src/config.js';
import { agentInvocations } from '../../../src/db/schema/index.js';
import { testEnv } from '../../helpers/app.js';
import { createSchedule, deployedAgent, jobsPrefix, pauseSchedule, runsOf, waitForRuns } from './fixtures.js';

const shared = Boolean(process.env.TEST_DATABASE_URL && process.env.TEST_REDIS_URL);

describe.runIf(shared)('schedules on two instances', () => {
  it('fire exactly once per tick', async () => {
    const env = testEnv({ JOBS_PREFIX: jobsPrefix() });
    const a = await buildApp(loadConfig(env));
    const b = await buildApp(loadConfig(env));
    afterAll(async () => {
      await a.app.close();
      await b.app.close();
    });
    const { user, agentId } = await deployedAgent(a.app);
    const s = await createSchedule(b.app, user.headers, agentId, { cron: '* * * * * *', overlap: 'queue' });
    await waitForRuns(
      a.app,
      user.headers,
      agentId,
      s.id,
      (r) => r.filter((x) => x.status === 'started').length >= 5,
      20_000,
    );
    await pauseSchedule(a.app, user.headers, agentId, s.id);
    await new Promise((r) => setTimeout(r, 1500)); // a tick in flight when paused settles
    const runs = (await runsOf(b.app, user.headers, agentId, s.id)).reverse();
    const ticks = runs.map((r) => new Date(r.tick_at).getTime());
    for (let i = 1; i < ticks.length; i++) expect(ticks[i] - ticks[i - 1]).toBe(1000);
    const invs = await a.ctx.db
      .select()
      .from(agentInvocations)
      .where(and(eq(agentInvocations.agentId, agentId), eq(agentInvocations.trigger, 'schedule')));
    const startedOrWaiting = runs.filter((r) => r.status !== 'failed' && r.status !== 'skipped');
    expect(runs.filter((r) => r.status === 'failed' || r.status === 'skipped')).toEqual([]);
    expect(invs.length).toBe(runs.filter((r) => r.status === 'started').length);
    expect(new Set(invs.map((i) => i.id)).size).toBe(invs.length);
    expect(startedOrWaiting.length).toBe(runs.length);
  }, 60_000);
});
