/**
 * Cross-origin requests from browsers (Fetch Standard §3.2 "CORS protocol"), with `@fastify/cors`.
 *
 * Policy (`CORS_ORIGINS`, config.ts), decided per request from its `Origin` header:
 * - no `Origin`, or an origin that is not allowed → no CORS headers at all (the browser blocks the
 *   answer; a preflight `OPTIONS` falls through to the 404 of an unknown route);
 * - a listed origin → `Access-Control-Allow-Origin: <that origin>` and
 *   `Access-Control-Allow-Credentials: true` (cookies, e.g. the console's refresh cookie);
 * - `*` in the list → any other origin gets `Access-Control-Allow-Origin: *`, never credentials.
 * Answers always carry `Vary: Origin` (the headers depend on it). Preflights answer 204 with the
 * methods the API uses, the request's `Access-Control-Request-Headers` echoed, and a 10-minute
 * `Access-Control-Max-Age`; responses expose the headers clients read (request id, rate-limit and
 * quota headers, `Retry-After`, `Location`, `WWW-Authenticate`, `Mcp-Session-Id`, `ETag`).
 *
 * A route opts out with `config: { cors: false }` (the `/idp` provider answers CORS itself).
 */
import cors, { type FastifyCorsOptions } from '@fastify/cors';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';

/** Methods allowed cross-origin (every method a route of the API uses). */
export const CORS_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** Response headers a cross-origin script may read (beyond the CORS-safelisted ones). */
export const CORS_EXPOSED_HEADERS = [
  'x-request-id',
  'ratelimit-limit',
  'ratelimit-remaining',
  'ratelimit-reset',
  'x-quota-limit',
  'x-quota-remaining',
  'x-quota-reset',
  'retry-after',
  'location',
  'www-authenticate',
  'mcp-session-id',
  'etag',
];

/** How long a browser may cache a preflight answer, seconds. */
export const CORS_MAX_AGE_SECONDS = 600;

/** The CORS answer for a request from `origin` under `policy` (false: no CORS headers). */
export function corsOptionsFor(policy: Config['cors'], origin: string | undefined): FastifyCorsOptions {
  if (!origin) return { origin: false };
  if (policy.origins.includes(origin)) return { ...SHARED, origin, credentials: true };
  return unlistedOptions(policy);
}

const SHARED = { methods: CORS_METHODS, exposedHeaders: CORS_EXPOSED_HEADERS, maxAge: CORS_MAX_AGE_SECONDS };

function unlistedOptions(policy: Config['cors']): FastifyCorsOptions {
  return policy.any ? { ...SHARED, origin: '*', credentials: false } : { origin: false };
}

/**
 * Register the CORS policy of `config.cors` on `app` (before the routes).
 * With no allowed origin (`CORS_ORIGINS` empty, the default) the policy's whole effect is
 * `Vary: Origin` on every answer (a preflight is an unknown route, 404): one hook adds that header
 * and `@fastify/cors` is not registered — its per-request option merging was ~2 % of an execute's
 * and an agent-memory GET's CPU.
 */
export async function registerCors(app: FastifyInstance, config: Config): Promise<void> {
  if (config.cors.origins.length === 0 && !config.cors.any) {
    app.addHook('onRequest', (_req, reply, done) => {
      reply.header('vary', 'Origin');
      done();
    });
    // Routes that opt out get no Vary either (their own hook takes it off again: reading
    // `req.routeOptions` in the hook above would build an object per request).
    app.addHook('onRoute', (route) => {
      if ((route.config as { cors?: unknown } | undefined)?.cors !== false) return;
      const own = route.onRequest ? (Array.isArray(route.onRequest) ? route.onRequest : [route.onRequest]) : [];
      route.onRequest = [
        (_req, reply, done) => {
          reply.removeHeader('vary');
          done();
        },
        ...own,
      ] as typeof route.onRequest;
    });
    return;
  }
  // The answers depend only on the origin: built once per policy outcome, not per request (the
  // per-request objects showed as ~3 % of an execute's CPU in the issue-18 profile).
  const none = corsOptionsFor(config.cors, undefined);
  const listed = new Map(config.cors.origins.map((o) => [o, corsOptionsFor(config.cors, o)]));
  const other = unlistedOptions(config.cors);
  await app.register(cors, {
    delegator: (req, done) => {
      const origin = req.headers.origin;
      done(null, origin === undefined ? none : (listed.get(origin) ?? other));
    },
  });
}
