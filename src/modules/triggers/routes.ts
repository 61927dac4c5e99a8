/**
 * HTTP routes of the triggers module: management under `/v2/agents/:id/triggers` (the agent's
 * owner or the agent itself; others 404), and the public `POST /hooks/:trigger_id` that senders
 * call. The hook scope reads every body as raw bytes (signatures are over the exact bytes), at most
 * 1 MiB (413 beyond), and answers 202 once the invocation is queued.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AppContext } from '../../context.js';
import { principalOf } from '../../http/auth.js';
import { authScope, created, noContent, operations } from '../../http/operations.js';
import {
  BEARER_SECURITY,
  IdParams,
  ListOf,
  PageQuery,
  PUBLIC_SECURITY,
  USER_SECURITY,
  errorResponses,
} from '../../http/schemas.js';
import { MAX_BODY_BYTES, receiveDelivery } from './deliver.js';
import {
  CreateTriggerBody,
  DeliveryAcceptedSchema,
  HookParams,
  TriggerCreatedSchema,
  TriggerParams,
  TriggerSchema,
  UpdateTriggerBody,
} from './schemas.js';
import { createTrigger, deleteTrigger, getTrigger, listTriggers, updateTrigger } from './service.js';

export async function triggerRoutes(app: FastifyInstance, { ctx }: { ctx: AppContext }): Promise<void> {
  await app.register(async (scope) => {
    const { r, op } = authScope(scope, ctx.auth, {
      principals: ['user', 'agent'],
      tags: ['triggers'],
      security: [...USER_SECURITY, ...BEARER_SECURITY],
    });
    r.post(
      '/v2/agents/:id/triggers',
      op('triggers.create', 'Create an inbound trigger: its URL, verification mode and secret (shown once)', {
        params: IdParams,
        body: CreateTriggerBody,
        response: { 201: TriggerCreatedSchema, ...errorResponses(400, 404, 409) },
      }),
      async (req, reply) =>
        created(reply, createTrigger(ctx, principalOf(req), req.params.id, req.body), { noStore: true }),
    );
    r.get(
      '/v2/agents/:id/triggers',
      op('triggers.list', "The agent's triggers, newest first (no secrets)", {
        params: IdParams,
        querystring: PageQuery,
        response: { 200: ListOf(TriggerSchema), ...errorResponses(404) },
      }),
      async (req) => listTriggers(ctx, principalOf(req), req.params.id, req.query),
    );
    r.get(
      '/v2/agents/:id/triggers/:triggerId',
      op('triggers.get', 'One trigger (no secret)', {
        params: TriggerParams,
        response: { 200: TriggerSchema, ...errorResponses(404) },
      }),
      async (req) => getTrigger(ctx, principalOf(req), req.params.id, req.params.triggerId),
    );
    r.patch(
      '/v2/agents/:id/triggers/:triggerId',
      op('triggers.update', 'Rename, re-limit, disable or enable a trigger', {
        params: TriggerParams,
        body: UpdateTriggerBody,
        response: { 200: TriggerSchema, ...errorResponses(400, 404) },
      }),
      async (req) => updateTrigger(ctx, principalOf(req), req.params.id, req.params.triggerId, req.body),
    );
    r.delete(
      '/v2/agents/:id/triggers/:triggerId',
      op('triggers.delete', 'Delete a trigger (its URL answers 404 from then on)', {
        params: TriggerParams,
        response: { 204: Type.Null(), ...errorResponses(404) },
      }),
      async (req, reply) => noContent(reply, deleteTrigger(ctx, principalOf(req), req.params.id, req.params.triggerId)),
    );
  });

  await app.register(async (scope) => {
    // Raw bytes of any content type (or none): the signature covers them exactly.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: MAX_BODY_BYTES }, (_req, body, done) =>
      done(null, body),
    );
    const op = operations(['triggers'], PUBLIC_SECURITY);
    scope.withTypeProvider<TypeBoxTypeProvider>().post(
      '/hooks/:trigger_id',
      {
        bodyLimit: MAX_BODY_BYTES,
        ...op(
          'triggers.deliver',
          "A sender's delivery (no platform credentials: verified with the trigger's secret); runs the agent asynchronously",
          {
            params: HookParams,
            response: { 202: DeliveryAcceptedSchema, ...errorResponses(401, 404, 409, 413, 429) },
          },
        ),
      },
      async (req, reply) =>
        reply
          .code(202)
          .send(
            await receiveDelivery(
              ctx,
              req.params.trigger_id,
              req.headers,
              Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0),
            ),
          ),
    );
  });
}
