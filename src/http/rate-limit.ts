/**
 * Per-principal rate limits by role (DESIGN.md §6, spec "Limits"): `RATE_LIMIT_USER` and
 * `RATE_LIMIT_PRO` requests per window; `enterprise` and `admin` unlimited; anonymous callers by
 * IP. Backed by @fastify/rate-limit, in Redis when `REDIS_URL` is set (shared by all instances;
 * counts reserved in blocks of 1 % of the limit, `rate-lease.ts`, exact below 200 per window).
 * Over the limit → 429 `rate_limited` with `Retry-After` and `RateLimit-*` headers
 * (draft-ietf-httpapi-ratelimit-headers).
 *
 * Redis outage (issue 11 §3.2): the counters fail over to the plugin's own in-process store
 * ({@link FailoverStore}) with one logged warning, and back to Redis when it is ready again — limits
 * keep holding per instance, requests neither wait for Redis nor fail.
 */
import { createRequire } from 'node:module';
import rateLimit from '@fastify/rate-limit';
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import type { AppContext } from '../context.js';
import { accountOf } from './auth.js';
import { AppError } from './errors.js';
import { LeasedRedisStore } from './rate-lease.js';

type StoreCallback = (err: Error | null, res?: { current: number; ttl: number }) => void;

/** The store contract of @fastify/rate-limit (`store/RedisStore.js`, `store/LocalStore.js`). */
interface Store {
  incr(key: string, cb: StoreCallback, timeWindow: number, max: number): void;
  child(routeOptions: unknown): Store;
}

const require = createRequire(import.meta.url);
/** How the plugin words a window in its 429 (`@lukeed/ms`, its own dependency). */
const { format: formatMs } = require(require.resolve('@lukeed/ms', { paths: [require.resolve('@fastify/rate-limit')] })) as { format: (ms: number, long?: boolean) => string };
const RedisStore = require('@fastify/rate-limit/store/RedisStore.js') as new (continueExceeding: boolean, exponentialBackoff: boolean, redis: Redis, key: string) => Store;
const LocalStore = require('@fastify/rate-limit/store/LocalStore.js') as new (continueExceeding: boolean, exponentialBackoff: boolean, cache?: number) => Store;

/** Shared by a store and its per-route children: whether Redis is being bypassed now. */
interface FailoverState {
  redis: Redis;
  log: FastifyBaseLogger;
  degraded: boolean;
}

/**
 * The plugin's Redis store with its in-process store as a fallback: while the Redis client is not
 * `ready` (or a command fails, e.g. after `REDIS_COMMAND_TIMEOUT_MS`), counts go to the local
 * store. Entering and leaving that mode is logged once each.
 */
export class FailoverStore implements Store {
  constructor(private readonly state: FailoverState, private readonly remote: Store, private readonly local: Store) {}

  incr(key: string, cb: StoreCallback, timeWindow: number, max: number): void {
    const { redis } = this.state;
    if (redis.status !== 'ready') return this.fallback(`Redis connection is ${redis.status}`, key, cb, timeWindow, max);
    this.remote.incr(
      key,
      (err, res) => {
        if (err) return this.fallback(err.message, key, cb, timeWindow, max);
        if (this.state.degraded) {
          this.state.degraded = false;
          this.state.log.info('rate limits: Redis is back; counting in Redis again');
        }
        cb(null, res);
      },
      timeWindow,
      max,
    );
  }

  child(routeOptions: unknown): Store {
    return new FailoverStore(this.state, this.remote.child(routeOptions), this.local.child(routeOptions));
  }

  private fallback(reason: string, key: string, cb: StoreCallback, timeWindow: number, max: number): void {
    if (!this.state.degraded) {
      this.state.degraded = true;
      this.state.log.warn({ reason }, 'rate limits: Redis unavailable; counting per instance until it is back');
    }
    this.local.incr(key, cb, timeWindow, max);
  }
}

function unlimited(req: FastifyRequest): boolean {
  return !!req.principal?.roles.some((r) => r === 'enterprise' || r === 'admin');
}

/**
 * Register the limiter. Runs at preHandler, after the auth hooks of protected scopes.
 *
 * The plugin registers with `global: false` and this function adds the global limit to every route
 * without a `config.rateLimit` of its own (as `global: true` would, in the same place: last of the
 * route's preHandler hooks). A route with its own preHandler hooks gets the plugin's global hook
 * (`app.rateLimit()` with no options is exactly that hook), which stands aside when one of those
 * hooks was itself a limiter (`app.rateLimit({…})`, e.g. the identity routes' per-IP limit); every
 * other route gets {@link globalLimitHook}: the same key, allow list, limit, store, headers and 429,
 * with no promise per request (the plugin's async hook awaits six values and reads
 * `req.routeOptions`, which Fastify builds per read; on-CPU samples (`perf`) of `bench:agent-memory`:
 * the limiter 3.4 → 2.3 µs of a GET and 6.2 → 4.6 µs of a PUT, issue 18).
 */
