/**
 * Typed configuration, parsed once from the environment (or any string map) and passed in.
 * Every default lives here. A bad value throws {@link ConfigError} whose message is one line
 * naming the variable; `main.ts` prints it and exits 1.
 */
import path from 'node:path';
import {
  ConfigError,
  bool,
  corsOrigins,
  fail,
  int,
  list,
  oneOf,
  pgSize,
  quota,
  ratio,
  str,
  url,
  type Env,
} from './config-parse.js';
import { memoryConfig, type MemoryConfig } from './config-memory.js';
import { telemetryConfig, type TelemetryConfig } from './config-telemetry.js';

export { ConfigError };
export type { MemoryConfig };

export type Role = 'user' | 'pro' | 'enterprise' | 'admin';
export const ROLES: readonly Role[] = ['user', 'pro', 'enterprise', 'admin'];

export type Plan = 'free' | 'pro' | 'enterprise';

export interface Config {
  nodeEnv: 'development' | 'production' | 'test';
  port: number;
  /** Listen address: `HOST`, else `127.0.0.1` in development (loopback only) and `0.0.0.0` otherwise. */
  host: string;
  /** Externally visible origin of this service, no trailing slash, e.g. `http://localhost:3000`. */
  publicUrl: string;
  /** Directory for embedded data (PGlite cluster, generated secrets). */
  dataDir: string;
  /** `postgres://…` to use PostgreSQL; undefined → embedded PGlite under `dataDir/pglite`. */
  databaseUrl?: string;
  /** Use an in-memory PGlite (tests); ignored when `databaseUrl` is set. */
  databaseInMemory: boolean;
  /** `shared_buffers` of the embedded PGlite (`32MB`; units kB, MB, GB) or `auto` (default: sized to the data directory, `pgliteSharedBuffersFor`). */
  pgliteSharedBuffers: string;
  /** Cache of prepared PGlite data directories (db/data-dir.ts), `PGLITE_TEMPLATE_DIR`; null when `off`. */
  pgliteTemplateDir: string | null;
  /** True when the database is an on-disk PGlite run on its own worker thread (db/pglite-thread.ts): `PGLITE_THREAD` (default on), no `DATABASE_URL`, not in memory. */
  pgliteThread: boolean;
  redisUrl?: string;
  /**
   * Longest time, in ms, an instance serves a cached registry lookup or session state (execution
   * hot path) that another instance changed; with Redis, evictions reach every instance at once.
   * 0 = no caching.
   */
  cacheTtlMs: number;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Largest accepted JSON body, bytes. */
  bodyLimitBytes: number;
  /** Trust X-Forwarded-* headers (behind a proxy). */
  trustProxy: boolean;
  /**
   * Browser origins allowed to call the API cross-origin (`CORS_ORIGINS`, none by default):
   * `origins` exact, with credentials; `any` (`*` in the list): every other origin, without.
   */
  cors: { origins: string[]; any: boolean };
  /**
   * Bearer token that opens `/metrics` to non-loopback clients (`METRICS_TOKEN`); unset → loopback
   * clients only (the socket's address, never X-Forwarded-For).
   */
  metricsToken?: string;
  redis: {
    /** Longest wait for one Redis command, ms (`REDIS_COMMAND_TIMEOUT_MS`); a timed-out command fails. */
    commandTimeoutMs: number;
    /** Longest wait for a (re)connection, ms (`REDIS_CONNECT_TIMEOUT_MS`). */
    connectTimeoutMs: number;
  };
  auth: {
    /** External OIDC issuer URL; undefined → the embedded tenant served under `/idp`. */
    issuer?: string;
    clientId: string;
    clientSecret?: string;
    audience: string;
    rolesClaim: string;
    scope: string;
    /** Allowed redirect URIs for `/v1/auth/login`; empty → any loopback http(s) URI. */
    redirectUris: string[];
    /** Access-token lifetime in seconds (spec: 86400). */
    accessTokenTtlSeconds: number;
    /** Refresh-token lifetime in seconds. */
    refreshTokenTtlSeconds: number;
    /**
     * `POST /auth/test` enabled: `AUTH_TEST_TOKENS`, else on only with `NODE_ENV=test` or in
     * development when listening on loopback only ({@link testTokensDefault}).
     */
    testTokens: boolean;
    /**
     * Why the start-up log must warn about `/auth/test` (enabled where it is reachable from other
     * hosts); undefined → no warning. Production refuses to start with it on.
     */
    testTokensWarning?: string;
    /** Test tokens may carry `pro`/`enterprise`/`admin` (`AUTH_TEST_ROLES=on`, needs `AUTH_TEST_TOKENS=on`; never with `NODE_ENV=production`). */
    testRoles: boolean;
    /** Sign-in attempts (`/auth/login`, the `/idp` form) per email address per `attemptWindowMs`. */
    attemptsPerAccount: number;
    /** Requests to the unauthenticated credential routes (login, register, test, refresh, callback, agent token) per client IP per `attemptWindowMs`. */
    attemptsPerIp: number;
    /** Window of the two limits above, ms. */
    attemptWindowMs: number;
    /** API-key authentication enabled (development/testing only per spec). */
    apiKeys: boolean;
    /** Emails that get the `admin` role at registration. */
    adminEmails: string[];
  };
  rateLimit: {
    /** Requests per minute for role `user`. */
    user: number;
    /** Requests per minute for role `pro`. */
    pro: number;
    /** Requests per minute for unauthenticated callers, per IP. */
    anonymous: number;
    /** Window in milliseconds. */
    windowMs: number;
    /** Prefix of the counters in Redis (instances that share limits share it). */
    redisPrefix: string;
  };
  /** Base64 32-byte key for AES-256-GCM secret encryption; generated into dataDir when unset (embedded). */
  secretsKey?: string;
  /** Outbound webhooks (`modules/webhooks`). */
  webhooks: {
    /** First retry delay after a failed delivery, ms (doubles per attempt up to an hour, ±50 % jitter). */
    retryBaseMs: number;
    /** How long a message is retried before it goes to the dead-letter list, ms (24 h). */
    maxAgeMs: number;
    /** Timeout of one delivery attempt, ms. */
    timeoutMs: number;
  };
  /** Human approval of tool calls (`modules/approvals`). */
  approvals: {
    /** How long a pending request, and then a granted approval, stays valid, seconds (15 min). */
    ttlSeconds: number;
  };
  /** Pinned tool definitions (`subscriptions/pins.ts`); off only for measurements. */
  pins: { enabled: boolean };
  upstream: {
    /** Admit loopback targets (tests and local development only). */
    allowLoopback: boolean;
    /** Default upstream timeout (connect + headers + body), ms. */
    timeoutMs: number;
    /** Largest `timeout_ms` a tool execution may ask for, ms (`UPSTREAM_MAX_TIMEOUT_MS`). */
    maxTimeoutMs: number;
    /** Response cap, bytes (larger upstream answers → 502). */
    maxResponseBytes: number;
    /** PEM file of extra CA certificates trusted for upstream TLS besides the system roots (`UPSTREAM_CA_FILE`). */
    caFile: string | null;
  };
  /** Plan quotas: calls per window; `null` = unlimited. */
  quotas: Record<Plan, { day: number | null; month: number | null }>;
  reportThreshold: number;
  /** Search (`src/modules/search`): fuzzy matching and popularity blending. */
  search: {
    /** `auto`: trigram fuzzy matching where pg_trgm is installed; `off`: never (prefix and substring matching only). */
    fuzzy: 'auto' | 'off';
    /** Days of usage counters that make a tool "popular" in rankings and recommendations. */
    popularityDays: number;
    /** How long the popularity table used for ranking is cached in-process, ms (0 = no cache). */
    popularityCacheMs: number;
    /** Tool search corrects typos, drops stop words and weighs terms by rarity (`SEARCH_QUERY_REWRITE`, on). */
    queryRewrite: boolean;
    /** Tool search ranks over an in-process index of the catalog, SQL reading only the page (`SEARCH_INDEX`, on). */
    index: boolean;
    /**
     * Semantic arm of tool search (`SEARCH_SEMANTIC`, off: no measured gain yet, see docs/adr/0253-search-semantic-fusion-the-semantic-arm-fuses-with.md): tool and query
     * vectors from the local sentence encoder, fused with the full-text ranking by weighted reciprocal
     * rank (`SEARCH_SEMANTIC_WEIGHT`, 0–10, default 0.25; the full-text arm weighs 1).
     */
    semantic: boolean;
    semanticWeight: number;
  };
  /** Analytics (`src/modules/analytics`): realtime counters and persisted per-route aggregates. */
  analytics: {
    /** Interval between flushes of the per-route minute aggregates to the database, ms. */
    flushIntervalMs: number;
    /** Interval between flushes of the realtime counters to Redis, ms (REDIS_URL set). */
    realtimeFlushMs: number;
    /** Days the per-route minute aggregates are kept. */
    retentionDays: number;
    /** Prefix of the realtime counters in Redis (instances that share counters share it). */
    redisPrefix: string;
  };
  /** User memory: embeddings, search, summaries. See {@link MemoryConfig}. */
  memory: MemoryConfig;
  /** OpenTelemetry traces and metrics (`OTEL_*`, `TRACES_*`). See {@link TelemetryConfig}. */
  telemetry: TelemetryConfig;
  /** `all` (API + job workers, default), `api` (enqueue only) or `worker` (process jobs, no HTTP API). */
  processRole: 'all' | 'api' | 'worker';
  /** Namespace of the job queues in Redis (BullMQ key prefix). */
  jobsPrefix: string;
  /** Agent identities, agent access tokens and agent key/value memory. */
  agents: {
    /** Agent access-token lifetime, seconds. */
    tokenTtlSeconds: number;
    /** Token-endpoint attempts per client_id per `tokenRateWindowMs`. */
    tokenRateLimit: number;
    tokenRateWindowMs: number;
    /** How long an agent-token liveness check (agent active, secret live) is cached in-process, ms; 0 = no cache. */
    authCacheMs: number;
    /** Largest agent-memory value (serialised JSON), bytes. */
    memoryMaxValueBytes: number;
    /** Live entries per agent. */
    memoryMaxEntries: number;
    /** Interval of the expired-entry purge, ms; 0 = lazy purge only. */
    memoryPurgeIntervalMs: number;
  };
  /** The platform as an MCP server (`/mcp`). */
  mcp: {
    /** List each subscribed tool as its own MCP tool (`<service>__<tool>`) by default (`?expose=…` overrides per connection). */
    exposeSubscribedTools: boolean;
    /** Lifetime of an MCP session (`Mcp-Session-Id`), seconds; afterwards the client must initialize again. */
    sessionTtlSeconds: number;
    /** How often an open `GET /mcp` stream checks whether the caller's tool list changed, ms. */
    listChangedPollMs: number;
    /** Dynamic client registrations (`POST /idp/reg`, RFC 7591) per IP per hour. */
    registrationsPerHour: number;
    /** Client ID Metadata Document fetches (cache misses) per client IP per minute; 10× this per process. */
    clientMetadataFetchesPerMinute: number;
    /** Longest a fetched Client ID Metadata Document is cached, seconds (its own Cache-Control may say less; at least 60). */
    clientMetadataCacheMaxSeconds: number;
  };
  /** Deployment of agent code (issue: deployments v2) and the sandbox that runs it (`src/sandbox/`). */
  deploy: {
    /** Largest accepted artifact (the gzip tarball as uploaded), bytes. Larger → 413. */
    maxBytes: number;
    /** Largest total unpacked size (sum of file sizes, and the gunzipped stream), bytes (zip-bomb guard). */
    maxUnpackedBytes: number;
    /** Most entries (files, directories, links) in one artifact. */
    maxFiles: number;
  };
  sandbox: {
    /** Where artifacts are unpacked (content-addressed by sha256); default `<DATA_DIR>/sandbox`. */
    dir: string;
    /** Default invocation timeout (whole child process: start + handler), ms. */
    timeoutMs: number;
    /** Largest `timeout_ms` a caller may ask for, ms. */
    maxTimeoutMs: number;
    /** Timeout of the smoke load during the prepare step, ms. */
    prepareTimeoutMs: number;
    /** V8 old-space limit of each sandbox process (`--max-old-space-size`), MiB. */
    memoryMb: number;
    /** Captured stdout+stderr per invocation, bytes (beyond: dropped, `logs_truncated`). */
    maxLogBytes: number;
    /** Largest handler result (serialised JSON), bytes. */
    maxOutputBytes: number;
    /** Concurrent sandbox processes per instance; further runs wait. */
    concurrency: number;
    /** `auto`: isolate the network (`unshare --net`) when this host allows it; `isolated`: require it; `allowed`: never isolate. */
    network: 'auto' | 'isolated' | 'allowed';
    /** File-system wall of deployed code: `bwrap` (default; bubblewrap: only the artifact, the Node runtime and a private /tmp are visible; refuses to start where bwrap cannot run) or `off` (Node's permission model alone: host Unix sockets stay reachable). */
    isolation: 'bwrap' | 'off';
    /** Freeze an execution environment between invocations (SIGSTOP of its process group, `src/sandbox/freezer.ts`), as AWS Lambda does; off: work left running by a handler keeps its CPU until the idle kill. */
    freeze: boolean;
    /** Unprivileged uid:gid the runs switch to when the server runs as root (`auto`: 65534:65534 if it can read SANDBOX_DIR); null = never switch. */
    user: { uid: number; gid: number } | 'auto' | null;
    /** Whole-process memory limit of each sandbox process (RLIMIT_DATA: heap, Buffers, native memory), MiB; 0 = none. Default `2 × memoryMb + 64`. */
    processMemoryMb: number;
    /** Warm execution environments kept per deployment version (0 = every invocation is a cold start). */ warmPerVersion: number;
    /** Warm execution environments kept per instance, all versions together. */ warmTotal: number;
    /** An idle warm environment is killed after this long unused, ms. */ warmIdleMs: number;
    /** A synchronous invocation's record is first written when it ends, or once it has run this long (then as `running`), ms; 0 = at its start. */
    recordDeferMs: number;
    /** Start sandbox processes from a small fork-server process (`src/sandbox/spawner.ts`) instead of this one, whose `fork()` cost grows with its memory. */ forkServer: boolean;
    /** Keep one provisioned (started, module loaded, never invoked) environment per recently cold-started version (`src/sandbox/spares.ts`). */ provisioned: boolean;
  };
}

