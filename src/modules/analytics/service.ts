/**
 * Analytics (spec group "Analytics"; DESIGN.md §6: `pro` and above, `system`/`endpoints` admin only).
 *
 * Sources: the usage counters (per UTC day; sessions module readers) for calls, successes, failures
 * and average durations; the executions table for exact latency percentiles; each module's counting
 * functions for platform totals; the realtime counters and the persisted per-route aggregates of
 * this module for request traffic. Another user's identity never appears: services analytics shows
 * all users' calls only for services the caller owns, aggregated.
 *
 * Periods (`period.ts`): `window` (`24h` | `7d` | `30d` | `90d`, ending now) or `from`/`to` (ISO 8601, at most
 * 366 days apart). Counter-based figures cover the whole UTC days of the period (`from_day` ..
 * `to_day`); execution- and session-based figures the exact instants.
 */
import type { AppContext } from '../../context.js';
import { accountOf, type Principal } from '../../http/auth.js';
import { AppError, notFound } from '../../http/errors.js';
import { countAgents } from '../agents/stats.js';
import { countDeployments } from '../deployments/stats.js';
import { countUsers } from '../identity/stats.js';
import { countMemories } from '../memory/stats.js';
import { countCatalog, getCatalogServices, listCatalogToolsOf, listOwnedCatalogServices } from '../registry/catalog.js';
import {
  activeSessionCount,
  countSessions,
  executionLatency,
  recentExecutions,
  sessionStats,
  uniqueUsers,
  usageBreakdown,
  type UsageBreakdownRow,
} from '../sessions/stats.js';
import { topServices, topTools, usageByDay, usageTotals } from '../sessions/usage.js';
import { countSubscriptions } from '../subscriptions/stats.js';
import { EndpointRecorder, readEndpointStats } from './endpoints.js';
import { RealtimeCounters } from './realtime.js';
import { daysOf, filledDays, periodView, rate, usageView, type Period } from './period.js';
import type { AnalyticsRuntime } from './state.js';

// ------------------------------------------------------------------ runtime (recorders)

/** Create and start the recorders of this app once (flushed and stopped at shutdown via `ctx.onClose`). */
export function startAnalytics(ctx: AppContext): AnalyticsRuntime {
  if (ctx.analytics) return ctx.analytics;
  const rt: AnalyticsRuntime = { realtime: new RealtimeCounters(ctx), endpoints: new EndpointRecorder(ctx) };
  rt.realtime.start();
  rt.endpoints.start();
  ctx.onClose.push(async () => {
    await Promise.all([rt.realtime.stop(), rt.endpoints.stop()]);
  });
  ctx.analytics = rt;
  return rt;
}

function runtimeOf(ctx: AppContext): AnalyticsRuntime {
  return ctx.analytics ?? startAnalytics(ctx);
}

// ------------------------------------------------------------------ /analytics/user

/** The caller's own usage over the period. */
export async function userAnalytics(ctx: AppContext, userId: string, period: Period) {
  const f = { userId, since: period.fromDay, until: period.toDay };
  const [totals, byDay, tools, services, latency, sessions, memories] = await Promise.all([
    usageTotals(ctx, f),
    usageByDay(ctx, f),
    topTools(ctx, { ...f, limit: 10 }),
    topServices(ctx, { ...f, limit: 10 }),
    executionLatency(ctx, { userId, since: period.from, until: period.to }),
    countSessions(ctx, { userId, since: period.from, until: period.to }),
    countMemories(ctx, { userId }),
  ]);
  const names = new Map(
    (
      await getCatalogServices(ctx, '*', [
        ...new Set([...tools.map((t) => t.service_id), ...services.map((s) => s.service_id)]),
      ])
    ).map((s) => [s.id, s]),
  );
  const lat = latency[0];
  return {
    period: periodView(period),
    totals: { ...usageView(totals), p50_duration_ms: lat?.p50_ms ?? null, p95_duration_ms: lat?.p95_ms ?? null },
    by_day: filledDays(period, byDay),
    top_tools: tools.map((t) => ({
      tool_id: t.tool_id,
      tool_name: t.tool_name,
      service_id: t.service_id,
      service_name: names.get(t.service_id)?.name ?? null,
      ...usageView(t),
    })),
    top_services: services.map((s) => ({
      service_id: s.service_id,
      service_name: names.get(s.service_id)?.name ?? null,
      ...usageView(s),
    })),
    sessions,
    memories,
  };
}

// ------------------------------------------------------------------ /analytics/services

