/**
 * Read-only statistics over the sessions module's tables (sessions, executions, tool_usage) for
 * the analytics and search modules: session distributions, execution latency percentiles,
 * per-service/per-tool usage breakdowns, co-usage for recommendations, recent activity for the
 * realtime view, and a cheap session-name search. The usage counters' only write path stays
 * `recordExecution` (usage.ts); these are readers.
 *
 * Time filters: `since` inclusive, `until` exclusive (instants). Usage counters are per UTC day, so
 * their filters take whole days (`sinceDay`/`untilDay`, inclusive, `YYYY-MM-DD`).
 */
import { sql, type SQL } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { execRows } from '../../db/client.js';
import { idFloor, iso } from '../../http/ids.js';
import type { SessionActor } from '../../http/auth.js';

function num(v: unknown): number {
  return v === null || v === undefined ? 0 : Number(v);
}

function numOrNull(v: unknown): number | null {
  return v === null || v === undefined ? null : Math.round(Number(v) * 100) / 100;
}

function inList(ids: string[]): SQL {
  return sql`(select jsonb_array_elements_text(${JSON.stringify(ids.length ? ids : [''])}::jsonb))`;
}

// ------------------------------------------------------------------ sessions

/** Sessions of one account created in a period: counts, durations and executions per session. */
export interface SessionStats {
  total: number;
  by_status: { active: number; closed: number };
  /** Sessions without any execution. */
  empty: number;
  executions: number;
  /** Executions per session. */
  executions_per_session: { avg: number; p50: number; p95: number; max: number };
  /**
   * Duration, ms: closed sessions from creation to close; active ones from creation to their last
   * activity (so far). null when there are no sessions.
   */
  duration_ms: { avg: number | null; p50: number | null; p95: number | null; max: number | null };
  /** Sessions created per UTC day (days without sessions absent). */
  by_day: Array<{ day: string; sessions: number; executions: number }>;
  /** Sessions per agent (null = the user itself), most first, at most 20. */
  by_agent: Array<{ agent_id: string | null; sessions: number; executions: number }>;
}

/** Statistics of `userId`'s sessions created in [since, until), optionally of one agent. */
export async function sessionStats(
  ctx: AppContext,
  f: { userId: string; agentId?: string; since: Date; until: Date },
): Promise<SessionStats> {
  const where = sql`user_id = ${f.userId} and created_at >= ${f.since.toISOString()}::timestamptz and created_at < ${f.until.toISOString()}::timestamptz
    ${f.agentId ? sql`and agent_id = ${f.agentId}` : sql``}`;
  const dur = sql`extract(epoch from (coalesce(closed_at, last_activity_at, created_at) - created_at)) * 1000`;
  const [[m], byDay, byAgent] = await Promise.all([
    execRows<Record<string, unknown>>(
      ctx.db,
      sql`select count(*) as total,
                 count(*) filter (where status = 'active') as active,
                 count(*) filter (where status = 'closed') as closed,
                 count(*) filter (where execution_count = 0) as empty,
                 coalesce(sum(execution_count), 0) as executions,
                 coalesce(avg(execution_count), 0) as e_avg,
                 coalesce(percentile_cont(0.5) within group (order by execution_count), 0) as e_p50,
                 coalesce(percentile_cont(0.95) within group (order by execution_count), 0) as e_p95,
                 coalesce(max(execution_count), 0) as e_max,
                 avg(${dur}) as d_avg,
                 percentile_cont(0.5) within group (order by ${dur}) as d_p50,
                 percentile_cont(0.95) within group (order by ${dur}) as d_p95,
                 max(${dur}) as d_max
          from sessions where ${where}`,
    ),
    execRows<Record<string, unknown>>(
      ctx.db,
      sql`select to_char((created_at at time zone 'utc')::date, 'YYYY-MM-DD') as day, count(*) as n, coalesce(sum(execution_count), 0) as e
          from sessions where ${where} group by 1 order by 1`,
    ),
    execRows<Record<string, unknown>>(
      ctx.db,
      sql`select agent_id, count(*) as n, coalesce(sum(execution_count), 0) as e
          from sessions where ${where} group by agent_id order by count(*) desc, agent_id nulls first limit 20`,
    ),
  ]);
  return {
    total: num(m.total),
    by_status: { active: num(m.active), closed: num(m.closed) },
    empty: num(m.empty),
    executions: num(m.executions),
    executions_per_session: {
      avg: numOrNull(m.e_avg) ?? 0,
      p50: numOrNull(m.e_p50) ?? 0,
      p95: numOrNull(m.e_p95) ?? 0,
      max: num(m.e_max),
    },
    duration_ms: { avg: round0(m.d_avg), p50: round0(m.d_p50), p95: round0(m.d_p95), max: round0(m.d_max) },
    by_day: byDay.map((r) => ({ day: String(r.day), sessions: num(r.n), executions: num(r.e) })),
    by_agent: byAgent.map((r) => ({
      agent_id: (r.agent_id as string | null) ?? null,
      sessions: num(r.n),
      executions: num(r.e),
    })),
  };
}

