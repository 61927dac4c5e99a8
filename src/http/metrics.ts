/**
 * Prometheus metrics (prom-client): request counts and latency histograms by route, method and
 * status, plus process defaults. One registry per app so several apps can live in one process.
 * `/metrics` is served to loopback clients, or to anyone presenting `METRICS_TOKEN` as a bearer
 * token ({@link metricsGuard}; issue 11).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { AppError } from './errors.js';

export interface Metrics {
  registry: Registry;
}

/** Install the collection hooks; returns the registry served at `/metrics`. */
export function registerMetrics(app: FastifyInstance): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const labelNames = ['method', 'route', 'status'] as const;
  const requests = new Counter({ name: 'http_requests_total', help: 'HTTP requests by route and status', labelNames, registers: [registry] });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency in seconds by route and status',
    labelNames,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  // One child per (method, route, status), looked up by one string key: prom-client would hash the
  // label object on every call (issue 18: this hook runs on every request). Bounded: routes are the
  // registered patterns (or "unmatched"), methods and statuses are few.
  const children = new Map<string, { count: { inc(): void }; time: { observe(v: number): void } }>();
  app.addHook('onResponse', (req, reply, done) => {
    const route = req.routeOptions.url ?? 'unmatched';
    const status = reply.statusCode;
    const key = `${req.method} ${status} ${route}`;
    let c = children.get(key);
    if (!c) {
      const labels = { method: req.method, route, status: String(status) };
      c = { count: requests.labels(labels), time: duration.labels(labels) };
      children.set(key, c);
    }
    c.count.inc();
    c.time.observe(reply.elapsedTime / 1000);
    done();
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
    if (expected) throw new AppError('unauthenticated', 'Send the metrics token (METRICS_TOKEN) as "Authorization: Bearer <token>"');
    throw new AppError('forbidden', 'Metrics are served to loopback clients only; set METRICS_TOKEN to let a scraper on another host in with a bearer token');
  };
}
