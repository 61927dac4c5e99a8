/** HTTP routes of the subscriptions module (spec group "Subscriptions"). Users only. */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../context.js';
import { requireAuth, userOf } from '../../http/auth.js';
import { IdParams, ListOf, USER_SECURITY, errorResponses } from '../../http/schemas.js';
import {
  CreateSubscriptionBody,
  QuotasSchema,
  ServiceIdsSchema,
  SubscriptionListQuery,
  SubscriptionSchema,
  UpdateSubscriptionBody,
} from './schemas.js';
import { cancelSubscription, changePlan, getQuotas, getSubscription, listSubscriptions, subscribe, subscribedServiceIds } from './service.js';

export async function subscriptionRoutes(app: FastifyInstance, { ctx }: { ctx: AppContext }): Promise<void> {
  requireAuth(app, ctx.auth, { principals: ['user'] });
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['subscriptions'];
  const security = USER_SECURITY;

  r.post(
    '/subscriptions',
    {
      schema: {
        tags,
        security,
        operationId: 'subscriptions.create',
        summary: 'Subscribe to a published service (plans by role: user → free, pro → up to pro, enterprise/admin → any)',
        body: CreateSubscriptionBody,
        response: { 201: SubscriptionSchema, ...errorResponses(403, 404, 409) },
      },
    },
    async (req, reply) => {
      const u = userOf(req);
      return reply.code(201).send(await subscribe(ctx, u.userId, u.roles, req.body));
    },
  );
  r.get(
    '/subscriptions',
    {
      schema: {
        tags,
        security,
        operationId: 'subscriptions.list',
        summary: "List the user's subscriptions, newest first",
        querystring: SubscriptionListQuery,
        response: { 200: ListOf(SubscriptionSchema), ...errorResponses(403) },
      },
    },
    async (req) => listSubscriptions(ctx, userOf(req).userId, req.query),
  );
  r.get(
    '/subscriptions/services/ids',
    {
      schema: {
        tags,
        security,
        operationId: 'subscriptions.serviceIds',
        summary: 'Ids of the services the user is actively subscribed to',
        response: { 200: ServiceIdsSchema, ...errorResponses(403) },
      },
    },
    async (req) => ({ data: await subscribedServiceIds(ctx, userOf(req).userId) }),
  );
  r.get(
    '/subscriptions/:id',
    { schema: { tags, security, operationId: 'subscriptions.get', summary: 'Subscription details', params: IdParams, response: { 200: SubscriptionSchema, ...errorResponses(403, 404) } } },
    async (req) => getSubscription(ctx, userOf(req).userId, req.params.id),
  );
  r.put(
    '/subscriptions/:id',
    {
      schema: {
        tags,
        security,
        operationId: 'subscriptions.update',
        summary: 'Change the plan of an active subscription (plans by role, as for subscribing)',
        params: IdParams,
        body: UpdateSubscriptionBody,
        response: { 200: SubscriptionSchema, ...errorResponses(403, 404, 409) },
      },
    },
    async (req) => {
      const u = userOf(req);
      return changePlan(ctx, u.userId, u.roles, req.params.id, req.body.plan);
    },
  );
  r.delete(
    '/subscriptions/:id',
    {
      schema: {
        tags,
        security,
        operationId: 'subscriptions.cancel',
        summary: 'Cancel a subscription (executions are refused from then on)',
        params: IdParams,
        response: { 200: SubscriptionSchema, ...errorResponses(403, 404) },
      },
    },
    async (req) => cancelSubscription(ctx, userOf(req).userId, req.params.id),
  );
  r.get(
    '/subscriptions/:id/quotas',
    {
      schema: {
        tags,
        security,
        operationId: 'subscriptions.quotas',
        summary: 'Quota windows of a subscription: limit, used, remaining, reset time',
        params: IdParams,
        response: { 200: QuotasSchema, ...errorResponses(403, 404) },
      },
    },
    async (req) => getQuotas(ctx, userOf(req).userId, req.params.id),
  );
}
