/**
 * Per-route request aggregates (`GET /analytics/endpoints`). Each instance adds finished requests
 * to in-memory cells keyed by UTC minute, method, route template and status (count, total and max
 * duration, latency histogram) and every `ANALYTICS_FLUSH_MS` (and at shutdown) adds them to
 * `endpoint_stats` with one upsert per batch, so nothing is written per request, counts survive
 * restarts and several instances sum up. Rows older than `ANALYTICS_RETENTION_DAYS` are deleted
 * hourly.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { execRows } from '../../db/client.js';
import { BUCKETS, bucketOf, percentile } from './histogram.js';

interface Cell {
  minute: number;
  method: string;
  route: string;
  status: number;
  op: string | null;
  count: number;
  totalMs: number;
  maxMs: number;
  buckets: number[];
}

/** Cells kept while the database is unreachable before the oldest are dropped. */
const MAX_PENDING_CELLS = 50_000;
/** Rows per upsert statement. */
const BATCH = 500;
const HOUR_MS = 3_600_000;

/** Route label of requests that matched no route (one label, so junk URLs cannot explode cardinality). */
export const UNMATCHED_ROUTE = '(unmatched)';

/** In-process minute aggregates of requests, flushed in batches to `endpoint_stats`. */
export class EndpointRecorder {
  private cells = new Map<string, Cell>();
  private timers: NodeJS.Timeout[] = [];
  private flushing: Promise<void> | null = null;

  constructor(private readonly ctx: AppContext) {}

  /** Count one finished request (hot path: a map lookup and a few additions). */
  record(
    method: string,
    route: string,
    status: number,
    operationId: string | null,
    ms: number,
    now = Date.now(),
  ): void {
    const minute = now - (now % 60_000);
    const key = `${minute}|${method}|${status}|${route}`;
    let c = this.cells.get(key);
    if (!c) {
      if (this.cells.size >= MAX_PENDING_CELLS) this.dropOldest();
      c = {
        minute,
        method,
        route,
        status,
        op: operationId,
        count: 0,
        totalMs: 0,
        maxMs: 0,
        buckets: new Array<number>(BUCKETS).fill(0),
      };
      this.cells.set(key, c);
    }
    c.count++;
    c.totalMs += ms;
    if (ms > c.maxMs) c.maxMs = ms;
    c.buckets[bucketOf(ms)]++;
  }

  /** Start the periodic flush and the hourly retention purge. */
  start(): void {
    if (this.timers.length) return;
    const flush = setInterval(() => void this.flush(), this.ctx.config.analytics.flushIntervalMs);
    const purge = setInterval(() => void this.purge(), HOUR_MS);
    flush.unref();
    purge.unref();
    this.timers.push(flush, purge);
  }

  /** Stop the timers and flush what is pending (shutdown). */
  async stop(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    await this.flush();
  }

  /** Number of cells not yet written. */
  get pending(): number {
    return this.cells.size;
  }

  /**
   * Add pending cells to `endpoint_stats` (upserts sorted by key, so concurrent instances lock rows
   * in the same order). On failure the cells are kept for the next attempt.
   */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (!this.cells.size) return;
    const batch = [...this.cells.values()].sort(
      (a, b) => a.minute - b.minute || cmp(a.method, b.method) || cmp(a.route, b.route) || a.status - b.status,
    );
    this.cells = new Map();
    this.flushing = (async () => {
      for (let i = 0; i < batch.length; i += BATCH) {
        const part = batch.slice(i, i + BATCH);
        try {
          await this.upsert(part);
        } catch (err) {
          this.ctx.log.warn(
            { err: (err as Error).message, cells: batch.length - i },
            'endpoint analytics: flush failed; will retry',
          );
          for (const c of batch.slice(i)) this.merge(c);
          return;
        }
      }
    })().finally(() => {
      this.flushing = null;
    });
    await this.flushing;
  }

  /** Delete rows older than the retention. */
  async purge(): Promise<void> {
    const before = new Date(Date.now() - this.ctx.config.analytics.retentionDays * 24 * HOUR_MS);
    try {
      await execRows(this.ctx.db, sql`delete from endpoint_stats where minute < ${before.toISOString()}::timestamptz`);
    } catch (err) {
      this.ctx.log.warn({ err: (err as Error).message }, 'endpoint analytics: retention purge failed');
    }
  }

  private async upsert(part: Cell[]): Promise<void> {
    const values = part.map(
      (c) =>
        sql`(${new Date(c.minute).toISOString()}::timestamptz, ${c.method}, ${c.route}, ${c.status}::int, ${c.op}, ${c.count}::int, ${c.totalMs}::float8, ${c.maxMs}::float8, ${`{${c.buckets.join(',')}}`}::int[])`,
    );
    await execRows(
      this.ctx.db,
      sql`insert into endpoint_stats as t (minute, method, route, status, operation_id, count, total_ms, max_ms, buckets)
          values ${sql.join(values, sql`, `)}
          on conflict (minute, method, route, status) do update set
            count = t.count + excluded.count,
            total_ms = t.total_ms + excluded.total_ms,
            max_ms = greatest(t.max_ms, excluded.max_ms),
            operation_id = coalesce(excluded.operation_id, t.operation_id),
            buckets = (select array_agg(coalesce(a, 0) + coalesce(b, 0) order by i) from unnest(t.buckets, excluded.buckets) with ordinality as u(a, b, i))`,
    );
  }

  private merge(c: Cell): void {
    const key = `${c.minute}|${c.method}|${c.status}|${c.route}`;
    const cur = this.cells.get(key);
    if (!cur) {
      this.cells.set(key, c);
      return;
    }
    cur.count += c.count;
    cur.totalMs += c.totalMs;
    cur.maxMs = Math.max(cur.maxMs, c.maxMs);
    c.buckets.forEach((n, i) => (cur.buckets[i] += n));
  }

  private dropOldest(): void {
    let oldest: string | null = null;
    let min = Infinity;
    for (const [k, c] of this.cells) {
      if (c.minute < min) {
        min = c.minute;
        oldest = k;
      }
    }
    if (oldest) this.cells.delete(oldest);
  }
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

