/**
 * Per-principal rate limits by role (DESIGN.md §6, spec "Limits"): `RATE_LIMIT_USER` and
 * `RATE_LIMIT_PRO` requests per window; `enterprise` and `admin` unlimited; anonymous callers by
 * IP. Backed by @fastify/rate-limit, in Redis when `REDIS_URL` is set (shared by all instances).
 * Over the limit → 429 `rate_limited` with `Retry-After` and `RateLimit-*` headers
 * (draft-ietf-httpapi-ratelimit-headers).
 */
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { accountOf } from './auth.js';
import { AppError } from './errors.js';

function unlimited(req: FastifyRequest): boolean {
  return !!req.principal?.roles.some((r) => r === 'enterprise' || r === 'admin');
}

/** Register the limiter. Runs at preHandler, after the auth hooks of protected scopes. */
export async function registerRateLimit(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const { rateLimit: rl } = ctx.config;
  await app.register(rateLimit, {
    global: true,
    hook: 'preHandler',
    timeWindow: rl.windowMs,
    enableDraftSpec: true,
    ...(ctx.redis ? { redis: ctx.redis, nameSpace: rl.redisPrefix } : {}),
    allowList: (req) => unlimited(req),
    keyGenerator: (req) => (req.principal ? `a:${accountOf(req.principal)}` : `ip:${req.ip}`),
    max: (req) => {
      const p = req.principal;
      if (!p) return rl.anonymous;
      return p.roles.includes('pro') ? rl.pro : rl.user;
    },
    errorResponseBuilder: (_req, ctxRl) => {
      return new AppError('rate_limited', `Rate limit of ${ctxRl.max} requests per ${ctxRl.after} exceeded; retry with exponential backoff`, {
        headers: { 'retry-after': String(Math.ceil(ctxRl.ttl / 1000)) },
      });
    },
  });
}