/** `SANDBOX_USER`: `auto` (default), `off`, or `<uid>:<gid>`. */
function sandboxUser(env: Env): { uid: number; gid: number } | 'auto' | null {
  const v = str(env, 'SANDBOX_USER', 'auto')!;
  if (v === 'auto') return 'auto';
  if (v === 'off') return null;
  const m = /^(\d{1,10}):(\d{1,10})$/.exec(v);
  if (!m) return fail('SANDBOX_USER', 'auto, off or <uid>:<gid>', v);
  return { uid: Number(m[1]), gid: Number(m[2]) };
}

/** True when `host` accepts connections from this machine only (`127.0.0.0/8`, `::1`, `localhost`). */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127(\.\d{1,3}){3}$/.test(h) || /^::ffff:127(\.\d{1,3}){3}$/.test(h);
}

/**
 * Default of `AUTH_TEST_TOKENS`: on with `NODE_ENV=test`, and in development when the
 * server listens on loopback only; off otherwise (production never has it on by default).
 */
export function testTokensDefault(nodeEnv: Config['nodeEnv'], host: string): boolean {
  return nodeEnv === 'test' || (nodeEnv === 'development' && isLoopbackHost(host));
}

function testTokensWarning(nodeEnv: Config['nodeEnv'], host: string): string | undefined {
  if (nodeEnv === 'development' && !isLoopbackHost(host))
    return `POST /auth/test is enabled while listening on ${host} (AUTH_TEST_TOKENS=on): other hosts can mint test accounts`;
  return undefined;
}

