/**
 * Execution records and usage counters.
 *
 * {@link recordExecution} is the ONE write path of every tool execution. It is a group commit
 * (`lib/batcher.ts`): records that arrive while a write is in flight are written together by the
 * next one, in a single SQL statement (data-modifying CTEs, all-or-nothing; a plainer statement
 * when the batch holds one record) that inserts the execution rows, bumps each
 * session's `execution_count`/`last_activity_at` and upserts the daily usage counter rows
 * (`tool_usage`: per UTC day, user, agent, service and tool — calls, successes, failures, total
 * duration) and the per-minute call counters policies sum (`tool_call_minutes`, ADR 0997; rows
 * older than 25 hours are pruned by the writer at most every ten minutes). Every caller's promise
 * settles once its own record is committed (on PostgreSQL with asynchronous commit,
 * `Database.hotDb`), so an answer never names an execution that another reader cannot see; under
 * load one statement carries many executions. The readers below are what analytics, search
 * ("popular tools") and memory import.
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

/** Shortest interval between two prunes of the minute counters by one instance, ms. */
const MINUTE_PRUNE_EVERY_MS = 10 * 60_000;

/** Most records one statement carries. */
const MAX_BATCH = 256;

/** JSON text for a jsonb parameter (U+0000 replaced, see {@link storable}). */
function jsonbText(value: unknown): string {
  const text = JSON.stringify(value);
  // A literal backslash + "u0000" also matches: then the walk finds nothing and changes nothing.
  return text.includes('\\u0000') ? JSON.stringify(storable(value)) : text;
}

/** The record statements' parameters (one value per record, or one array per column for a batch), in this order. */
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

type Column = (typeof COLUMNS)[number][0];

/** The columns of `executions` that the statements insert, in {@link COLUMNS} order. */
const EXECUTION_COLUMNS = sql.raw(
  'id, session_id, user_id, agent_id, service_id, tool_id, tool_name, arguments, status, http_status, output, error, duration_ms, created_at',
);

/** How a usage counter row that exists already takes the new counts (`excluded`: the row the statement would have inserted). */
const USAGE_CONFLICT = sql.raw(`on conflict on constraint tool_usage_key do update set
        calls = t.calls + excluded.calls,
        successes = t.successes + excluded.successes,
        failures = t.failures + excluded.failures,
        total_duration_ms = t.total_duration_ms + excluded.total_duration_ms,
        tool_name = excluded.tool_name,
        updated_at = excluded.updated_at`);

/** The columns of `tool_usage` that the statements insert. */
const USAGE_COLUMNS = sql.raw(
  'day, user_id, agent_id, service_id, tool_id, tool_name, calls, successes, failures, total_duration_ms, updated_at',
);

/** The columns of `tool_call_minutes` (the per-minute counters policies sum, ADR 0997) that the statements insert. */
const MINUTE_COLUMNS = sql.raw('tool_id, user_id, minute, agent_id, calls');

/** How a minute counter row that exists already takes the new calls. */
const MINUTE_CONFLICT = sql.raw(
  'on conflict on constraint tool_call_minutes_key do update set calls = m.calls + excluded.calls',
);

/**
 * The statement that writes a batch of any size (so one prepared statement): the records arrive
 * as one array per column (`unnest` keeps them aligned, `ord` is the arrival order); the session
 * counters and the daily usage counters are aggregated in SQL from the same rows (the usage row's
 * `tool_name` is the last record's). Data-modifying CTEs: all-or-nothing.
 */
function batchStatement(): SQL {
  const arrays = sql.join(
    COLUMNS.map(([name, type]) => sql`${sql.placeholder(name)}::${sql.raw(type)}[]`),
    sql`, `,
  );
  return sql`with r as (
      select * from unnest(${arrays}) with ordinality
        as r(${EXECUTION_COLUMNS}, ord)
    ), e as (
      insert into executions (${EXECUTION_COLUMNS})
      select id, session_id, user_id, agent_id, service_id, tool_id, tool_name, arguments::jsonb, status, http_status, output::jsonb, error::jsonb, duration_ms, created_at
      from r order by ord
      returning 1
    ), s as (
      update sessions set execution_count = execution_count + v.n, last_activity_at = v.at
      from (select session_id, count(*)::int as n, max(created_at) as at from r group by session_id) as v
      where sessions.id = v.session_id
      returning 1
    ), u as (
      insert into tool_usage as t (${USAGE_COLUMNS})
      select (created_at at time zone 'UTC')::date, user_id, agent_id, service_id, tool_id, (array_agg(tool_name order by ord desc))[1],
             count(*)::int, count(*) filter (where status = 'succeeded')::int, count(*) filter (where status <> 'succeeded')::int,
             sum(duration_ms)::bigint, max(created_at)
      from r group by 1, user_id, agent_id, service_id, tool_id
      ${USAGE_CONFLICT}
      returning 1
    ), m as (
      insert into tool_call_minutes as m (${MINUTE_COLUMNS})
      select tool_id, user_id, date_trunc('minute', created_at), agent_id, count(*)::int
      from r group by 1, 2, 3, 4
      ${MINUTE_CONFLICT}
      returning 1
    )
    select 1`;
}

