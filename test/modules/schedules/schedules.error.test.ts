/** Schedules: bad input answers problem+json 4xx; a tick with nothing deployed is recorded as failed. */
import { describe, expect, it } from 'vitest';
import { onTick } from '../../../src/modules/schedules/runner.js';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { createAgent } from '../deployments/fixtures.js';
import { jobsPrefix, runsOf } from './fixtures.js';

const { app, ctx } = await setupApp({ JOBS_PREFIX: jobsPrefix() });

describe('schedules errors', () => {
  it('rejects malformed cron expressions, unknown time zones and unknown fields with 400', async () => {
    const user = await createUser(app);
    const agent = await createAgent(app, user);
    const url = `/v2/agents/${agent.id}/schedules`;
    for (const [payload, pointer] of [
      [{ cron: '61 * * * *' }, '/cron'],
      [{ cron: '* * * * * * * *' }, '/cron'],
      [{ cron: 'every minute' }, '/cron'],
      [{ cron: '0 0 30 2 *' }, '/cron'], // 30 February never comes
      [{ cron: '* * * * *', timezone: 'Mars/Olympus' }, '/timezone'],
    ] as const) {
      const res = await app.inject({ method: 'POST', url, headers: user.headers, payload });
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
      expect(res.json()).toMatchObject({ code: 'validation_failed', errors: [{ pointer }] });
    }
    const extra = await app.inject({
      method: 'POST',
      url,
      headers: user.headers,
      payload: { cron: '* * * * *', every: 5 },
    });
    expect(extra.statusCode).toBe(400);
    const overlap = await app.inject({
      method: 'POST',
      url,
      headers: user.headers,
      payload: { cron: '* * * * *', overlap: 'parallel' },
    });
    expect(overlap.statusCode).toBe(400);
    const { body: s } = await call(
      app,
      { method: 'POST', url, headers: user.headers, payload: { cron: '* * * * *' } },
      201,
    );
    const empty = await app.inject({ method: 'PATCH', url: `${url}/${s.id}`, headers: user.headers, payload: {} });
    expect(empty.statusCode).toBe(400);
    const badPatch = await app.inject({
      method: 'PATCH',
      url: `${url}/${s.id}`,
      headers: user.headers,
      payload: { cron: '* * *' },
    });
    expect(badPatch.statusCode).toBe(400);
    await call(app, { method: 'GET', url: `${url}/sch_00000000000000000000000000`, headers: user.headers }, 404);
    await call(app, { method: 'DELETE', url: `${url}/${s.id}`, headers: user.headers }, 204);
    await call(app, { method: 'DELETE', url: `${url}/${s.id}`, headers: user.headers }, 404);
  });

  it('caps the schedules of an agent at 20', async () => {
    const user = await createUser(app);
    const agent = await createAgent(app, user);
    for (let i = 0; i < 20; i++)
      await call(
        app,
        {
          method: 'POST',
          url: `/v2/agents/${agent.id}/schedules`,
          headers: user.headers,
          payload: { cron: '0 0 * * *', enabled: false },
        },
        201,
      );
    const res = await app.inject({
      method: 'POST',
      url: `/v2/agents/${agent.id}/schedules`,
      headers: user.headers,
      payload: { cron: '0 0 * * *' },
    });
    expect(res.statusCode).toBe(409);
    expect(res.json().code).toBe('limit_reached');
  });

  it('a tick of an agent with no deployment is recorded as failed, with the reason', async () => {
    const user = await createUser(app);
    const agent = await createAgent(app, user);
    const { body: s } = await call(
      app,
      {
        method: 'POST',
        url: `/v2/agents/${agent.id}/schedules`,
        headers: user.headers,
        payload: { cron: '0 0 * * *' },
      },
      201,
    );
    const tick = new Date(Math.floor(Date.now() / 1000) * 1000);
    await onTick(ctx, s.id, tick);
    const [run] = await runsOf(app, user.headers, agent.id, s.id);
    expect(run).toMatchObject({ status: 'failed', invocation_id: null, error: { code: 'invalid_state' } });
  });
});
