/**
 * HTTP routes of the schedules module: cron schedules of a deployed agent. Callable by the owner
 * user of `:id` or by agent `:id` itself; anybody else gets 404. Registers the tick handler and
 * the dispatch job, and starts the app's recurring scheduler (closed with the app).
 */
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { AppContext } from '../../context.js';
import { principalOf } from '../../http/auth.js';
import { authScope, created, noContent } from '../../http/operations.js';
import { BEARER_SECURITY, IdParams, ListOf, PageQuery, USER_SECURITY, errorResponses } from '../../http/schemas.js';
import { createScheduler } from '../../jobs/scheduler.js';
import { dispatch, DISPATCH_JOB, startScheduling } from './runner.js';
import {
  CreateScheduleBody,
  ScheduleParams,
  ScheduleRunSchema,
  ScheduleSchema,
  UpdateScheduleBody,
} from './schemas.js';
import {
  createSchedule,
  deleteSchedule,
  getSchedule,
  listScheduleRuns,
  listSchedules,
  updateSchedule,
} from './service.js';

export async function scheduleRoutes(app: FastifyInstance, { ctx }: { ctx: AppContext }): Promise<void> {
  const scheduler = await createScheduler(ctx.config, ctx.log);
  ctx.scheduler = scheduler;
  ctx.onClose.push(() => scheduler.close());
  ctx.jobs.register<{ scheduleId: string }>(DISPATCH_JOB, (p) => dispatch(ctx, p.scheduleId));
  startScheduling(ctx).catch((err: unknown) => ctx.log.error({ err }, 'schedules: start-up recovery failed'));

  const { r, op } = authScope(app, ctx.auth, {
    principals: ['user', 'agent'],
    tags: ['schedules'],
    security: [...USER_SECURITY, ...BEARER_SECURITY],
  });
  r.post(
    '/v2/agents/:id/schedules',
    op(
      'schedules.create',
      'Create a cron schedule that invokes the active deployment (async, trigger "schedule") on every tick',
      {
        params: IdParams,
        body: CreateScheduleBody,
        response: { 201: ScheduleSchema, ...errorResponses(400, 404, 409, 503) },
      },
    ),
    async (req, reply) => created(reply, createSchedule(ctx, principalOf(req), req.params.id, req.body)),
  );
  r.get(
    '/v2/agents/:id/schedules',
    op('schedules.list', "The agent's schedules, newest first", {
      params: IdParams,
      querystring: PageQuery,
      response: { 200: ListOf(ScheduleSchema), ...errorResponses(404) },
    }),
    async (req) => listSchedules(ctx, principalOf(req), req.params.id, req.query),
  );
  r.get(
    '/v2/agents/:id/schedules/:scheduleId',
    op('schedules.get', 'One schedule with its next run times', {
      params: ScheduleParams,
      response: { 200: ScheduleSchema, ...errorResponses(404) },
    }),
    async (req) => getSchedule(ctx, principalOf(req), req.params.id, req.params.scheduleId),
  );
  r.patch(
    '/v2/agents/:id/schedules/:scheduleId',
    op('schedules.update', 'Change a schedule; enabled=false pauses it, true resumes it from the next tick', {
      params: ScheduleParams,
      body: UpdateScheduleBody,
      response: { 200: ScheduleSchema, ...errorResponses(400, 404, 503) },
    }),
    async (req) => updateSchedule(ctx, principalOf(req), req.params.id, req.params.scheduleId, req.body),
  );
  r.delete(
    '/v2/agents/:id/schedules/:scheduleId',
    op('schedules.delete', 'Delete a schedule', {
      params: ScheduleParams,
      response: { 204: Type.Null(), ...errorResponses(404, 503) },
    }),
    async (req, reply) => noContent(reply, deleteSchedule(ctx, principalOf(req), req.params.id, req.params.scheduleId)),
  );
  r.get(
    '/v2/agents/:id/schedules/:scheduleId/runs',
    op(
      'schedules.runs',
      "The schedule's recent ticks, newest first: started (with the invocation), skipped, waiting or failed",
      {
        params: ScheduleParams,
        querystring: Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })) }),
        response: { 200: ListOf(ScheduleRunSchema), ...errorResponses(404) },
      },
    ),
    async (req) => listScheduleRuns(ctx, principalOf(req), req.params.id, req.params.scheduleId, req.query),
  );
}
