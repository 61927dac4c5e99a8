/**
 * buildApp(config): plugins + modules, nothing else (DESIGN.md §4). Order (STYLE.md): external
 * plugins → platform plugins (db, auth, errors, limits) → module routes, each registered explicitly.
 */
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { Config } from './config.js';
import type { AppContext } from './context.js';
import { EventHub } from './events.js';
import { openDatabase, type Database } from './db/client.js';
import { AuthRegistry } from './http/auth.js';
import { registerErrorHandlers } from './http/errors.js';
import { registerCors } from './http/cors.js';
import { landingRoute } from './http/landing.js';
import { LazySerializers } from './http/lazy-serializer.js';
import { RequestLogController, lazyChildLoggerFactory, serializeRequest } from './http/logging.js';
import { registerMetrics } from './http/metrics.js';
import { registerResponseObservers } from './http/observers.js';
import { registerRateLimit } from './http/rate-limit.js';
import { registerValidation } from './http/validation.js';
import { createJobQueue, redisClientOptions } from './jobs/queue.js';
import { UpstreamPool } from './upstream/pool.js';
import { ProblemSchema } from './http/schemas.js';
import { apiKeyRoutes } from './modules/api-keys/routes.js';
import { connectionRoutes } from './modules/connections/routes.js';
import { startConnectionStatePurge } from './modules/connections/service.js';
import { agentRoutes } from './modules/agents/routes.js';
import { agentMemoryRoutes } from './modules/agent-memory/routes.js';
import { permissionRoutes } from './modules/permissions/routes.js';
import { deploymentRoutes } from './modules/deployments/routes.js';
import { scheduleRoutes } from './modules/schedules/routes.js';
import { triggerRoutes } from './modules/triggers/routes.js';
import { webhookRoutes } from './modules/webhooks/routes.js';
import { a2aRoutes } from './modules/a2a/routes.js';
import { approvalRoutes } from './modules/approvals/routes.js';
import { policyRoutes } from './modules/policies/routes.js';
import { resolveApiKey } from './modules/api-keys/service.js';
import { healthRoutes } from './modules/health/routes.js';
import { adminRoutes } from './modules/admin/routes.js';
import { idpRoutes, inProcessFetch } from './modules/identity/idp.js';
import { createLoginFlow } from './modules/identity/login-flow.js';
import { identityRoutes } from './modules/identity/routes.js';
import { browserSessionRoutes } from './modules/identity/browser-session.js';
import { consoleRoutes } from './modules/console/routes.js';
import { memoryRoutes } from './modules/memory/routes.js';
import { rememberExecution } from './modules/memory/runtime.js';
import { sessionRoutes } from './modules/sessions/routes.js';
import { toolExportRoutes } from './modules/tool-export/routes.js';
import { createExecutionLog } from './modules/sessions/usage.js';
import { registryRoutes } from './modules/registry/routes.js';
import { prepareRegistrationCheck } from './modules/registry/manifest.js';
import { publishingRoutes } from './modules/publishing/routes.js';
import { ownerServiceDetail } from './modules/publishing/service.js';
import { dropLeases } from './modules/subscriptions/lease.js';
import { subscriptionRoutes } from './modules/subscriptions/routes.js';
import { searchRoutes } from './modules/search/routes.js';
import { analyticsRoutes } from './modules/analytics/routes.js';
import { mcpRoutes } from './modules/mcp/routes.js';
import { traceRoutes } from './modules/traces/routes.js';
import { configureTelemetry } from './telemetry/sdk.js';
import { registerHttpTracing } from './telemetry/http.js';
import { IdentityService } from './modules/identity/service.js';

export interface BuiltApp {
  app: FastifyInstance;
  ctx: AppContext;
  /**
   * Prepare what start-up left for later — the embedded OpenID Provider (`modules/identity/idp.ts`),
   * the registration body's validator (`modules/registry/manifest.ts`), response serialisers
   * (`http/lazy-serializer.ts`), then undici (`upstream/pool.ts`) — in idle event-loop turns;
   * `main.ts` calls it once listening.
   * Without it, each is prepared on first use.
   */
  warm: () => Promise<void>;
}

const REQUEST_ID = /^[\w.:-]{1,128}$/;

/**
 * A stand-in for what is not open yet (`ctx.database` and `ctx.db` while the modules that need
 * nothing from the database register): any use throws, naming it, instead of a TypeError later.
 */
function notOpenYet<T extends object>(name: string): T {
  return new Proxy({} as T, {
    get(_t, key) {
      throw new Error(`ctx.${name}.${String(key)} was used before the database opened (during module registration)`);
    },
  });
}

/** Version of the API contract (`info.version` of /openapi.json). */
const API_VERSION = '1.0.0';

