/**
 * Tables of the analytics module: per-route request aggregates, one row per UTC minute, method,
 * route template and status. Each instance aggregates in memory and adds its counts with an upsert
 * every few seconds (and at shutdown), so rows survive restarts and sum over instances.
 */
import { doublePrecision, index, integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { tz } from './columns.js';

export const endpointStats = pgTable(
  'endpoint_stats',
  {
    /** Start of the UTC minute. */
    minute: tz('minute').notNull(),
    method: text('method').notNull(),
    /** Route template (`/v1/agents/:id`), or `(unmatched)` for 404s outside any route. */
    route: text('route').notNull(),
    status: integer('status').notNull(),
    /** operationId of the route, when it has one. */
    operationId: text('operation_id'),
    count: integer('count').notNull(),
    /** Sum and maximum of the response times, ms. */
    totalMs: doublePrecision('total_ms').notNull(),
    maxMs: doublePrecision('max_ms').notNull(),
    /** Latency histogram: counts per bucket of `LATENCY_BOUNDS_MS` (+ overflow), for percentiles. */
    buckets: integer('buckets').array().notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.minute, t.method, t.route, t.status] }),
    index('endpoint_stats_route_idx').on(t.route, t.minute),
  ],
);
