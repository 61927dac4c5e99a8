/** Schedules: only the agent's owner (or the agent itself) sees or changes its schedules; others get 401/404. */
import { describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { agentToken, createAgent } from '../deployments/fixtures.js';
import { jobsPrefix } from './fixtures.js';

const { app } = await setupApp({ JOBS_PREFIX: jobsPrefix() });

describe('schedules security', () => {
  it("another account's agent and schedules answer 404; no credentials 401; the agent itself may manage its own", async () => {
    const owner = await createUser(app);
    const other = await createUser(app);
    const agent = await createAgent(app, owner);
    const sibling = await createAgent(app, owner);
    const url = `/v2/agents/${agent.id}/schedules`;
    const { body: s } = await call(
      app,
      { method: 'POST', url, headers: owner.headers, payload: { cron: '0 * * * *' } },
      201,
    );

    expect((await app.inject({ method: 'GET', url })).statusCode).toBe(401);
    expect((await app.inject({ method: 'POST', url, payload: { cron: '* * * * *' } })).statusCode).toBe(401);
    for (const [method, path, payload] of [
      ['GET', url, undefined],
      ['POST', url, { cron: '* * * * *' }],
      ['GET', `${url}/${s.id}`, undefined],
      ['PATCH', `${url}/${s.id}`, { enabled: false }],
      ['DELETE', `${url}/${s.id}`, undefined],
      ['GET', `${url}/${s.id}/runs`, undefined],
    ] as const) {
      const res = await app.inject({ method, url: path, headers: other.headers, ...(payload ? { payload } : {}) });
      expect(res.statusCode, `${method} ${path}`).toBe(404);
    }
    // A schedule id under another agent of the same owner is not found either.
    await call(app, { method: 'GET', url: `/v2/agents/${sibling.id}/schedules/${s.id}`, headers: owner.headers }, 404);
    // The sibling agent's token cannot reach this agent's schedules.
    const siblingAuth = await agentToken(app, sibling);
    await call(app, { method: 'GET', url, headers: siblingAuth }, 404);
    // The agent itself can.
    const selfAuth = await agentToken(app, agent);
    const { body } = await call(app, { method: 'GET', url, headers: selfAuth }, 200);
    expect(body.data.map((x: { id: string }) => x.id)).toEqual([s.id]);
    // Still enabled: the other account's PATCH changed nothing.
    expect((await call(app, { method: 'GET', url: `${url}/${s.id}`, headers: owner.headers }, 200)).body.enabled).toBe(
      true,
    );
  });
});
