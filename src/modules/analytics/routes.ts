/**
 * HTTP routes of analytics (spec group "Analytics"; DESIGN.md §6): users with role `pro`,
 * `enterprise` or `admin`; `/analytics/system` and `/analytics/endpoints` need `admin`.
 *
 * The plugin also adds an observer of every finished request of the app (`app.observeResponses`,
 * http/observers.ts: the decorator lives on the root instance, so an encapsulated plugin reaches
 * every route) that feeds the realtime counters and the per-route aggregates.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { TSchema } from 'typebox';
import type { AppContext } from '../../context.js';
import { accountOf, principalOf, requireAuth, userOf } from '../../http/auth.js';
import { operations } from '../../http/operations.js';
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
  servicesAnalytics,
  sessionsAnalytics,
  startAnalytics,
  systemAnalytics,
  toolsAnalytics,
  userAnalytics,
} from './service.js';
import { resolvePeriod } from './period.js';

/** Analytics routes plus the app-wide request recorder. */
export async function analyticsRoutes(app: FastifyInstance, { ctx }: { ctx: AppContext }): Promise<void> {
  const rt = startAnalytics(ctx);
  // The app-wide observer of finished requests (http/observers.ts) feeds both aggregates.
  app.observeResponses((r) => {
    rt.endpoints.record(r.method, r.route ?? UNMATCHED_ROUTE, r.status, r.operationId, r.ms, r.now);
    rt.realtime.record(r.principal ? accountOf(r.principal) : null, r.status, r.ms, r.now);
  });

  const op = operations(['analytics'], USER_SECURITY);
  /** Schemas of a report: its query in, `result` (200) or a problem (400/401/403, plus `codes`) out. */
  const report = <Q extends TSchema, R extends TSchema>(query: Q, result: R, ...codes: number[]) => ({
    querystring: query,
    response: { 200: result, ...errorResponses(403, ...codes) },
  });

  await app.register(async (scope) => {
    requireAuth(scope, ctx.auth, { principals: ['user'], roles: ['pro', 'enterprise', 'admin'] });
    const r = scope.withTypeProvider<TypeBoxTypeProvider>();
    r.get(
      '/analytics/user',
      op(
        'analytics.user',
        "The caller's usage: totals, success rate, latency, daily series, top tools and services, sessions, memories",
        report(UserQuery, UserAnalytics),
      ),
      async (req) => userAnalytics(ctx, userOf(req).userId, resolvePeriod(req.query, '30d')),
    );
    r.get(
      '/analytics/services',
      op(
        'analytics.services',
        "Usage per service: all users' calls of services the caller owns (aggregated), and the caller's own calls",
        report(ServicesQuery, ServicesAnalytics, 404),
      ),
      async (req) => servicesAnalytics(ctx, userOf(req).userId, resolvePeriod(req.query, '30d'), req.query),
    );
    r.get(
      '/analytics/tools',
      op(
        'analytics.tools',
        "Usage per tool: the caller's calls (scope=mine) or all users' calls of owned tools (scope=owned)",
        report(ToolsQuery, ToolsAnalytics, 404),
      ),
      async (req) => toolsAnalytics(ctx, userOf(req).userId, resolvePeriod(req.query, '30d'), req.query),
    );
    r.get(
      '/analytics/sessions',
      op(
        'analytics.sessions',
        "The caller's sessions: counts by status, durations, executions per session, daily series",
        report(SessionsQuery, SessionsAnalytics),
      ),
      async (req) => sessionsAnalytics(ctx, userOf(req).userId, resolvePeriod(req.query, '30d'), req.query),
    );
    r.get(
      '/analytics/realtime',
      op(
        'analytics.realtime',
        'Last 1 and 5 minutes: requests, errors, latency, executions, active sessions',
        report(RealtimeQuery, RealtimeAnalytics),
      ),
      async (req) => realtimeAnalytics(ctx, principalOf(req), req.query),
    );
  });

  await app.register(async (scope) => {
    requireAuth(scope, ctx.auth, { principals: ['user'], roles: ['admin'] });
    const r = scope.withTypeProvider<TypeBoxTypeProvider>();
    r.get(
      '/analytics/system',
      op(
        'analytics.system',
        'Platform totals: users, services, executions, error rate, agents, deployments, memories, requests (admin)',
        report(SystemQuery, SystemAnalytics),
      ),
      async (req) => systemAnalytics(ctx, resolvePeriod(req.query, '30d')),
    );
    r.get(
      '/analytics/endpoints',
      op(
        'analytics.endpoints',
        'Per-route requests, errors and latency percentiles (admin)',
        report(EndpointsQuery, EndpointsAnalytics),
      ),
      async (req) => endpointsAnalytics(ctx, resolvePeriod(req.query, '24h'), req.query),
    );
  });
}