/**
 * Build the whole service for `config`. The caller listens (main.ts) or injects (tests).
 * `extraRoutes` (benchmarks only, never main.ts) registers routes before the app is sealed, so they
 * run behind the same global hooks as the service's own routes. `opts.database`: the database's
 * open, already started by main.ts (`openDatabase`) so that it overlaps loading this module.
 */
export async function buildApp(
  config: Config,
  extraRoutes?: (app: FastifyInstance) => void,
  opts: { database?: Promise<Database> } = {},
): Promise<BuiltApp> {
  // OpenTelemetry (docs/observability.md): nothing is loaded unless an OTLP endpoint or the trace store is set.
  await configureTelemetry(config.telemetry, Boolean(config.databaseUrl));
  const serializers = new LazySerializers();
  const app = Fastify({
    // Response serialisers compile on first use (or in `warm`), not during start-up.
    schemaController: { compilersFactory: { buildSerializer: serializers.factory } },
    logger: {
      level: config.logLevel,
      redact: {
        paths: [
          'req.headers.authorization',
          'req.headers["x-api-key"]',
          'req.headers.cookie',
          'res.headers["set-cookie"]',
        ],
        censor: '[redacted]',
      },
      serializers: { req: serializeRequest },
    },
    // One line per request instead of two (http/logging.ts).
    logController: new RequestLogController(),
    childLoggerFactory: lazyChildLoggerFactory,
    bodyLimit: config.bodyLimitBytes,
    trustProxy: config.trustProxy,
    requestIdHeader: false,
    genReqId: (req) => {
      const h = req.headers['x-request-id'];
      return typeof h === 'string' && REQUEST_ID.test(h) ? h : randomUUID();
    },
    forceCloseConnections: 'idle',
    // A plugin's start-up may wait on the database's open and migrations (seconds on a busy 2-core
    // machine: avvio's 10 s default failed a start under load); a hung start still ends, after 60 s.
    pluginTimeout: 60_000,
    // Agent-memory keys (1–256 characters) travel URL-encoded in paths; find-my-way's default is 100.
    routerOptions: { maxParamLength: 1024 },
  });
  registerValidation(app);
  registerHttpTracing(app);
  app.decorateRequest('principal', null);
  // A callback hook, not an async one: no promise and microtask per request.
  app.addHook('onRequest', (req, reply, done) => {
    reply.header('x-request-id', req.id);
    // No answer is content-sniffed into another type (a JSON or text body rendered as HTML); set on
    // the raw response so hijacked answers (/idp, MCP streams) carry it too.
    reply.raw.setHeader('x-content-type-options', 'nosniff');
    // A credentialed request's answer belongs to its principal: no cache may store it unless its
    // route says otherwise (RFC 9111 §5.2.2.5; §3.5 keeps `Authorization` answers out of shared
    // caches, but not `X-API-Key` ones). docs/adr/0299-http-no-store-every-answer-to-a-request.md.
    if (req.headers.authorization !== undefined || req.headers['x-api-key'] !== undefined)
      reply.header('cache-control', 'no-store');
    done();
  });

  // External plugins.
  await registerCors(app, config);
  app.addSchema(ProblemSchema);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Agent Platform API',
        version: API_VERSION,
        description: 'Tool discovery, sessions, memory and agent identities for AI agents.',
        // No licence has been granted yet (no LICENSE file): all rights reserved.
        license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
      },
      servers: [{ url: config.publicUrl }],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
          apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
        },
      },
    },
    refResolver: {
      buildLocalReference: (json, _base, _frag, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });

  // Platform plugins.
  registerErrorHandlers(app);
  registerResponseObservers(app);
  const metrics = registerMetrics(app);
  // The database opens (in main.ts, beside loading this module; an embedded one on its own thread)
  // while the modules that need nothing from it at registration register; `ctx.database` and
  // `ctx.db` are set once it is open, before the modules that read it at registration (identity's
  // signing keys, memory's embedding-space check) and long before the first request.
  const opening = opts.database ?? openDatabase(config);
  opening.catch(() => undefined); // awaited below: a failed open fails the build there
  const ctx: AppContext = {
    config,
    database: notOpenYet<Database>('database'),
    db: notOpenYet<Database['db']>('db'),
    auth: new AuthRegistry({ apiKeysEnabled: config.auth.apiKeys }),
    log: app.log,
    jobs: await createJobQueue(config, app.log),
    events: new EventHub(app.log),
    executionLog: createExecutionLog(() => ctx),
    upstream: new UpstreamPool(config),
    registryGeneration: 0,
    agentMemoryStatements: null,
    onClose: [],
  };
  ctx.onClose.push(() => ctx.jobs.close());
  // Runs before the job queue closes (reverse order): running jobs finish their upstream calls first.
  ctx.onClose.push(() => ctx.upstream.close());
  ctx.onClose.push(() => ctx.executionLog.drain());
  // Module events: every recorded execution becomes an automatic memory (off the request path).
  ctx.events.on('execution.recorded', (e) => rememberExecution(ctx, e));
  // A role change ends the account's quota leases (counted under the previous roles' plan).
  ctx.events.on('account.roles_changed', (e) => void dropLeases(ctx, e.userId));
  if (config.redisUrl) {
    const { Redis } = await import('ioredis');
    ctx.redis = new Redis(config.redisUrl, redisClientOptions(config));
    ctx.redis.on('error', (err) => app.log.warn({ err: err.message }, 'redis error'));
  }
  // Graceful close: keep-alive connections that finish their in-flight request while the server
  // is closing are closed as soon as they go idle (not after the 72 s keep-alive timeout).
  let idleSweep: NodeJS.Timeout | undefined;
  app.addHook('preClose', async () => {
    idleSweep = setInterval(() => app.server.closeIdleConnections(), 50);
    idleSweep.unref();
  });
  app.addHook('onClose', async () => {
    clearInterval(idleSweep);
    for (const fn of [...ctx.onClose].reverse()) await fn();
    ctx.redis?.disconnect();
    await (await opening.catch(() => undefined))?.close();
  });
  ctx.auth.setApiKeyResolver((key) => resolveApiKey(ctx, key));
  await registerRateLimit(app, ctx);

  // Modules that read nothing from the database at registration.
  await app.register(healthRoutes, { ctx, metrics });
  await app.register(consoleRoutes, { publicUrl: ctx.config.publicUrl });
  await app.register(agentMemoryRoutes, { ctx });
  await app.register(permissionRoutes, { ctx });
  await app.register(subscriptionRoutes, { ctx });
  await app.register(sessionRoutes, { ctx });
  await app.register(toolExportRoutes, { ctx });
  await app.register(registryRoutes, { ctx, ownerServiceDetail });
  await app.register(connectionRoutes, { ctx });
  await app.register(searchRoutes, { ctx });
  await app.register(analyticsRoutes, { ctx });
  await app.register(mcpRoutes, { ctx });
  await app.register(traceRoutes, { ctx });

  const database = await opening;
  ctx.database = database;
  ctx.db = database.db;
  startConnectionStatePurge(ctx);
  // Modules that read the database at registration, or register job handlers (a queue in Redis may
  // hand them a job at once).
  await app.register(deploymentRoutes, { ctx });
  await app.register(scheduleRoutes, { ctx });
  await app.register(triggerRoutes, { ctx });
  await app.register(webhookRoutes, { ctx });
  await app.register(a2aRoutes, { ctx });
  await app.register(approvalRoutes, { ctx });
  await app.register(policyRoutes, { ctx });
  await app.register(publishingRoutes, { ctx });
  const identity = await IdentityService.create(ctx);
  ctx.auth.addJwtResolver({
    name: 'user',
    accepts: (p) => typeof p.sub === 'string' && !p.sub.startsWith('agt_'),
    resolve: (token, payload, opts) => identity.resolveAccessToken(token, payload.iss, opts.resource),
  });
  // The pre-configured tenant under /idp, unless an external provider is configured (AUTH_ISSUER).
  const deferred: Array<() => Promise<unknown>> = [];
  if (!config.auth.issuer) await app.register(idpRoutes, { ctx, identity, config, deferred });
  deferred.push(async () => prepareRegistrationCheck());
  const login = createLoginFlow(
    ctx,
    identity,
    config.auth.issuer ? (url, init) => fetch(url, init as RequestInit) : inProcessFetch(app),
  );
  await app.register(identityRoutes, { ctx, identity, login });
  await app.register(browserSessionRoutes, { ctx, identity, login });
  await app.register(adminRoutes, { ctx, identity });
  await app.register(apiKeyRoutes, { ctx });
  await app.register(agentRoutes, { ctx, identity });
  await app.register(memoryRoutes, { ctx });

  app.get('/openapi.json', { schema: { hide: true }, config: { rateLimit: false } }, async () => app.swagger());
  landingRoute(app, config, API_VERSION);
  extraRoutes?.(app);
  await app.ready();
  // Each step after an event-loop turn: what is waiting (the ready line's write, the first
  // requests) goes first; in the one-file bundle a lazy import() no longer waits on a file read.
  const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
  const warm = async () => {
    for (const prepare of deferred) {
      await turn();
      await prepare().catch((err: unknown) =>
        app.log.error({ err }, 'a deferred start-up step failed (retried on first use)'),
      );
    }
    await turn();
    await serializers.warm((err) => app.log.error({ err }, 'a response schema does not compile'));
    // Last: undici loads in one ~60 ms step (upstream/pool.ts), which the first requests after
    // listening should not wait behind; the first upstream call loads it if it comes earlier.
    await turn();
    await ctx.upstream
      .dispatcher()
      .catch((err: unknown) => app.log.error({ err }, 'undici did not load (retried on first use)'));
  };
  return { app, ctx, warm };
}