function round0(v: unknown): number | null {
  return v === null || v === undefined ? null : Math.round(Number(v));
}

/** Session counts: all-time total, active now, created in [since, until). `userId` absent → platform-wide. */
export async function countSessions(
  ctx: AppContext,
  f: { userId?: string; since: Date; until: Date },
): Promise<{ total: number; active: number; created_in_period: number }> {
  const [r] = await execRows<Record<string, unknown>>(
    ctx.db,
    sql`select count(*) as total, count(*) filter (where status = 'active') as active,
               count(*) filter (where created_at >= ${f.since.toISOString()}::timestamptz and created_at < ${f.until.toISOString()}::timestamptz) as created
        from sessions ${f.userId ? sql`where user_id = ${f.userId}` : sql``}`,
  );
  return { total: num(r.total), active: num(r.active), created_in_period: num(r.created) };
}

/**
 * Sessions of the actor whose name contains `q` (case-insensitive), or whose id is `q`; names
 * starting with `q` first, then newest. Cheap: the account's rows only (index on user_id, id).
 */
export async function searchSessionsByName(
  ctx: AppContext,
  actor: SessionActor,
  q: string,
  limit: number,
): Promise<{
  found: number;
  data: Array<{
    id: string;
    name: string | null;
    status: string;
    agent_id: string | null;
    execution_count: number;
    created_at: string;
    leading: boolean;
  }>;
}> {
  const needle = q.trim().toLowerCase().slice(0, 200);
  if (!needle) return { found: 0, data: [] };
  const like = `%${needle.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  const rows = await execRows<Record<string, unknown>>(
    ctx.db,
    sql`select id, name, status, agent_id, execution_count, created_at, (lower(coalesce(name, '')) like ${`${needle.replace(/[\\%_]/g, (c) => `\\${c}`)}%`}) as is_leading,
               count(*) over () as found
        from sessions
        where user_id = ${actor.accountId} ${actor.agentId ? sql`and agent_id = ${actor.agentId}` : sql``}
          and (lower(coalesce(name, '')) like ${like} or id = ${q.trim()})
        order by is_leading desc, id desc limit ${limit}::int`,
  );
  return {
    found: rows.length ? num(rows[0].found) : 0,
    data: rows.map((r) => ({
      id: String(r.id),
      name: (r.name as string | null) ?? null,
      status: String(r.status),
      agent_id: (r.agent_id as string | null) ?? null,
      execution_count: num(r.execution_count),
      created_at: iso(r.created_at as Date | string),
      leading: Boolean(r.is_leading),
    })),
  };
}

// ------------------------------------------------------------------ executions

/** Latency and outcome of executions. Durations in ms; null without executions. */
export interface ExecutionLatency {
  key: string | null;
  executions: number;
  failures: number;
  avg_ms: number | null;
  p50_ms: number | null;
  p95_ms: number | null;
  p99_ms: number | null;
}

/**
 * Execution latency percentiles in [since, until) from the executions table (exact, not sampled),
 * for one user and/or a set of tools, overall or grouped by tool or service.
 */
export async function executionLatency(
  ctx: AppContext,
  f: { userId?: string; toolIds?: string[]; since: Date; until: Date; groupBy?: 'tool' | 'service' },
): Promise<ExecutionLatency[]> {
  const key = f.groupBy === 'tool' ? sql`tool_id` : f.groupBy === 'service' ? sql`service_id` : sql`null::text`;
  const rows = await execRows<Record<string, unknown>>(
    ctx.db,
    sql`select ${key} as key, count(*) as n, count(*) filter (where status = 'failed') as failures,
               avg(duration_ms) as avg, percentile_cont(0.5) within group (order by duration_ms) as p50,
               percentile_cont(0.95) within group (order by duration_ms) as p95, percentile_cont(0.99) within group (order by duration_ms) as p99
        from executions
        where created_at >= ${f.since.toISOString()}::timestamptz and created_at < ${f.until.toISOString()}::timestamptz
          ${f.userId ? sql`and user_id = ${f.userId} and id >= ${idFloor('exe', new Date(f.since.getTime() - 60_000))}` : sql``}
          ${f.toolIds ? sql`and tool_id in ${inList(f.toolIds)}` : sql``}
        ${f.groupBy ? sql`group by 1` : sql``}`,
  );
  return rows
    .filter((r) => num(r.n) > 0)
    .map((r) => ({
      key: (r.key as string | null) ?? null,
      executions: num(r.n),
      failures: num(r.failures),
      avg_ms: round0(r.avg),
      p50_ms: round0(r.p50),
      p95_ms: round0(r.p95),
      p99_ms: round0(r.p99),
    }));
}

/**
 * Executions since `since` (the realtime view): count, failures and p50/p95 duration, platform-wide
 * or for one account. Uses the time-sortable primary key (`id >= idFloor`), no created_at index.
 */
export async function recentExecutions(
  ctx: AppContext,
  f: { since: Date; userId?: string },
): Promise<{ executions: number; failures: number; p50_ms: number | null; p95_ms: number | null }> {
  const [r] = await execRows<Record<string, unknown>>(
    ctx.db,
    sql`select count(*) as n, count(*) filter (where status = 'failed') as failures,
               percentile_cont(0.5) within group (order by duration_ms) as p50, percentile_cont(0.95) within group (order by duration_ms) as p95
        from executions
        where id >= ${idFloor('exe', f.since)} ${f.userId ? sql`and user_id = ${f.userId}` : sql``}`,
  );
  return { executions: num(r.n), failures: num(r.failures), p50_ms: round0(r.p50), p95_ms: round0(r.p95) };
}

/** Sessions that are `active` and had activity (or were created) since `since`; platform-wide or for one account. */
export async function activeSessionCount(ctx: AppContext, f: { since: Date; userId?: string }): Promise<number> {
  const [r] = await execRows<{ n: number | string }>(
    ctx.db,
    sql`select count(*) as n from sessions
        where status = 'active' and coalesce(last_activity_at, created_at) >= ${f.since.toISOString()}::timestamptz
          ${f.userId ? sql`and user_id = ${f.userId}` : sql``}`,
  );
  return num(r.n);
}

// ------------------------------------------------------------------ usage counters

/** Usage of one service or tool over the counters (calls by all matching users). */
export interface UsageBreakdownRow {
  key: string;
  service_id: string;
  /** Latest tool name (tool breakdown only). */
  tool_name: string | null;
  calls: number;
  successes: number;
  failures: number;
  total_duration_ms: number;
  avg_duration_ms: number;
  /** Distinct users (accounts) that called it. */
  unique_users: number;
  /** Last UTC day with calls. */
  last_day: string | null;
}

/**
 * Usage counters grouped by service or tool, for a set of services and/or one user, over whole UTC
 * days [sinceDay, untilDay]. Most calls first, at most `limit` (≤ 1000).
 */
export async function usageBreakdown(
  ctx: AppContext,
  f: {
    by: 'service' | 'tool';
    serviceIds?: string[];
    userId?: string;
    sinceDay: string;
    untilDay: string;
    limit?: number;
  },
): Promise<UsageBreakdownRow[]> {
  const key = f.by === 'tool' ? sql`tool_id` : sql`service_id`;
  const rows = await execRows<Record<string, unknown>>(
    ctx.db,
    sql`select ${key} as key, min(service_id) as service_id,
               ${f.by === 'tool' ? sql`(array_agg(tool_name order by day desc))[1]` : sql`null`} as tool_name,
               sum(calls) as calls, sum(successes) as successes, sum(failures) as failures, sum(total_duration_ms) as total_ms,
               count(distinct user_id) as users, to_char(max(day) filter (where calls > 0), 'YYYY-MM-DD') as last_day
        from tool_usage
        where day >= ${f.sinceDay}::date and day <= ${f.untilDay}::date
          ${f.serviceIds ? sql`and service_id in ${inList(f.serviceIds)}` : sql``}
          ${f.userId ? sql`and user_id = ${f.userId}` : sql``}
        group by 1 order by sum(calls) desc, 1 limit ${Math.min(Math.max(f.limit ?? 100, 1), 1000)}::int`,
  );
  return rows.map((r) => {
    const calls = num(r.calls);
    const total = num(r.total_ms);
    return {
      key: String(r.key),
      service_id: String(r.service_id),
      tool_name: (r.tool_name as string | null) ?? null,
      calls,
      successes: num(r.successes),
      failures: num(r.failures),
      total_duration_ms: total,
      avg_duration_ms: calls ? Math.round(total / calls) : 0,
      unique_users: num(r.users),
      last_day: (r.last_day as string | null) ?? null,
    };
  });
}

/** Distinct users (accounts) with calls over whole UTC days [sinceDay, untilDay], optionally of some services. */
export async function uniqueUsers(
  ctx: AppContext,
  f: { serviceIds?: string[]; sinceDay: string; untilDay: string },
): Promise<number> {
  const [r] = await execRows<{ n: number | string }>(
    ctx.db,
    sql`select count(distinct user_id) as n from tool_usage
        where day >= ${f.sinceDay}::date and day <= ${f.untilDay}::date ${f.serviceIds ? sql`and service_id in ${inList(f.serviceIds)}` : sql``}`,
  );
  return num(r.n);
}

/**
 * Co-usage for recommendations: services used (since `sinceDay`) by other accounts that also used
 * any of `serviceIds`, excluding those services; most such users first. At most 1000 peers are
 * considered (the most recent ones).
 */
export async function coUsedServices(
  ctx: AppContext,
  f: { serviceIds: string[]; excludeUserId: string; sinceDay: string; limit: number },
): Promise<Array<{ service_id: string; users: number; calls: number }>> {
  if (!f.serviceIds.length) return [];
  const rows = await execRows<Record<string, unknown>>(
    ctx.db,
    sql`with peers as (
          select user_id from tool_usage
          where service_id in ${inList(f.serviceIds)} and user_id <> ${f.excludeUserId} and day >= ${f.sinceDay}::date
          group by user_id order by max(day) desc limit 1000
        )
        select u.service_id, count(distinct u.user_id) as users, sum(u.calls) as calls
        from tool_usage u join peers p on p.user_id = u.user_id
        where u.day >= ${f.sinceDay}::date and u.service_id not in ${inList(f.serviceIds)}
        group by u.service_id order by count(distinct u.user_id) desc, sum(u.calls) desc, u.service_id limit ${f.limit}::int`,
  );
  return rows.map((r) => ({ service_id: String(r.service_id), users: num(r.users), calls: num(r.calls) }));
}
