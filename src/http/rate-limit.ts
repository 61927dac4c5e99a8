/**
 * Per-principal rate limits by role (DESIGN.md §6, spec "Limits"): `RATE_LIMIT_USER` and
 * `RATE_LIMIT_PRO` requests per window; `enterprise` and `admin` unlimited; anonymous callers by
 * IP. Backed by @fastify/rate-limit, in Redis when `REDIS_URL` is set (shared by all instances;
 * counts reserved in blocks of 1 % of the limit, `rate-lease.ts`, exact below 200 per window).
 * Over the limit → 429 `rate_limited` with `Retry-After` and `RateLimit-*` headers
 * (draft-ietf-httpapi-ratelimit-headers).
 *
 * Redis outage: the counters fail over to the plugin's own in-process store
 * ({@link FailoverStore}) with one logged warning, and back to Redis when it is ready again — limits
 * keep holding per instance, requests neither wait for Redis nor fail.
 */
import { createRequire } from 'node:module';
import rateLimit from '@fastify/rate-limit';
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from 'fastify';
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
const RedisStore = require('@fastify/rate-limit/store/RedisStore.js') as new (
  continueExceeding: boolean,
  exponentialBackoff: boolean,
  redis: Redis,
  key: string,
) => Store;
const LocalStore = require('@fastify/rate-limit/store/LocalStore.js') as new (
  continueExceeding: boolean,
  exponentialBackoff: boolean,
  cache?: number,
) => Store;

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
  constructor(
    private readonly state: FailoverState,
    private readonly remote: Store,
    private readonly local: Store,
  ) {}

  incr(key: string, cb: StoreCallback, timeWindow: number, max: number): void {
    const { redis } = this.state;
    if (redis.status !== 'ready') {
      this.fallback(`Redis connection is ${redis.status}`, key, cb, timeWindow, max);
      return;
    }
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

/** Register the limiter. Runs at preHandler, after the auth hooks of protected scopes. */
export async function registerRateLimit(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const { rateLimit: rl } = ctx.config;
  const redis = ctx.redis;
  const state: FailoverState | undefined = redis ? { redis, log: ctx.log, degraded: false } : undefined;
  const failover = (shared: FailoverState) =>
    class extends FailoverStore {
      constructor(opts: { continueExceeding?: boolean; exponentialBackoff?: boolean }) {
        const ce = !!opts.continueExceeding;
        const eb = !!opts.exponentialBackoff;
        // Blocks leased from Redis (http/rate-lease.ts); the per-request store for window-moving options.
        const remote =
          ce || eb
            ? new RedisStore(ce, eb, shared.redis, rl.redisPrefix)
            : new LeasedRedisStore(shared.redis, rl.redisPrefix);
        super(shared, remote, new LocalStore(ce, eb));
      }
    };
  await app.register(rateLimit, {
    global: true,
    hook: 'preHandler',
    timeWindow: rl.windowMs,
    enableDraftSpec: true,
    ...(state ? { store: failover(state) } : {}),
    allowList: (req) => unlimited(req),
    keyGenerator: (req) => (req.principal ? `a:${accountOf(req.principal)}` : `ip:${req.ip}`),
    max: (req) => {
      const p = req.principal;
      if (!p) return rl.anonymous;
      return p.roles.includes('pro') ? rl.pro : rl.user;
    },
    errorResponseBuilder: (_req, ctxRl) => {
      return new AppError(
        'rate_limited',
        `Rate limit of ${ctxRl.max} requests per ${ctxRl.after} exceeded; retry with exponential backoff`,
        {
          headers: { 'retry-after': String(Math.ceil(ctxRl.ttl / 1000)) },
        },
      );
    },
  });
}
