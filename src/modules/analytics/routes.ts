/**
 * HTTP routes of analytics (spec group "Analytics"; DESIGN.md §6): users with role `pro`,
 * `enterprise` or `admin`; `/analytics/system` and `/analytics/endpoints` need `admin`.
 *
 * The plugin is not encapsulated (fastify-plugin) because it also installs the app-wide
 * `onResponse` hook that feeds the realtime counters and the per-route aggregates; its routes
 * are registered in their own guarded scopes.
 */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../context.js';
import { accountOf, principalOf, requireAuth, userOf } from '../../http/auth.js';
import { USER_SECURITY, errorResponses } from '../../http/schemas.js';
import { UNMATCHED_ROUTE } from './endpoints.js';
import {
  EndpointsAnalytics,
  EndpointsQuery,
  RealtimeAnalytics,
  RealtimeQuery,
  ServicesAnalytics,
  ServicesQuery,
  SessionsAnalytics,
  SessionsQuery,
  SystemAnalytics,
  SystemQuery,
  ToolsAnalytics,
  ToolsQuery,
  UserAnalytics,
  UserQuery,
} from './schemas.js';
import {
  endpointsAnalytics,
  realtimeAnalytics,
  resolvePeriod,
  servicesAnalytics,
  sessionsAnalytics,
  startAnalytics,
  systemAnalytics,
  toolsAnalytics,
  userAnalytics,
} from './service.js';

async function analytics(app: FastifyInstance, { ctx }: { ctx: AppContext }): Promise<void> {
  const rt = startAnalytics(ctx);
  app.addHook('onResponse', (req, reply, done) => {
    const ms = reply.elapsedTime;
    const status = reply.statusCode;
    const route = req.routeOptions.url ?? UNMATCHED_ROUTE;
    const op = (req.routeOptions.schema as { operationId?: string } | undefined)?.operationId ?? null;
    rt.endpoints.record(req.method, route, status, op, ms);
    rt.realtime.record(req.principal ? accountOf(req.principal) : null, status, ms);
    done();
  });

  const tags = ['analytics'];
  const security = USER_SECURITY;

  await app.register(async (scope) => {
    requireAuth(scope, ctx.auth, { principals: ['user'], roles: ['pro', 'enterprise', 'admin'] });
    const r = scope.withTypeProvider<TypeBoxTypeProvider>();
    r.get(
      '/analytics/user',
      { schema: { tags, security, operationId: 'analytics.user', summary: "The caller's usage: totals, success rate, latency, daily series, top tools and services, sessions, memories", querystring: UserQuery, response: { 200: UserAnalytics, ...errorResponses(403) } } },
      async (req) => userAnalytics(ctx, userOf(req).userId, resolvePeriod(req.query, '30d')),
    );
    r.get(
      '/analytics/services',
      {
        schema: {
          tags,
          security,
          operationId: 'analytics.services',
          summary: "Usage per service: all users' calls of services the caller owns (aggregated), and the caller's own calls",
          querystring: ServicesQuery,
          response: { 200: ServicesAnalytics, ...errorResponses(403, 404) },
        },
      },
      async (req) => servicesAnalytics(ctx, userOf(req).userId, resolvePeriod(req.query, '30d'), req.query),
    );
    r.get(
      '/analytics/tools',
      { schema: { tags, security, operationId: 'analytics.tools', summary: "Usage per tool: the caller's calls (scope=mine) or all users' calls of owned tools (scope=owned)", querystring: ToolsQuery, response: { 200: ToolsAnalytics, ...errorResponses(403, 404) } } },
      async (req) => toolsAnalytics(ctx, userOf(req).userId, resolvePeriod(req.query, '30d'), req.query),
    );
    r.get(
      '/analytics/sessions',
      { schema: { tags, security, operationId: 'analytics.sessions', summary: "The caller's sessions: counts by status, durations, executions per session, daily series", querystring: SessionsQuery, response: { 200: SessionsAnalytics, ...errorResponses(403) } } },
      async (req) => sessionsAnalytics(ctx, userOf(req).userId, resolvePeriod(req.query, '30d'), req.query),
    );
    r.get(
      '/analytics/realtime',
      { schema: { tags, security, operationId: 'analytics.realtime', summary: 'Last 1 and 5 minutes: requests, errors, latency, executions, active sessions', querystring: RealtimeQuery, response: { 200: RealtimeAnalytics, ...errorResponses(403) } } },
      async (req) => realtimeAnalytics(ctx, principalOf(req), req.query),
    );
  });

  await app.register(async (scope) => {
    requireAuth(scope, ctx.auth, { principals: ['user'], roles: ['admin'] });
    const r = scope.withTypeProvider<TypeBoxTypeProvider>();
    r.get(
      '/analytics/system',
      { schema: { tags, security, operationId: 'analytics.system', summary: 'Platform totals: users, services, executions, error rate, agents, deployments, memories, requests (admin)', querystring: SystemQuery, response: { 200: SystemAnalytics, ...errorResponses(403) } } },
      async (req) => systemAnalytics(ctx, resolvePeriod(req.query, '30d')),
    );
    r.get(
      '/analytics/endpoints',
      { schema: { tags, security, operationId: 'analytics.endpoints', summary: 'Per-route requests, errors and latency percentiles (admin)', querystring: EndpointsQuery, response: { 200: EndpointsAnalytics, ...errorResponses(403) } } },
      async (req) => endpointsAnalytics(ctx, resolvePeriod(req.query, '24h'), req.query),
    );
  });
}

/** Analytics routes plus the app-wide request recorder. */
export const analyticsRoutes = fp(analytics, { name: 'analytics', fastify: '5.x' });
