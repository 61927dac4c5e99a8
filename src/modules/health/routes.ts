/**
 * Operational routes: liveness, readiness, Prometheus metrics. Unauthenticated and not rate limited.
 * Left out of /openapi.json (`hide`): they are for probes and scrapers, not API clients or the SDK,
 * and never answer a 4xx (docs/adr/0146-openapi-lint-openapi-json-is-kept-clean.md).
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AppContext } from '../../context.js';
import { metricsGuard, type Metrics } from '../../http/metrics.js';

const Check = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('error')]),
  detail: Type.Optional(Type.String()),
});

export async function healthRoutes(
  app: FastifyInstance,
  { ctx, metrics }: { ctx: AppContext; metrics: Metrics },
): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['operations'];
  const config = { rateLimit: false as const };

  r.get(
    '/healthz',
    {
      config,
      schema: {
        hide: true,
        tags,
        operationId: 'ops.healthz',
        summary: 'Process is up',
        response: { 200: Type.Object({ status: Type.Literal('ok') }) },
      },
    },
    async () => ({ status: 'ok' as const }),
  );

  r.get(
    '/readyz',
    {
      config,
      schema: {
        hide: true,
        tags,
        operationId: 'ops.readyz',
        summary: 'Dependencies reachable',
        response: {
          200: Type.Object({
            status: Type.String(),
            checks: Type.Record(Type.String(), Check),
            details: Type.Record(Type.String(), Type.Unknown()),
          }),
          503: Type.Object({
            status: Type.String(),
            checks: Type.Record(Type.String(), Check),
            details: Type.Record(Type.String(), Type.Unknown()),
          }),
        },
      },
    },
    async (_req, reply) => {
      const checks: Record<string, { status: 'ok' | 'error'; detail?: string }> = {};
      try {
        await ctx.database.ping();
        checks.database = { status: 'ok' };
      } catch (err) {
        checks.database = { status: 'error', detail: (err as Error).message };
      }
      if (ctx.redis) {
        try {
          // Not connected → answer at once (a ping would wait for the command timeout).
          if (ctx.redis.status !== 'ready') throw new Error(`Redis connection is ${ctx.redis.status}`);
          await ctx.redis.ping();
          checks.redis = { status: 'ok' };
        } catch (err) {
          checks.redis = { status: 'error', detail: (err as Error).message };
        }
      }
      const ok = Object.values(checks).every((c) => c.status === 'ok');
      const details = {
        database_engine: ctx.database.engine,
        vector_search: ctx.database.hasVector
          ? 'pgvector (HNSW index)'
          : 'exact cosine over real[] (no pgvector on this server; slower at scale)',
      };
      return reply.code(ok ? 200 : 503).send({ status: ok ? 'ok' : 'error', checks, details });
    },
  );

  app.get(
    '/metrics',
    {
      config,
      onRequest: metricsGuard(ctx.config.metricsToken),
      schema: {
        hide: true,
        tags,
        operationId: 'ops.metrics',
        summary: 'Prometheus metrics (text exposition format); loopback clients, or METRICS_TOKEN as a bearer token',
        response: { 200: { type: 'string' } },
      },
    },
    async (_req, reply) => {
      reply.type(metrics.registry.contentType);
      return metrics.registry.metrics();
    },
  );
}
