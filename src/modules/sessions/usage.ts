/**
 * Execution records and usage counters.
 *
 * {@link recordExecution} is the ONE write path of every tool execution. It is a group commit
 * (`lib/batcher.ts`): records that arrive while a write is in flight are written together by the next one, in a single
 * SQL statement (data-modifying CTEs, all-or-nothing) that inserts the execution rows, bumps each
 * session's `execution_count`/`last_activity_at` and upserts the daily usage counter rows
 * (`tool_usage`: per UTC day, user, agent, service and tool — calls, successes, failures, total
 * duration). Every caller's promise settles once its own record is committed (on PostgreSQL with
 * asynchronous commit, `Database.hotDb`), so an answer never names an execution that another
 * reader cannot see; under load one statement carries many executions. The
 * readers below are what analytics, search ("popular tools") and memory import.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import type { ExecutionRecord } from '../../events.js';
import { execRows } from '../../db/client.js';
import { prepareRaw, type PreparedRaw } from '../../db/prepared.js';
import { WriteBatcher } from '../../lib/batcher.js';
import { storable } from '../../lib/nul.js';

export type { ExecutionRecord } from '../../events.js';

function utcDay(d: Date): string {
  return d.toISOString().slice(0, 10);
}

/** Most records one statement carries. */
const MAX_BATCH = 256;

/** JSON text for a jsonb parameter (U+0000 replaced, see {@link storable}). */
function jsonbText(value: unknown): string {
  const text = JSON.stringify(value);
  // A literal backslash + "u0000" also matches: then the walk finds nothing and changes nothing.
  return text.includes('\\u0000') ? JSON.stringify(storable(value)) : text;
}

/** The record statement's parameters, one array per column (same order as the records). */
const COLUMNS = [
  ['ids', 'text'],
  ['sessions', 'text'],
  ['users', 'text'],
  ['agents', 'text'],
  ['services', 'text'],
  ['tools', 'text'],
  ['names', 'text'],
  ['args', 'text'],
  ['statuses', 'text'],
  ['https', 'int'],
  ['outputs', 'text'],
  ['errors', 'text'],
  ['durations', 'int'],
  ['ats', 'timestamptz'],
] as const;

/**
 * The one statement that writes a batch (any size, so one prepared statement): the records arrive
 * as one array per column (`unnest` keeps them aligned, `ord` is the arrival order); the session
 * counters and the daily usage counters are aggregated in SQL from the same rows (the usage row's
 * `tool_name` is the last record's). Data-modifying CTEs: all-or-nothing.
 */
function recordStatement(): SQL {
  const arrays = sql.join(
    COLUMNS.map(([name, type]) => sql`${sql.placeholder(name)}::${sql.raw(type)}[]`),
    sql`, `,
  );
  return sql`with r as (
      select * from unnest(${arrays}) with ordinality
        as r(id, session_id, user_id, agent_id, service_id, tool_id, tool_name, arguments, status, http_status, output, error, duration_ms, created_at, ord)
    ), e as (
      insert into executions (id, session_id, user_id, agent_id, service_id, tool_id, tool_name, arguments, status, http_status, output, error, duration_ms, created_at)
      select id, session_id, user_id, agent_id, service_id, tool_id, tool_name, arguments::jsonb, status, http_status, output::jsonb, error::jsonb, duration_ms, created_at
      from r order by ord
      returning 1
    ), s as (
      update sessions set execution_count = execution_count + v.n, last_activity_at = v.at
      from (select session_id, count(*)::int as n, max(created_at) as at from r group by session_id) as v
      where sessions.id = v.session_id
      returning 1
    ), u as (
      insert into tool_usage as t (day, user_id, agent_id, service_id, tool_id, tool_name, calls, successes, failures, total_duration_ms, updated_at)
      select (created_at at time zone 'UTC')::date, user_id, agent_id, service_id, tool_id, (array_agg(tool_name order by ord desc))[1],
             count(*)::int, count(*) filter (where status = 'succeeded')::int, count(*) filter (where status <> 'succeeded')::int,
             sum(duration_ms)::bigint, max(created_at)
      from r group by 1, user_id, agent_id, service_id, tool_id
      on conflict on constraint tool_usage_key do update set
        calls = t.calls + excluded.calls,
        successes = t.successes + excluded.successes,
        failures = t.failures + excluded.failures,
        total_duration_ms = t.total_duration_ms + excluded.total_duration_ms,
        tool_name = excluded.tool_name,
        updated_at = excluded.updated_at
      returning 1
    )
    select 1`;
}

/** Write `records` (and their aggregated counters) with the prepared statement `stmt`. */
async function writeBatch(stmt: PreparedRaw<unknown>, records: ExecutionRecord[]): Promise<void> {
  const cols: Record<(typeof COLUMNS)[number][0], unknown[]> = {
    ids: [], sessions: [], users: [], agents: [], services: [], tools: [], names: [], args: [],
    statuses: [], https: [], outputs: [], errors: [], durations: [], ats: [],
  };
  for (const r of records) {
    cols.ids.push(r.id);
    cols.sessions.push(r.sessionId);
    cols.users.push(r.userId);
    cols.agents.push(r.agentId);
    cols.services.push(r.serviceId);
    cols.tools.push(r.toolId);
    cols.names.push(r.toolName);
    cols.args.push(jsonbText(r.arguments));
    cols.statuses.push(r.status);
    cols.https.push(r.httpStatus);
    cols.outputs.push(r.output === undefined ? null : jsonbText(r.output));
    cols.errors.push(r.error ? jsonbText(r.error) : null);
    cols.durations.push(Math.max(0, Math.round(r.durationMs)));
    cols.ats.push((r.at ?? new Date()).toISOString());
  }
  await stmt.run(cols);
}

/**
 * The execution log of one app (`ctx.executionLog`, built in `app.ts`; `ctxOf` returns that app's
 * context, which does not exist yet when the log is built): the platform's
 * {@link WriteBatcher} over {@link writeBatch}, at most {@link MAX_BATCH} records per statement,
 * the statement prepared once on the app's `hotDb` (`execution_record`).
 */
export function createExecutionLog(ctxOf: () => AppContext): WriteBatcher<ExecutionRecord> {
  const write = (records: ExecutionRecord[]) => writeBatch(prepareRaw(ctxOf().database.hotDb, 'execution_record', recordStatement), records);
  return new WriteBatcher<ExecutionRecord>({ write, maxBatch: MAX_BATCH });
}

/**
 * Record an execution, its session's counters and the usage counters (group commit, see the
 * module comment). Resolves once committed. @throws the database error of this record's write
 */
export function recordExecution(ctx: AppContext, r: ExecutionRecord): Promise<void> {
  return ctx.executionLog.add(r);
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
