/**
 * HTTP routes of the outbound webhooks module (`/v2/webhooks`), for users (token or API key).
 * Registers the delivery job, re-queues pending messages after a restart of the in-process queue,
 * and subscribes to the platform events it forwards.
 */
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { AppContext } from '../../context.js';
import { principalOf } from '../../http/auth.js';
import { authScope, created, noContent } from '../../http/operations.js';
import { IdParams, ListOf, PageQuery, USER_SECURITY, errorResponses } from '../../http/schemas.js';
import { attemptDelivery, DELIVER_JOB, recoverPending } from './delivery.js';
import { forwardPlatformEvents } from './events.js';
import {
  CreateEndpointBody,
  EndpointCreatedSchema,
  EndpointSchema,
  MessageParams,
  MessageSchema,
  MessagesQuery,
  UpdateEndpointBody,
} from './schemas.js';
import {
  createEndpoint,
  deleteEndpoint,
  getEndpoint,
  listEndpoints,
  listMessages,
  replayMessage,
  updateEndpoint,
} from './service.js';

export async function webhookRoutes(app: FastifyInstance, { ctx }: { ctx: AppContext }): Promise<void> {
  ctx.jobs.register<{ messageId: string }>(DELIVER_JOB, (p) => attemptDelivery(ctx, p.messageId));
  recoverPending(ctx).catch((err: unknown) => ctx.log.error({ err }, 'webhooks: recovery of pending messages failed'));
  forwardPlatformEvents(ctx);

  const { r, op } = authScope(app, ctx.auth, { principals: ['user'], tags: ['webhooks'], security: USER_SECURITY });
  r.post(
    '/v2/webhooks',
    op(
      'webhooks.create',
      'Subscribe a URL to platform events (signed per Standard Webhooks; the secret is shown once)',
      { body: CreateEndpointBody, response: { 201: EndpointCreatedSchema, ...errorResponses(400) } },
    ),
    async (req, reply) => created(reply, createEndpoint(ctx, principalOf(req), req.body), { noStore: true }),
  );
  r.get(
    '/v2/webhooks',
    op('webhooks.list', "The account's webhook endpoints", {
      querystring: PageQuery,
      response: { 200: ListOf(EndpointSchema), ...errorResponses(400) },
    }),
    async (req) => listEndpoints(ctx, principalOf(req), req.query),
  );
  r.get(
    '/v2/webhooks/:id',
    op('webhooks.get', 'One webhook endpoint', {
      params: IdParams,
      response: { 200: EndpointSchema, ...errorResponses(404) },
    }),
    async (req) => getEndpoint(ctx, principalOf(req), req.params.id),
  );
  r.patch(
    '/v2/webhooks/:id',
    op('webhooks.update', 'Change an endpoint; enabled=true re-enables one disabled after failures', {
      params: IdParams,
      body: UpdateEndpointBody,
      response: { 200: EndpointSchema, ...errorResponses(400, 404) },
    }),
    async (req) => updateEndpoint(ctx, principalOf(req), req.params.id, req.body),
  );
  r.delete(
    '/v2/webhooks/:id',
    op('webhooks.delete', 'Delete an endpoint and its delivery log', {
      params: IdParams,
      response: { 204: Type.Null(), ...errorResponses(404) },
    }),
    async (req, reply) => noContent(reply, deleteEndpoint(ctx, principalOf(req), req.params.id)),
  );
  r.get(
    '/v2/webhooks/:id/messages',
    op(
      'webhooks.messages',
      'Delivery log: messages with status, attempts and per-attempt status and latency (status=failed: the dead-letter list)',
      {
        params: IdParams,
        querystring: MessagesQuery,
        response: { 200: ListOf(MessageSchema), ...errorResponses(404) },
      },
    ),
    async (req) => listMessages(ctx, principalOf(req), req.params.id, req.query),
  );
  r.post(
    '/v2/webhooks/:id/messages/:messageId/replay',
    op('webhooks.replay', 'Send a failed (dead-lettered) or delivered message again', {
      params: MessageParams,
      response: { 200: MessageSchema, ...errorResponses(404, 409) },
    }),
    async (req) => replayMessage(ctx, principalOf(req), req.params.id, req.params.messageId),
  );
}
