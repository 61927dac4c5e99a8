/** Helpers of the schedules tests: an owner with a deployed agent, polling of a schedule's runs. */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { call, createUser, type TestUser } from '../../helpers/app.js';
import { createAgent, deployReady, tarball, waitFor } from '../deployments/fixtures.js';

/** A user with an agent whose active deployment runs `source` (default: returns its input). */
export async function deployedAgent(
  app: FastifyInstance,
  source = 'export default async function (input) { return { got: input }; }\n',
): Promise<{ user: TestUser; agentId: string; clientId: string; clientSecret: string }> {
  const user = await createUser(app);
  const agent = await createAgent(app, user);
  const d = await deployReady(
    app,
    user.headers,
    agent.id,
    await tarball({ 'index.mjs': source, 'package.json': '{"type":"module"}' }),
  );
  if (d.status !== 'active') throw new Error(`deployment is ${d.status}: ${d.failure_reason}`);
  return { user, agentId: agent.id, ...agent };
}

/** A fresh BullMQ prefix, so this file's scheduler never shares ticks with another file's. */
export function jobsPrefix(): string {
  return `test-sched-${randomBytes(4).toString('hex')}`;
}

/** Create a schedule of `agentId` (`POST /v2/agents/:id/schedules`, expecting 201); returns its view. */
export async function createSchedule(
  app: FastifyInstance,
  headers: Record<string, string>,
  agentId: string,
  payload: Record<string, unknown>,
): Promise<any> {
  const { body } = await call(app, { method: 'POST', url: `/v2/agents/${agentId}/schedules`, headers, payload }, 201);
  return body;
}

/** Pause a schedule (`PATCH … { enabled: false }`, expecting 200). */
export async function pauseSchedule(
  app: FastifyInstance,
  headers: Record<string, string>,
  agentId: string,
  scheduleId: string,
): Promise<void> {
  await call(
    app,
    { method: 'PATCH', url: `/v2/agents/${agentId}/schedules/${scheduleId}`, headers, payload: { enabled: false } },
    200,
  );
}

/** The schedule's runs (newest first). */
export async function runsOf(
  app: FastifyInstance,
  headers: Record<string, string>,
  agentId: string,
  scheduleId: string,
): Promise<any[]> {
  const { body } = await call(
    app,
    { method: 'GET', url: `/v2/agents/${agentId}/schedules/${scheduleId}/runs?limit=100`, headers },
    200,
  );
  return body.data;
}

/** Wait until `pred` holds for the schedule's runs; returns them. */
export async function waitForRuns(
  app: FastifyInstance,
  headers: Record<string, string>,
  agentId: string,
  scheduleId: string,
  pred: (runs: any[]) => boolean,
  ms = 15_000,
): Promise<any[]> {
  return waitFor(
    async () => {
      const runs = await runsOf(app, headers, agentId, scheduleId);
      return pred(runs) ? runs : null;
    },
    ms,
    'schedule runs',
  );
}

export { waitFor };