// ------------------------------------------------------------------ reading

/** One route's aggregate over a period. */
export interface EndpointRow {
  method: string;
  route: string;
  operation_id: string | null;
  requests: number;
  /** 5xx answers. */
  errors: number;
  /** 4xx answers. */
  client_errors: number;
  error_rate: number;
  avg_ms: number;
  p50_ms: number | null;
  p95_ms: number | null;
  p99_ms: number | null;
  max_ms: number;
  /** Requests per status code. */
  by_status: Record<string, number>;
}

/**
 * Routes with requests in [from, to) (minute resolution), most requests first (or by p95 / error
 * rate). Optional filters: exact `method`, `route` prefix.
 */
export async function readEndpointStats(
  ctx: AppContext,
  f: { from: Date; to: Date; method?: string; route?: string; sort?: 'requests' | 'p95' | 'errors'; limit?: number },
): Promise<{
  data: EndpointRow[];
  totals: { requests: number; errors: number; client_errors: number; routes: number };
}> {
  const parts: SQL[] = [
    sql`minute >= ${floorMinute(f.from).toISOString()}::timestamptz`,
    sql`minute < ${f.to.toISOString()}::timestamptz`,
  ];
  if (f.method) parts.push(sql`method = ${f.method.toUpperCase()}`);
  if (f.route) parts.push(sql`starts_with(route, ${f.route})`);
  const where = sql.join(parts, sql` and `);
  const [byStatus, hist] = await Promise.all([
    execRows<Record<string, unknown>>(
      ctx.db,
      sql`select method, route, status, max(operation_id) as op, sum(count) as n, sum(total_ms) as total, max(max_ms) as mx
          from endpoint_stats where ${where} group by method, route, status`,
    ),
    execRows<Record<string, unknown>>(
      ctx.db,
      sql`select method, route, u.i as i, sum(u.b) as n
          from endpoint_stats, unnest(buckets) with ordinality as u(b, i)
          where ${where} group by method, route, u.i`,
    ),
  ]);
  const routes = new Map<string, EndpointRow & { total: number; buckets: number[] }>();
  for (const r of byStatus) {
    const key = `${r.method} ${r.route}`;
    let e = routes.get(key);
    if (!e) {
      e = {
        method: String(r.method),
        route: String(r.route),
        operation_id: null,
        requests: 0,
        errors: 0,
        client_errors: 0,
        error_rate: 0,
        avg_ms: 0,
        p50_ms: null,
        p95_ms: null,
        p99_ms: null,
        max_ms: 0,
        by_status: {},
        total: 0,
        buckets: new Array<number>(BUCKETS).fill(0),
      };
      routes.set(key, e);
    }
    const n = Number(r.n);
    const status = Number(r.status);
    e.operation_id = e.operation_id ?? ((r.op as string | null) || null);
    e.requests += n;
    if (status >= 500) e.errors += n;
    else if (status >= 400) e.client_errors += n;
    e.total += Number(r.total);
    e.max_ms = Math.max(e.max_ms, Number(r.mx));
    e.by_status[String(status)] = (e.by_status[String(status)] ?? 0) + n;
  }
  for (const h of hist) {
    const e = routes.get(`${h.method} ${h.route}`);
    if (e) e.buckets[Number(h.i) - 1] += Number(h.n);
  }
  const rows: EndpointRow[] = [...routes.values()].map(({ total, buckets, ...e }) => ({
    ...e,
    error_rate: e.requests ? Math.round((e.errors / e.requests) * 10_000) / 10_000 : 0,
    avg_ms: e.requests ? Math.round((total / e.requests) * 100) / 100 : 0,
    max_ms: Math.round(e.max_ms * 100) / 100,
    p50_ms: percentile(buckets, 0.5, e.max_ms),
    p95_ms: percentile(buckets, 0.95, e.max_ms),
    p99_ms: percentile(buckets, 0.99, e.max_ms),
  }));
  const sort = f.sort ?? 'requests';
  rows.sort((a, b) =>
    sort === 'p95'
      ? (b.p95_ms ?? 0) - (a.p95_ms ?? 0) || b.requests - a.requests
      : sort === 'errors'
        ? b.errors - a.errors || b.error_rate - a.error_rate
        : b.requests - a.requests || cmp(a.route, b.route),
  );
  const totals = rows.reduce(
    (t, r) => ({
      requests: t.requests + r.requests,
      errors: t.errors + r.errors,
      client_errors: t.client_errors + r.client_errors,
      routes: t.routes + 1,
    }),
    {
      requests: 0,
      errors: 0,
      client_errors: 0,
      routes: 0,
    },
  );
  return { data: rows.slice(0, f.limit ?? 100), totals };
}

function floorMinute(d: Date): Date {
  return new Date(d.getTime() - (d.getTime() % 60_000));
}
