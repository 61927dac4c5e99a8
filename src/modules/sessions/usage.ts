/**
 * Execution records and usage counters.
 *
 * {@link recordExecution} is the ONE write path of every tool execution: in a single SQL statement
 * (data-modifying CTEs, so one round trip and all-or-nothing) it inserts the execution row, bumps
 * the session's `execution_count`/`last_activity_at` and upserts the daily usage counter row
 * (`tool_usage`: per UTC day, user, agent, service and tool — calls, successes, failures, total
 * duration). The readers below are what analytics, search ("popular tools") and memory import.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { execRows } from '../../db/client.js';

/** One finished execution to record. */
export interface ExecutionRecord {
  id: string;
  sessionId: string;
  userId: string;
  agentId: string | null;
  serviceId: string;
  toolId: string;
  toolName: string;
  arguments: Record<string, unknown>;
  status: 'succeeded' | 'failed';
  httpStatus: number | null;
  output: unknown;
  error: { code: string; message: string } | null;
  durationMs: number;
  /** Defaults to now. */
  at?: Date;
}

function utcDay(d: Date): string {
  return d.toISOString().slice(0, 10);
}

/** Record an execution, the session counters and the usage counters in one statement. */
export async function recordExecution(ctx: AppContext, r: ExecutionRecord): Promise<void> {
  const at = r.at ?? new Date();
  const ok = r.status === 'succeeded' ? 1 : 0;
  const dur = Math.max(0, Math.round(r.durationMs));
  await execRows(
    ctx.db,
    sql`with e as (
          insert into executions (id, session_id, user_id, agent_id, service_id, tool_id, tool_name, arguments, status, http_status, output, error, duration_ms, created_at)
          values (${r.id}, ${r.sessionId}, ${r.userId}, ${r.agentId}, ${r.serviceId}, ${r.toolId}, ${r.toolName}, ${JSON.stringify(r.arguments)}::jsonb,
                  ${r.status}, ${r.httpStatus}::int, ${r.output === undefined ? null : JSON.stringify(r.output)}::jsonb,
                  ${r.error ? JSON.stringify(r.error) : null}::jsonb, ${dur}::int, ${at.toISOString()}::timestamptz)
          returning 1
        ), s as (
          update sessions set execution_count = execution_count + 1, last_activity_at = ${at.toISOString()}::timestamptz
          where id = ${r.sessionId}
          returning 1
        ), u as (
          insert into tool_usage as t (day, user_id, agent_id, service_id, tool_id, tool_name, calls, successes, failures, total_duration_ms, updated_at)
          values (${utcDay(at)}::date, ${r.userId}, ${r.agentId}, ${r.serviceId}, ${r.toolId}, ${r.toolName}, 1, ${ok}::int, ${1 - ok}::int, ${dur}::bigint, ${at.toISOString()}::timestamptz)
          on conflict on constraint tool_usage_key do update set
            calls = t.calls + 1,
            successes = t.successes + excluded.successes,
            failures = t.failures + excluded.failures,
            total_duration_ms = t.total_duration_ms + excluded.total_duration_ms,
            tool_name = excluded.tool_name,
            updated_at = excluded.updated_at
          returning 1
        )
        select 1`,
  );
}

// ------------------------------------------------------------------ readers

/** Filters shared by the readers. `since`/`until` are inclusive UTC days (a Date or `YYYY-MM-DD`). */
export interface UsageFilter {
  userId?: string;
  agentId?: string;
  serviceId?: string;
  toolId?: string;
  since?: Date | string;
  until?: Date | string;
}

/** Aggregated counters. `avg_duration_ms` is 0 when there were no calls. */
export interface UsageTotals {
  calls: number;
  successes: number;
  failures: number;
  total_duration_ms: number;
  avg_duration_ms: number;
}

function dayOf(v: Date | string): string {
  return typeof v === 'string' ? v.slice(0, 10) : utcDay(v);
}

function where(f: UsageFilter): SQL {
  const parts: SQL[] = [sql`true`];
  if (f.userId) parts.push(sql`user_id = ${f.userId}`);
  if (f.agentId) parts.push(sql`agent_id = ${f.agentId}`);
  if (f.serviceId) parts.push(sql`service_id = ${f.serviceId}`);
  if (f.toolId) parts.push(sql`tool_id = ${f.toolId}`);
  if (f.since) parts.push(sql`day >= ${dayOf(f.since)}::date`);
  if (f.until) parts.push(sql`day <= ${dayOf(f.until)}::date`);
  return sql.join(parts, sql` and `);
}

function totals(r: { calls: unknown; successes: unknown; failures: unknown; total_duration_ms: unknown }): UsageTotals {
  const calls = Number(r.calls ?? 0);
  const total = Number(r.total_duration_ms ?? 0);
  return {
    calls,
    successes: Number(r.successes ?? 0),
    failures: Number(r.failures ?? 0),
    total_duration_ms: total,
    avg_duration_ms: calls ? Math.round(total / calls) : 0,
  };
}

const SUMS = sql`coalesce(sum(calls), 0) as calls, coalesce(sum(successes), 0) as successes, coalesce(sum(failures), 0) as failures, coalesce(sum(total_duration_ms), 0) as total_duration_ms`;

/** Totals over the matching counter rows. */
export async function usageTotals(ctx: AppContext, f: UsageFilter = {}): Promise<UsageTotals> {
  const [row] = await execRows<Record<string, unknown>>(ctx.db, sql`select ${SUMS} from tool_usage where ${where(f)}`);
  return totals(row as never);
}

/** Most-called tools (ties: most successes, then tool id), with their latest name. */
export async function topTools(
  ctx: AppContext,
  q: UsageFilter & { limit?: number } = {},
): Promise<Array<UsageTotals & { service_id: string; tool_id: string; tool_name: string }>> {
  const rows = await execRows<Record<string, unknown>>(
    ctx.db,
    sql`select service_id, tool_id, (array_agg(tool_name order by day desc))[1] as tool_name, ${SUMS}
        from tool_usage where ${where(q)}
        group by service_id, tool_id
        order by sum(calls) desc, sum(successes) desc, tool_id
        limit ${Math.min(Math.max(q.limit ?? 10, 1), 1000)}::int`,
  );
  return rows.map((r) => ({ service_id: String(r.service_id), tool_id: String(r.tool_id), tool_name: String(r.tool_name), ...totals(r as never) }));
}

/** Most-called services (ties: service id). */
export async function topServices(ctx: AppContext, q: UsageFilter & { limit?: number } = {}): Promise<Array<UsageTotals & { service_id: string }>> {
  const rows = await execRows<Record<string, unknown>>(
    ctx.db,
    sql`select service_id, ${SUMS} from tool_usage where ${where(q)}
        group by service_id order by sum(calls) desc, service_id
        limit ${Math.min(Math.max(q.limit ?? 10, 1), 1000)}::int`,
  );
  return rows.map((r) => ({ service_id: String(r.service_id), ...totals(r as never) }));
}

/** Daily series (oldest first; days without calls are absent). */
export async function usageByDay(ctx: AppContext, f: UsageFilter = {}): Promise<Array<UsageTotals & { day: string }>> {
  const rows = await execRows<Record<string, unknown>>(
    ctx.db,
    sql`select to_char(day, 'YYYY-MM-DD') as day, ${SUMS} from tool_usage where ${where(f)} group by day order by day`,
  );
  return rows.map((r) => ({ day: String(r.day), ...totals(r as never) }));
}