/**
 * The same write for one record (what every batch is when executions do not overlap, e.g. one
 * agent calling tools one after another): plain `values`, no `unnest`, sort or aggregation.
 * PostgreSQL runs it in ~60 % of the batch statement's time for one row (0.08 vs 0.13 ms here),
 * which is on the answer's path.
 */
function singleStatement(): SQL {
  const p = Object.fromEntries(
    COLUMNS.map(([name, type]) => [name, sql`${sql.placeholder(name)}::${sql.raw(type)}`]),
  ) as Record<Column, SQL>;
  return sql`with e as (
      insert into executions (${EXECUTION_COLUMNS})
      values (${p.ids}, ${p.sessions}, ${p.users}, ${p.agents}, ${p.services}, ${p.tools}, ${p.names}, ${p.args}::jsonb, ${p.statuses}, ${p.https}, ${p.outputs}::jsonb, ${p.errors}::jsonb, ${p.durations}, ${p.ats})
    ), s as (
      update sessions set execution_count = execution_count + 1, last_activity_at = ${p.ats} where id = ${p.sessions}
    ), u as (
      insert into tool_usage as t (${USAGE_COLUMNS})
      values ((${p.ats} at time zone 'UTC')::date, ${p.users}, ${p.agents}, ${p.services}, ${p.tools}, ${p.names},
              1, (${p.statuses} = 'succeeded')::int, (${p.statuses} <> 'succeeded')::int, ${p.durations}, ${p.ats})
      ${USAGE_CONFLICT}
    ), m as (
      insert into tool_call_minutes as m (${MINUTE_COLUMNS})
      values (${p.tools}, ${p.users}, date_trunc('minute', ${p.ats}), ${p.agents}, 1)
      ${MINUTE_CONFLICT}
    )
    select 1`;
}

/** One record's parameter values, by column. */
function valuesOf(r: ExecutionRecord): Record<Column, unknown> {
  return {
    ids: r.id,
    sessions: r.sessionId,
    users: r.userId,
    agents: r.agentId,
    services: r.serviceId,
    tools: r.toolId,
    names: r.toolName,
    args: jsonbText(r.arguments),
    statuses: r.status,
    https: r.httpStatus,
    outputs: r.output === undefined ? null : jsonbText(r.output),
    errors: r.error ? jsonbText(r.error) : null,
    durations: Math.max(0, Math.round(r.durationMs)),
    ats: (r.at ?? new Date()).toISOString(),
  };
}

/** The two prepared statements of one database handle. */
interface RecordStatements {
  single: PreparedRaw<unknown>;
  batch: PreparedRaw<unknown>;
}

/** Write `records` (and their aggregated counters): one record with `single`, more with `batch`. */
async function writeBatch(stmts: RecordStatements, records: ExecutionRecord[]): Promise<void> {
  if (records.length === 1) {
    await stmts.single.run(valuesOf(records[0]));
    return;
  }
  const cols = Object.fromEntries(COLUMNS.map(([name]) => [name, [] as unknown[]])) as Record<Column, unknown[]>;
  for (const r of records) {
    const v = valuesOf(r);
    for (const [name] of COLUMNS) cols[name].push(v[name]);
  }
  await stmts.batch.run(cols);
}

/**
 * The execution log of one app (`ctx.executionLog`, built in `app.ts`; `ctxOf` returns that app's
 * context, which does not exist yet when the log is built): the platform's
 * {@link WriteBatcher} over {@link writeBatch}, at most {@link MAX_BATCH} records per statement,
 * the statements prepared once on the app's `hotDb` (`execution_record_one` for a batch of one,
 * `execution_record` for more).
 */
export function createExecutionLog(ctxOf: () => AppContext): WriteBatcher<ExecutionRecord> {
  const write = async (records: ExecutionRecord[]) => {
    const db = ctxOf().database.hotDb;
    await writeBatch(
      {
        single: prepareRaw(db, 'execution_record_one', singleStatement),
        batch: prepareRaw(db, 'execution_record', batchStatement),
      },
      records,
    );
  };
  // On PostgreSQL records queue behind the write in flight by themselves; the gather turn (for
  // PGlite, whose statements run on this thread or return at once) was ~25 µs of a lone execution.
  return new WriteBatcher<ExecutionRecord>({
    write,
    maxBatch: MAX_BATCH,
    gather: () => ctxOf().database.engine === 'pglite',
    upkeep: {
      everyMs: MINUTE_PRUNE_EVERY_MS,
      run: () =>
        execRows(ctxOf().database.hotDb, sql`delete from tool_call_minutes where minute < now() - interval '25 hours'`),
      onError: (err) =>
        ctxOf().log.warn({ err: (err as Error).message }, 'execution log: pruning minute counters failed'),
    },
  });
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
  return rows.map((r) => ({
    service_id: String(r.service_id),
    tool_id: String(r.tool_id),
    tool_name: String(r.tool_name),
    ...totals(r as never),
  }));
}

/** Most-called services (ties: service id). */
export async function topServices(
  ctx: AppContext,
  q: UsageFilter & { limit?: number } = {},
): Promise<Array<UsageTotals & { service_id: string }>> {
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
