/** HTTP routes of the subscriptions module (spec group "Subscriptions"). Users only. */
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';
import { userOf } from '../../http/auth.js';
import { authScope, created } from '../../http/operations.js';
import { IdParams, ListOf, USER_SECURITY, errorResponses } from '../../http/schemas.js';
import {
  AcceptChangesBody,
  AcceptChangesResult,
  CreateSubscriptionBody,
  QuotasSchema,
  ServiceIdsSchema,
  SubscriptionListQuery,
  SubscriptionSchema,
  UpdateSubscriptionBody,
} from './schemas.js';
import {
  acceptSubscriptionChanges,
  cancelSubscription,
  changePlan,
  getQuotas,
  getSubscription,
  listSubscriptions,
  subscribe,
  subscribedServiceIds,
} from './service.js';

export async function subscriptionRoutes(app: FastifyInstance, { ctx }: { ctx: AppContext }): Promise<void> {
  const { r, op } = authScope(app, ctx.auth, {
    principals: ['user'],
    tags: ['subscriptions'],
    security: USER_SECURITY,
  });

  r.post(
    '/subscriptions',
    op(
      'subscriptions.create',
      'Subscribe to a published service (plans by role: user → free, pro → up to pro, enterprise/admin → any)',
      {
        body: CreateSubscriptionBody,
        response: { 201: SubscriptionSchema, ...errorResponses(403, 404, 409) },
      },
    ),
    async (req, reply) => {
      const u = userOf(req);
      return created(reply, subscribe(ctx, u.userId, u.roles, req.body));
    },
  );
  r.get(
    '/subscriptions',
    op('subscriptions.list', "List the user's subscriptions, newest first", {
      querystring: SubscriptionListQuery,
      response: { 200: ListOf(SubscriptionSchema), ...errorResponses(403) },
    }),
    async (req) => listSubscriptions(ctx, userOf(req).userId, req.query),
  );
  r.get(
    '/subscriptions/services/ids',
    op('subscriptions.serviceIds', 'Ids of the services the user is actively subscribed to', {
      response: { 200: ServiceIdsSchema, ...errorResponses(403) },
    }),
    async (req) => ({ data: await subscribedServiceIds(ctx, userOf(req).userId) }),
  );
  r.get(
    '/subscriptions/:id',
    op('subscriptions.get', 'Subscription details', {
      params: IdParams,
      response: { 200: SubscriptionSchema, ...errorResponses(403, 404) },
    }),
    async (req) => getSubscription(ctx, userOf(req).userId, req.params.id),
  );
  r.put(
    '/subscriptions/:id',
    op('subscriptions.update', 'Change the plan of an active subscription (plans by role, as for subscribing)', {
      params: IdParams,
      body: UpdateSubscriptionBody,
      response: { 200: SubscriptionSchema, ...errorResponses(403, 404, 409) },
    }),
    async (req) => {
      const u = userOf(req);
      return changePlan(ctx, u.userId, u.roles, req.params.id, req.body.plan);
    },
  );
  r.delete(
    '/subscriptions/:id',
    op('subscriptions.cancel', 'Cancel a subscription (executions are refused from then on)', {
      params: IdParams,
      response: { 200: SubscriptionSchema, ...errorResponses(403, 404) },
    }),
    async (req) => cancelSubscription(ctx, userOf(req).userId, req.params.id),
  );
  r.post(
    '/subscriptions/:id/accept-changes',
    op('subscriptions.acceptChanges', 'Accept changed tool definitions (all, or the tools named): re-pin them', {
      params: IdParams,
      body: AcceptChangesBody,
      response: { 200: AcceptChangesResult, ...errorResponses(403, 404, 409) },
    }),
    async (req) => acceptSubscriptionChanges(ctx, userOf(req), req.params.id, req.body.tools),
  );
  r.get(
    '/subscriptions/:id/quotas',
    op('subscriptions.quotas', 'Quota windows of a subscription: limit, used, remaining, reset time', {
      params: IdParams,
      response: { 200: QuotasSchema, ...errorResponses(403, 404) },
    }),
    async (req) => getQuotas(ctx, userOf(req).userId, req.params.id),
  );
}