function breakdownView(r: UsageBreakdownRow | undefined) {
  return {
    calls: r?.calls ?? 0,
    successes: r?.successes ?? 0,
    failures: r?.failures ?? 0,
    success_rate: rate(r?.successes ?? 0, r?.calls ?? 0),
    avg_duration_ms: r?.avg_duration_ms ?? 0,
    last_day: r?.last_day ?? null,
  };
}

/** {@link breakdownView} plus distinct users (owners' views only). */
function ownerBreakdownView(r: UsageBreakdownRow | undefined) {
  return { ...breakdownView(r), unique_users: r?.unique_users ?? 0 };
}

/**
 * Usage per service: for services the caller owns, calls by all users (aggregated, with distinct
 * user counts, never identities) in `usage`; for every service the caller owns or called, its own
 * calls in `my_usage`. With `serviceId`: that service only, plus its daily series and per-tool
 * breakdown (all users' for an owned service, the caller's otherwise).
 * @throws AppError not_found (serviceId neither owned, visible, nor called by the caller)
 */
export async function servicesAnalytics(
  ctx: AppContext,
  userId: string,
  period: Period,
  q: { service_id?: string; limit?: number },
) {
  const days = { sinceDay: period.fromDay, untilDay: period.toDay };
  const owned = await listOwnedCatalogServices(ctx, userId);
  const ownedIds = owned.map((s) => s.id);
  const [all, mine] = await Promise.all([
    ownedIds.length ? usageBreakdown(ctx, { by: 'service', serviceIds: ownedIds, ...days, limit: 1000 }) : [],
    usageBreakdown(ctx, { by: 'service', userId, ...days, limit: 1000 }),
  ]);
  const allBy = new Map(all.map((r) => [r.key, r]));
  const mineBy = new Map(mine.map((r) => [r.key, r]));
  const ownedSet = new Set(ownedIds);
  const ids = q.service_id ? [q.service_id] : [...new Set([...ownedIds, ...mine.map((r) => r.key)])];
  const details = new Map(
    [
      ...owned,
      ...(await getCatalogServices(
        ctx,
        '*',
        ids.filter((id) => !ownedSet.has(id)),
      )),
    ].map((s) => [s.id, s]),
  );
  if (q.service_id) {
    const visible =
      ownedSet.has(q.service_id) ||
      mineBy.has(q.service_id) ||
      (await getCatalogServices(ctx, userId, [q.service_id])).length > 0;
    if (!visible || !details.has(q.service_id)) throw notFound('Service');
  }
  const data = ids
    .filter((id) => details.has(id))
    .map((id) => {
      const s = details.get(id)!;
      const isOwned = ownedSet.has(id);
      return {
        service: {
          id: s.id,
          name: s.name,
          display_name: s.display_name,
          status: isOwned || s.status === 'published' ? s.status : 'unavailable',
        },
        owned: isOwned,
        usage: isOwned ? ownerBreakdownView(allBy.get(id)) : null,
        my_usage: breakdownView(mineBy.get(id)),
      };
    })
    .sort(
      (a, b) =>
        Number(b.owned) - Number(a.owned) ||
        (b.usage?.calls ?? 0) - (a.usage?.calls ?? 0) ||
        b.my_usage.calls - a.my_usage.calls,
    )
    .slice(0, q.limit ?? 100);
  if (!q.service_id) return { period: periodView(period), data };

  const id = q.service_id;
  const isOwned = ownedSet.has(id);
  const scope = isOwned ? {} : { userId };
  const [byDay, tools, latency, toolRefs] = await Promise.all([
    usageByDay(ctx, { ...scope, serviceId: id, since: period.fromDay, until: period.toDay }),
    usageBreakdown(ctx, { by: 'tool', serviceIds: [id], ...scope, ...days, limit: 1000 }),
    listCatalogToolsOf(ctx, [id]).then((t) =>
      executionLatency(ctx, {
        ...scope,
        toolIds: t.map((x) => x.id),
        since: period.from,
        until: period.to,
        groupBy: 'tool',
      }),
    ),
    isOwned ? listCatalogToolsOf(ctx, [id]) : Promise.resolve([]),
  ]);
  const latBy = new Map(latency.map((l) => [l.key, l]));
  const toolRows = new Map(tools.map((t) => [t.key, t]));
  // An owner sees every tool, called or not.
  for (const t of toolRefs)
    if (!toolRows.has(t.id))
      toolRows.set(t.id, {
        key: t.id,
        service_id: id,
        tool_name: t.name,
        calls: 0,
        successes: 0,
        failures: 0,
        total_duration_ms: 0,
        avg_duration_ms: 0,
        unique_users: 0,
        last_day: null,
      });
  return {
    period: periodView(period),
    data: data.map((d) => ({
      ...d,
      by_day: filledDays(period, byDay),
      tools: [...toolRows.values()].map((t) => ({
        tool_id: t.key,
        tool_name: t.tool_name ?? t.key,
        ...(isOwned ? ownerBreakdownView(t) : breakdownView(t)),
        p50_duration_ms: latBy.get(t.key)?.p50_ms ?? null,
        p95_duration_ms: latBy.get(t.key)?.p95_ms ?? null,
      })),
    })),
  };
}

