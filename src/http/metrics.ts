/**
 * Prometheus metrics (prom-client): request counts and latency histograms by route, method and
 * status, plus process defaults. One registry per app so several apps can live in one process.
 * `/metrics` is served to loopback clients, or to anyone presenting `METRICS_TOKEN` as a bearer
 * token ({@link metricsGuard}).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Counter, Registry, collectDefaultMetrics } from 'prom-client';
import { AppError } from './errors.js';

export interface Metrics {
  registry: Registry;
}

/** Upper bounds (seconds) of the request-latency histogram's buckets. */
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** Requests of one (method, route, status) since start: counts per bucket (not cumulative), sum, count. */
interface Cell {
  labels: { method: string; route: string; status: string };
  buckets: number[];
  sum: number;
  count: number;
  /** Requests not yet handed to the prom-client counter. */
  uncounted: number;
}

/**
 * Install the collection observer (`app.observeResponses`, http/observers.ts, registered first);
 * returns the registry served at `/metrics` (prom-client: process defaults, `http_requests_total`,
 * `http_request_duration_seconds`). The observer only adds to a plain
 * cell per (method, route, status) — a map lookup and a few additions (prom-client's
 * `inc`/`observe` build and hash a label object per call, ~3 % of an agent-memory GET); the cells
 * are read when `/metrics` is scraped. Bounded: routes are the registered patterns (or
 * "unmatched"), methods and statuses are few.
 */
export function registerMetrics(app: FastifyInstance): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const cells = new Map<string, Cell>();
  new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests by route and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
    collect() {
      for (const c of cells.values()) {
        if (c.uncounted === 0) continue;
        this.inc(c.labels, c.uncounted);
        c.uncounted = 0;
      }
    },
  });
  const name = 'http_request_duration_seconds';
  const help = 'HTTP request latency in seconds by route and status';
  // A histogram in prom-client's metric interface (what `Registry` reads: name, help, type, get, reset).
  const durations = {
    name,
    help,
    type: 'histogram',
    aggregator: 'sum',
    get: async () => ({
      name,
      help,
      type: 'histogram',
      aggregator: 'sum',
      values: [...cells.values()].flatMap((c) => {
        let acc = 0;
        const bucket = (le: number | string, value: number) => ({
          labels: { le, ...c.labels },
          value,
          metricName: `${name}_bucket`,
        });
        return [
          ...BUCKETS.map((le, i) => bucket(le, (acc += c.buckets[i]))),
          bucket('+Inf', c.count),
          { labels: c.labels, value: c.sum, metricName: `${name}_sum` },
          { labels: c.labels, value: c.count, metricName: `${name}_count` },
        ];
      }),
    }),
    reset: () => {
      for (const c of cells.values()) {
        c.buckets.fill(0);
        c.sum = 0;
        c.count = 0;
      }
    },
  };
  registry.registerMetric(durations as unknown as Parameters<Registry['registerMetric']>[0]);
  app.observeResponses((r) => {
    const route = r.route ?? 'unmatched';
    const status = r.status;
    const key = `${r.method} ${status} ${route}`;
    let c = cells.get(key);
    if (!c) {
      c = {
        labels: { method: r.method, route, status: String(status) },
        buckets: new Array<number>(BUCKETS.length).fill(0),
        sum: 0,
        count: 0,
        uncounted: 0,
      };
      cells.set(key, c);
    }
    const seconds = r.ms / 1000;
    let i = 0;
    while (i < BUCKETS.length && seconds > BUCKETS[i]) i++;
    if (i < BUCKETS.length) c.buckets[i]++;
    c.sum += seconds;
    c.count++;
    c.uncounted++;
  });
  return { registry };
}

/** True for a loopback socket address (`127.0.0.0/8`, `::1`, IPv4-mapped `::ffff:127.x.x.x`). */
export function isLoopbackAddress(addr: string | undefined): boolean {
  if (!addr || !isIP(addr)) return false;
  return addr === '::1' || /^(::ffff:)?127\./i.test(addr);
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * onRequest hook of `/metrics`: lets through clients connected from loopback (the socket's
 * remote address, never `X-Forwarded-For`, even with TRUST_PROXY: a proxy on this host would
 * otherwise open it to the internet) and requests carrying `Authorization: Bearer <token>` equal
 * to `token` (compared in constant time over SHA-256 digests).
 * @throws AppError unauthenticated (401) when a token is configured, forbidden (403) when not.
 */
export function metricsGuard(token: string | undefined): (req: FastifyRequest) => Promise<void> {
  const expected = token ? digest(token) : undefined;
  return async (req) => {
    const m = /^Bearer +(\S+)$/i.exec(req.headers.authorization ?? '');
    if (expected && m && timingSafeEqual(digest(m[1]), expected)) return;
    if (isLoopbackAddress(req.socket.remoteAddress)) return;
    if (expected)
      throw new AppError(
        'unauthenticated',
        'Send the metrics token (METRICS_TOKEN) as "Authorization: Bearer <token>"',
      );
    throw new AppError(
      'forbidden',
      'Metrics are served to loopback clients only; set METRICS_TOKEN to let a scraper on another host in with a bearer token',
    );
  };
}