export async function registerRateLimit(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const { rateLimit: rl } = ctx.config;
  const redis = ctx.redis;
  const state: FailoverState | undefined = redis ? { redis, log: ctx.log, degraded: false } : undefined;
  // The plugin builds its store from this class once; the global hook counts in that same instance.
  let store: Store | undefined;
  const failover = (shared: FailoverState) =>
    class extends FailoverStore {
      constructor(opts: { continueExceeding?: boolean; exponentialBackoff?: boolean }) {
        const ce = !!opts.continueExceeding;
        const eb = !!opts.exponentialBackoff;
        // Blocks leased from Redis (http/rate-lease.ts); the per-request store for window-moving options.
        const remote = ce || eb ? new RedisStore(ce, eb, shared.redis, rl.redisPrefix) : new LeasedRedisStore(shared.redis, rl.redisPrefix);
        super(shared, remote, new LocalStore(ce, eb));
        store = this;
      }
    };
  const storeClass = state
    ? failover(state)
    : // The plugin's own default without Redis (an in-process LRU of counters), kept as the instance.
      function (opts: { continueExceeding?: boolean; exponentialBackoff?: boolean }) {
        store = new LocalStore(!!opts.continueExceeding, !!opts.exponentialBackoff);
        return store;
      };
  const limits: GlobalLimits = {
    windowMs: rl.windowMs,
    unlimited,
    keyOf: (req) => (req.principal ? `a:${accountOf(req.principal)}` : `ip:${req.ip}`),
    maxOf: (req) => {
      const p = req.principal;
      if (!p) return rl.anonymous;
      return p.roles.includes('pro') ? rl.pro : rl.user;
    },
    refusal: (ctxRl) =>
      new AppError('rate_limited', `Rate limit of ${ctxRl.max} requests per ${ctxRl.after} exceeded; retry with exponential backoff`, {
        headers: { 'retry-after': String(Math.ceil(ctxRl.ttl / 1000)) },
      }),
  };
  await app.register(rateLimit, {
    global: false,
    hook: 'preHandler',
    timeWindow: rl.windowMs,
    enableDraftSpec: true,
    store: storeClass as never,
    allowList: (req) => limits.unlimited(req),
    keyGenerator: limits.keyOf,
    max: limits.maxOf,
    errorResponseBuilder: (_req, ctxRl) => limits.refusal(ctxRl),
  });
  if (!store) throw new Error('rate limits: the plugin did not build its store');
  const fast = globalLimitHook(store, limits);
  const pluginHook = app.rateLimit();
  app.addHook('onRoute', (route) => {
    if ((route.config as { rateLimit?: unknown } | undefined)?.rateLimit != null) return; // the plugin's (own limits, or none)
    const own = route.preHandler === undefined ? [] : Array.isArray(route.preHandler) ? route.preHandler : [route.preHandler];
    route.preHandler = [...own, own.length === 0 ? fast : pluginHook] as typeof route.preHandler;
  });
}

/** What the global limit is made of: the same functions the plugin is given. */
export interface GlobalLimits {
  /** The window, ms. */
  windowMs: number;
  /** Whether the caller is on the allow list (no counting, no headers). */
  unlimited: (req: FastifyRequest) => boolean;
  /** The counter's key: the account, or the IP address of an anonymous caller. */
  keyOf: (req: FastifyRequest) => string;
  /** Requests allowed per window for this caller. */
  maxOf: (req: FastifyRequest) => number;
  /** The 429 (`after`: the window in words, as the plugin formats it). */
  refusal: (ctxRl: { max: number; ttl: number; after: string }) => Error;
}

const LIMIT = 'ratelimit-limit';
const REMAINING = 'ratelimit-remaining';
const RESET = 'ratelimit-reset';

/**
 * The plugin's global preHandler hook (`rateLimitRequestHandler` with `enableDraftSpec`, no ban,
 * no groups, `skipOnError` off) as a callback hook: count one request in `store`; under the limit
 * set `RateLimit-Limit`, `-Remaining` and `-Reset` (seconds, rounded up); over it set those (0
 * remaining) and `Retry-After` and fail with the 429. A store error fails the request, as there.
 */
export function globalLimitHook(store: Store, limits: GlobalLimits) {
  return (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void => {
    if (limits.unlimited(req)) return done();
    const max = limits.maxOf(req);
    store.incr(
      limits.keyOf(req),
      (err, res) => {
        if (err || !res) return done(err ?? new Error('rate limits: the store answered nothing'));
        const reset = Math.ceil(res.ttl / 1000);
        reply.header(LIMIT, max);
        if (res.current <= max) {
          reply.header(REMAINING, max - res.current);
          reply.header(RESET, reset);
          return done();
        }
        reply.header(REMAINING, 0);
        reply.header(RESET, reset);
        reply.header('retry-after', reset);
        done(limits.refusal({ max, ttl: res.ttl, after: formatMs(reset * 1000, true) }));
      },
      limits.windowMs,
      max,
    );
  };
}