// ------------------------------------------------------------------ /analytics/tools

/**
 * Usage per tool. `scope=mine` (default): the caller's own calls of any tool. `scope=owned`: all
 * users' calls (aggregated, with distinct user counts) of the tools of services the caller owns,
 * including tools nobody called. Latency percentiles from the executions of the period.
 */
export async function toolsAnalytics(
  ctx: AppContext,
  userId: string,
  period: Period,
  q: { scope?: 'mine' | 'owned'; service_id?: string; limit?: number },
) {
  const scope = q.scope ?? 'mine';
  const days = { sinceDay: period.fromDay, untilDay: period.toDay };
  const limit = q.limit ?? 50;
  if (scope === 'mine') {
    const rows = await usageBreakdown(ctx, {
      by: 'tool',
      userId,
      ...(q.service_id ? { serviceIds: [q.service_id] } : {}),
      ...days,
      limit,
    });
    const [latency, services] = await Promise.all([
      executionLatency(ctx, { userId, since: period.from, until: period.to, groupBy: 'tool' }),
      getCatalogServices(ctx, '*', [...new Set(rows.map((r) => r.service_id))]),
    ]);
    const latBy = new Map(latency.map((l) => [l.key, l]));
    const names = new Map(services.map((s) => [s.id, s.name]));
    return {
      period: periodView(period),
      scope,
      data: rows.map((r) => ({
        tool_id: r.key,
        tool_name: r.tool_name ?? r.key,
        service_id: r.service_id,
        service_name: names.get(r.service_id) ?? null,
        ...breakdownView(r),
        p50_duration_ms: latBy.get(r.key)?.p50_ms ?? null,
        p95_duration_ms: latBy.get(r.key)?.p95_ms ?? null,
      })),
    };
  }
  let owned = await listOwnedCatalogServices(ctx, userId);
  if (q.service_id) {
    owned = owned.filter((s) => s.id === q.service_id || s.name === q.service_id);
    if (!owned.length) throw notFound('Service');
  }
  const serviceIds = owned.map((s) => s.id);
  const toolRefs = await listCatalogToolsOf(ctx, serviceIds);
  const [rows, latency] = await Promise.all([
    serviceIds.length ? usageBreakdown(ctx, { by: 'tool', serviceIds, ...days, limit: 1000 }) : [],
    toolRefs.length
      ? executionLatency(ctx, {
          toolIds: toolRefs.map((t) => t.id),
          since: period.from,
          until: period.to,
          groupBy: 'tool',
        })
      : [],
  ]);
  const byTool = new Map(rows.map((r) => [r.key, r]));
  const latBy = new Map(latency.map((l) => [l.key, l]));
  const names = new Map(owned.map((s) => [s.id, s.name]));
  const data = toolRefs
    .map((t) => ({
      tool_id: t.id,
      tool_name: t.name,
      service_id: t.service_id,
      service_name: names.get(t.service_id) ?? null,
      ...ownerBreakdownView(byTool.get(t.id)),
      p50_duration_ms: latBy.get(t.id)?.p50_ms ?? null,
      p95_duration_ms: latBy.get(t.id)?.p95_ms ?? null,
    }))
    .sort((a, b) => b.calls - a.calls || (a.tool_id < b.tool_id ? -1 : 1))
    .slice(0, limit);
  return { period: periodView(period), scope, data };
}

// ------------------------------------------------------------------ /analytics/sessions

/** The caller's sessions created in the period: counts by status, durations, executions per session, daily series. */
export async function sessionsAnalytics(ctx: AppContext, userId: string, period: Period, q: { agent_id?: string }) {
  const [stats, now] = await Promise.all([
    sessionStats(ctx, { userId, agentId: q.agent_id, since: period.from, until: period.to }),
    countSessions(ctx, { userId, since: period.from, until: period.to }),
  ]);
  const byDay = new Map(stats.by_day.map((d) => [d.day, d]));
  return {
    period: periodView(period),
    ...stats,
    currently_active: now.active,
    by_day: daysOf(period).map((day) => ({
      day,
      sessions: byDay.get(day)?.sessions ?? 0,
      executions: byDay.get(day)?.executions ?? 0,
    })),
  };
}