/**
 * Parse configuration from `env` (default `process.env`).
 * @throws ConfigError naming the first bad variable.
 */
export function loadConfig(env: Env = process.env): Config {
  const nodeEnv = oneOf(env, 'NODE_ENV', ['development', 'production', 'test'] as const, 'development');
  const port = int(env, 'PORT', 3000, 0, 65535);
  const host = str(env, 'HOST', nodeEnv === 'development' ? '127.0.0.1' : '0.0.0.0')!;
  const explicitTestTokens =
    str(env, 'AUTH_TEST_TOKENS') === undefined ? undefined : bool(env, 'AUTH_TEST_TOKENS', false);
  const testTokens = explicitTestTokens ?? testTokensDefault(nodeEnv, host);
  const testRoles = bool(env, 'AUTH_TEST_ROLES', false);
  if (testRoles && explicitTestTokens !== true)
    fail('AUTH_TEST_ROLES', 'off unless AUTH_TEST_TOKENS=on (elevated test roles need both switches)', 'on');
  // Anyone who reaches POST /auth/test gets a token; with test roles, an admin one. Production never serves it.
  if (nodeEnv === 'production' && testRoles)
    fail('AUTH_TEST_ROLES', 'off with NODE_ENV=production (anyone could mint an admin token)', 'on');
  if (nodeEnv === 'production' && testTokens)
    fail('AUTH_TEST_TOKENS', 'off with NODE_ENV=production (anyone could mint test accounts)', 'on');
  const publicUrl = url(env, 'PUBLIC_URL', ['http', 'https'], `http://localhost:${port}`)!;
  const issuer = url(env, 'AUTH_ISSUER', ['http', 'https']);
  if (issuer && !str(env, 'AUTH_CLIENT_ID')) fail('AUTH_CLIENT_ID', 'set when AUTH_ISSUER is set', '');
  if (issuer && !str(env, 'AUTH_AUDIENCE'))
    fail('AUTH_AUDIENCE', 'set when AUTH_ISSUER is set (the API identifier the provider puts in "aud")', '');
  const redirectUris = list(env, 'AUTH_REDIRECT_URIS');
  for (const r of redirectUris) {
    try {
      new URL(r);
    } catch {
      fail('AUTH_REDIRECT_URIS', 'a comma-separated list of URLs', r);
    }
  }
  const role = str(env, 'PROCESS_ROLE');
  if (role && role !== 'all' && !str(env, 'REDIS_URL'))
    fail('PROCESS_ROLE', 'all unless REDIS_URL is set (an api/worker split needs the Redis job queue)', role);
  const secretsKey = str(env, 'SECRETS_KEY');
  if (secretsKey !== undefined && Buffer.from(secretsKey, 'base64').length !== 32) {
    fail('SECRETS_KEY', 'a base64-encoded 32-byte key', '<redacted>');
  }
  const databaseUrl = url(env, 'DATABASE_URL', ['postgres', 'postgresql']);
  const databaseInMemory = bool(env, 'DATABASE_IN_MEMORY', false);
  return {
    nodeEnv,
    port,
    host,
    publicUrl,
    dataDir: path.resolve(str(env, 'DATA_DIR', './data')!),
    databaseUrl,
    databaseInMemory,
    pgliteSharedBuffers: pgSize(env, 'PGLITE_SHARED_BUFFERS', 'auto', true),
    pgliteTemplateDir:
      str(env, 'PGLITE_TEMPLATE_DIR') === 'off'
        ? null
        : path.resolve(
            str(env, 'PGLITE_TEMPLATE_DIR') ??
              path.join(import.meta.dirname, '..', 'node_modules', '.cache', 'agent-platform'),
          ),
    pgliteThread: bool(env, 'PGLITE_THREAD', true) && !databaseUrl && !databaseInMemory,
    redisUrl: url(env, 'REDIS_URL', ['redis', 'rediss']),
    cacheTtlMs: int(env, 'CACHE_TTL_MS', 5000, 0, 300_000),
    logLevel: oneOf(
      env,
      'LOG_LEVEL',
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const,
      nodeEnv === 'test' ? 'silent' : 'info',
    ),
    bodyLimitBytes: int(env, 'BODY_LIMIT_BYTES', 1024 * 1024, 1024),
    trustProxy: bool(env, 'TRUST_PROXY', false),
    cors: corsOrigins(env, 'CORS_ORIGINS'),
    metricsToken: str(env, 'METRICS_TOKEN'),
    redis: {
      commandTimeoutMs: int(env, 'REDIS_COMMAND_TIMEOUT_MS', 1000, 50, 60_000),
      connectTimeoutMs: int(env, 'REDIS_CONNECT_TIMEOUT_MS', 2000, 100, 60_000),
    },
    auth: {
      issuer,
      clientId: str(env, 'AUTH_CLIENT_ID', 'agent-platform-console')!,
      clientSecret: str(env, 'AUTH_CLIENT_SECRET'),
      audience: str(env, 'AUTH_AUDIENCE', `${publicUrl}/api`)!,
      rolesClaim: str(env, 'AUTH_ROLES_CLAIM', 'roles')!,
      scope: str(env, 'AUTH_SCOPE', 'openid profile email offline_access')!,
      redirectUris,
      accessTokenTtlSeconds: int(env, 'AUTH_ACCESS_TOKEN_TTL', 86400, 60, 7 * 86400),
      refreshTokenTtlSeconds: int(env, 'AUTH_REFRESH_TOKEN_TTL', 30 * 86400, 3600, 365 * 86400),
      testTokens,
      testTokensWarning: testTokens ? testTokensWarning(nodeEnv, host) : undefined,
      testRoles,
      attemptsPerAccount: int(env, 'AUTH_ATTEMPTS_PER_ACCOUNT', 10, 1),
      attemptsPerIp: int(env, 'AUTH_ATTEMPTS_PER_IP', 100, 1),
      attemptWindowMs: int(env, 'AUTH_ATTEMPT_WINDOW_MS', 15 * 60_000, 1000),
      apiKeys: bool(env, 'AUTH_API_KEYS', true),
      adminEmails: list(env, 'ADMIN_EMAILS').map((e) => e.toLowerCase()),
    },
    rateLimit: {
      user: int(env, 'RATE_LIMIT_USER', 120, 1),
      pro: int(env, 'RATE_LIMIT_PRO', 1200, 1),
      anonymous: int(env, 'RATE_LIMIT_ANONYMOUS', 300, 1),
      windowMs: int(env, 'RATE_LIMIT_WINDOW_MS', 60_000, 1000),
      redisPrefix: str(env, 'RATE_LIMIT_REDIS_PREFIX', 'ap:rl:')!,
    },
    secretsKey,
    webhooks: {
      retryBaseMs: int(env, 'WEBHOOK_RETRY_BASE_MS', 5000, 10),
      maxAgeMs: int(env, 'WEBHOOK_MAX_AGE_MS', 24 * 3600 * 1000, 1000),
      timeoutMs: int(env, 'WEBHOOK_TIMEOUT_MS', 15_000, 100, 120_000),
    },
    approvals: { ttlSeconds: int(env, 'APPROVAL_TTL_SECONDS', 900, 1, 7 * 24 * 3600) },
    pins: { enabled: bool(env, 'TOOL_PINS_ENABLED', true) },
    upstream: {
      allowLoopback: bool(env, 'ALLOW_LOOPBACK_UPSTREAMS', false),
      timeoutMs: int(env, 'UPSTREAM_TIMEOUT_MS', 30_000, 100, 300_000),
      maxTimeoutMs: int(env, 'UPSTREAM_MAX_TIMEOUT_MS', 120_000, 100, 900_000),
      maxResponseBytes: int(env, 'UPSTREAM_MAX_RESPONSE_BYTES', 1024 * 1024, 1024),
      caFile: str(env, 'UPSTREAM_CA_FILE') ?? null,
    },
    quotas: {
      free: { day: quota(env, 'QUOTA_FREE_DAY', 100), month: quota(env, 'QUOTA_FREE_MONTH', 1000) },
      pro: { day: quota(env, 'QUOTA_PRO_DAY', 10_000), month: quota(env, 'QUOTA_PRO_MONTH', 100_000) },
      enterprise: { day: quota(env, 'QUOTA_ENTERPRISE_DAY', null), month: quota(env, 'QUOTA_ENTERPRISE_MONTH', null) },
    },
    reportThreshold: int(env, 'REPORT_THRESHOLD', 3, 1),
    search: {
      fuzzy: oneOf(env, 'SEARCH_FUZZY', ['auto', 'off'] as const, 'auto'),
      popularityDays: int(env, 'SEARCH_POPULARITY_DAYS', 30, 1, 366),
      popularityCacheMs: int(env, 'SEARCH_POPULARITY_CACHE_MS', 60_000, 0, 3_600_000),
      queryRewrite: bool(env, 'SEARCH_QUERY_REWRITE', true),
      index: bool(env, 'SEARCH_INDEX', true),
      semantic: bool(env, 'SEARCH_SEMANTIC', false),
      semanticWeight: ratio(env, 'SEARCH_SEMANTIC_WEIGHT', 0.25),
    },
    analytics: {
      flushIntervalMs: int(env, 'ANALYTICS_FLUSH_MS', 5000, 100, 600_000),
      realtimeFlushMs: int(env, 'ANALYTICS_REALTIME_FLUSH_MS', 1000, 100, 60_000),
      retentionDays: int(env, 'ANALYTICS_RETENTION_DAYS', 30, 1, 3650),
      redisPrefix: str(env, 'ANALYTICS_REDIS_PREFIX', 'ap:rt:')!,
    },
    memory: memoryConfig(env),
    telemetry: telemetryConfig(env),
    processRole: oneOf(env, 'PROCESS_ROLE', ['all', 'api', 'worker'] as const, 'all'),
    jobsPrefix: str(env, 'JOBS_PREFIX', 'agent-platform')!,
    agents: {
      tokenTtlSeconds: int(env, 'AGENT_TOKEN_TTL', 3600, 60, 86400),
      tokenRateLimit: int(env, 'AGENT_TOKEN_RATE_LIMIT', 30, 1),
      tokenRateWindowMs: int(env, 'AGENT_TOKEN_RATE_WINDOW_MS', 60_000, 1000),
      authCacheMs: int(env, 'AGENT_AUTH_CACHE_MS', 5000, 0, 60_000),
      memoryMaxValueBytes: int(env, 'AGENT_MEMORY_MAX_VALUE_BYTES', 256 * 1024, 1, 16 * 1024 * 1024),
      memoryMaxEntries: int(env, 'AGENT_MEMORY_MAX_ENTRIES', 10_000, 1),
      memoryPurgeIntervalMs: int(env, 'AGENT_MEMORY_PURGE_INTERVAL_MS', 60_000, 0),
    },
    mcp: {
      exposeSubscribedTools: bool(env, 'MCP_EXPOSE_SUBSCRIBED_TOOLS', false),
      sessionTtlSeconds: int(env, 'MCP_SESSION_TTL', 30 * 86400, 60, 365 * 86400),
      listChangedPollMs: int(env, 'MCP_LIST_CHANGED_POLL_MS', 5000, 100, 600_000),
      registrationsPerHour: int(env, 'MCP_REGISTRATIONS_PER_HOUR', 20, 1, 100_000),
      clientMetadataFetchesPerMinute: int(env, 'MCP_CLIENT_METADATA_FETCHES_PER_MINUTE', 10, 1, 10_000),
      clientMetadataCacheMaxSeconds: int(env, 'MCP_CLIENT_METADATA_CACHE_MAX_SECONDS', 3600, 60, 86_400),
    },
    deploy: {
      maxBytes: int(env, 'DEPLOY_MAX_BYTES', 10 * 1024 * 1024, 1024, 512 * 1024 * 1024),
      maxUnpackedBytes: int(env, 'DEPLOY_MAX_UNPACKED_BYTES', 100 * 1024 * 1024, 1024, 4 * 1024 * 1024 * 1024),
      maxFiles: int(env, 'DEPLOY_MAX_FILES', 5000, 1, 1_000_000),
    },
    sandbox: {
      dir: path.resolve(str(env, 'SANDBOX_DIR') ?? path.join(path.resolve(str(env, 'DATA_DIR', './data')!), 'sandbox')),
      timeoutMs: int(env, 'SANDBOX_TIMEOUT_MS', 10_000, 100, 900_000),
      maxTimeoutMs: int(env, 'SANDBOX_MAX_TIMEOUT_MS', 60_000, 100, 900_000),
      prepareTimeoutMs: int(env, 'SANDBOX_PREPARE_TIMEOUT_MS', 15_000, 100, 900_000),
      memoryMb: int(env, 'SANDBOX_MEMORY_MB', 128, 16, 16_384),
      processMemoryMb: int(
        env,
        'SANDBOX_PROCESS_MEMORY_MB',
        int(env, 'SANDBOX_MEMORY_MB', 128, 16, 16_384) * 2 + 64,
        0,
        65_536,
      ),
      warmPerVersion: int(env, 'SANDBOX_WARM_PER_VERSION', 4, 0, 1024),
      warmTotal: int(env, 'SANDBOX_WARM_TOTAL', 16, 0, 4096),
      warmIdleMs: int(env, 'SANDBOX_WARM_IDLE_MS', 300_000, 100, 86_400_000),
      recordDeferMs: int(env, 'SANDBOX_RECORD_DEFER_MS', 100, 0, 10_000),
      forkServer: bool(env, 'SANDBOX_FORK_SERVER', true),
      provisioned: bool(env, 'SANDBOX_PROVISIONED', true),
      maxLogBytes: int(env, 'SANDBOX_MAX_LOG_BYTES', 64 * 1024, 0, 16 * 1024 * 1024),
      maxOutputBytes: int(env, 'SANDBOX_MAX_OUTPUT_BYTES', 1024 * 1024, 16, 64 * 1024 * 1024),
      concurrency: int(env, 'SANDBOX_CONCURRENCY', 8, 1, 1024),
      network: oneOf(env, 'SANDBOX_NETWORK', ['auto', 'isolated', 'allowed'] as const, 'auto'),
      isolation: oneOf(env, 'SANDBOX_ISOLATION', ['bwrap', 'off'] as const, 'bwrap'),
      freeze: bool(env, 'SANDBOX_FREEZE', true),
      user: sandboxUser(env),
    },
  };
}