// ------------------------------------------------------------------ /analytics/realtime

/**
 * Last 1 and 5 minutes: requests, errors and latency (realtime counters), executions and their
 * latency (executions table), active sessions (activity in the last 5 minutes). `scope=account`
 * (default): the caller's account; `scope=system`: the whole platform (admin only).
 * @throws AppError insufficient_role (scope=system without admin)
 */
export async function realtimeAnalytics(ctx: AppContext, principal: Principal, q: { scope?: 'account' | 'system' }) {
  const scope = q.scope ?? 'account';
  if (scope === 'system' && !principal.roles.includes('admin'))
    throw new AppError('insufficient_role', 'scope=system needs the admin role');
  const account = accountOf(principal);
  const userId = scope === 'system' ? undefined : account;
  const now = new Date();
  const rt = runtimeOf(ctx);
  const [windows, e1, e5, active] = await Promise.all([
    rt.realtime.windows(scope === 'system' ? 'all' : `a:${account}`, [60, 300], now.getTime()),
    recentExecutions(ctx, { since: new Date(now.getTime() - 60_000), userId }),
    recentExecutions(ctx, { since: new Date(now.getTime() - 300_000), userId }),
    activeSessionCount(ctx, { since: new Date(now.getTime() - 300_000), userId }),
  ]);
  const withExec = (w: (typeof windows)[number], e: typeof e1) => ({
    ...w,
    executions: e.executions,
    execution_failures: e.failures,
    execution_p50_ms: e.p50_ms,
    execution_p95_ms: e.p95_ms,
  });
  return {
    at: now.toISOString(),
    scope,
    backend: rt.realtime.backend,
    last_1m: withExec(windows[0], e1),
    last_5m: withExec(windows[1], e5),
    active_sessions: active,
  };
}

// ------------------------------------------------------------------ /analytics/system (admin)

/** Platform totals through each module's counting functions, plus traffic from the per-route aggregates. */
export async function systemAnalytics(ctx: AppContext, period: Period) {
  await runtimeOf(ctx).endpoints.flush();
  const [users, catalog, usage, activeUsers, sessions, agents, deployments, memories, subscriptions, traffic] =
    await Promise.all([
      countUsers(ctx, { since: period.from, until: period.to }),
      countCatalog(ctx),
      usageTotals(ctx, { since: period.fromDay, until: period.toDay }),
      uniqueUsers(ctx, { sinceDay: period.fromDay, untilDay: period.toDay }),
      countSessions(ctx, { since: period.from, until: period.to }),
      countAgents(ctx),
      countDeployments(ctx, { since: period.from, until: period.to }),
      countMemories(ctx),
      countSubscriptions(ctx),
      readEndpointStats(ctx, { from: period.from, to: period.to, limit: 1 }),
    ]);
  return {
    period: periodView(period),
    users: { ...users, active_in_period: activeUsers },
    services: catalog.services,
    tools: { total: catalog.tools },
    executions: { ...usageView(usage), error_rate: rate(usage.failures, usage.calls) },
    sessions,
    agents,
    deployments: deployments.deployments,
    invocations: deployments.invocations,
    memories,
    subscriptions,
    requests: {
      total: traffic.totals.requests,
      errors: traffic.totals.errors,
      client_errors: traffic.totals.client_errors,
      error_rate: rate(traffic.totals.errors, traffic.totals.requests),
      routes: traffic.totals.routes,
    },
  };
}

// ------------------------------------------------------------------ /analytics/endpoints (admin)

/**
 * Per-route request counts, errors and latency percentiles over the period (minute resolution),
 * from the persisted aggregates of every instance (this instance's pending minute cells are
 * flushed first).
 */
export async function endpointsAnalytics(
  ctx: AppContext,
  period: Period,
  q: { method?: string; route?: string; sort?: 'requests' | 'p95' | 'errors'; limit?: number },
) {
  await runtimeOf(ctx).endpoints.flush();
  const res = await readEndpointStats(ctx, {
    method: q.method,
    route: q.route,
    sort: q.sort,
    limit: q.limit,
    from: period.from,
    to: period.to,
  });
  return {
    period: periodView(period),
    totals: { ...res.totals, error_rate: rate(res.totals.errors, res.totals.requests) },
    data: res.data,
  };
}
