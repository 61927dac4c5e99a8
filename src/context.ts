/**
 * The dependencies every service receives: configuration, database, auth registry, logger and
 * optional Redis. Built once per app in `app.ts`; services never read `process.env`.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';
import type { Config } from './config.js';
import type { Database, Db } from './db/client.js';
import type { EventHub, ExecutionRecord } from './events.js';
import type { AuthRegistry } from './http/auth.js';
import type { JobQueue } from './jobs/queue.js';
import type { WriteBatcher } from './lib/batcher.js';
import type { AgentMemoryStatements } from './modules/agent-memory/statements.js';
import type { Sandbox } from './sandbox/runner.js';
import type { InvocationLog } from './modules/deployments/state.js';
import type { UpstreamPool } from './upstream/pool.js';
import type { MemoryRuntime } from './modules/memory/state.js';
import type { SearchState } from './modules/search/state.js';
import type { CacheBus } from './lib/shared-cache.js';
import type { AgentAuthState } from './modules/agents/auth-state.js';
import type { AnalyticsRuntime } from './modules/analytics/state.js';
import type { QuotaRuntime } from './modules/subscriptions/state.js';
import type { RecurringScheduler } from './jobs/scheduler.js';
import type { TriggerLimiters } from './modules/triggers/state.js';

export interface AppContext {
  config: Config;
  database: Database;
  db: Db;
  auth: AuthRegistry;
  log: FastifyBaseLogger;
  /** Shared Redis connection when `REDIS_URL` is set. */
  redis?: Redis;
  /** Background jobs (in-process, or BullMQ when `REDIS_URL` is set); closed at shutdown. */
  jobs: JobQueue;
  /** Domain events between modules (`execution.recorded`, …); subscribers are wired in `app.ts`. */
  events: EventHub;
  /** Sandbox of deployed agent code with its warm pool; created on first use by the deployments module (`sandboxOf`). */
  sandbox?: Sandbox;
  /** Write-behind log of synchronous invocations' records (`deployments/record.ts`), created on first use; drained at shutdown. */
  invocationLog?: InvocationLog;
  /**
   * The group commit of execution records (`sessions/usage.ts` writes it; drained at shutdown). It
   * writes through the context it was built for: a copy of a context with another database needs its own.
   */
  executionLog: WriteBatcher<ExecutionRecord>;
  /** The guarded upstream client's connection pool and host resolver (`upstream/pool.ts`). */
  upstream: UpstreamPool;
  /**
   * How many registry writes this instance has committed (from 0; `registry/executable.ts` bumps
   * it): caches derived from the catalog compare it to see at once that this instance changed it.
   */
  registryGeneration: number;
  /** Agent key/value memory's prepared statements, created on first use (`agent-memory/statements.ts`). */
  agentMemoryStatements: AgentMemoryStatements | null;
  /** Functions run at shutdown, in reverse order of registration (close queues, clients…). */
  onClose: Array<() => Promise<void> | void>;
  /** The memory module's state (embedding provider, batching writer); set by the module on first use. */
  memory?: MemoryRuntime;
  /** Search module caches (vocabulary, popularity, tool vectors), created on first use. */
  search?: SearchState;
  /** Eviction bus of the shared caches (`lib/shared-cache.ts`), created on first use. */
  cacheBus?: CacheBus;
  /** Agent-token verifier state (`agents/tokens.ts`), set by `installAgentAuth`. */
  agentAuth?: AgentAuthState;
  /** This app's analytics recorders (`analytics/state.ts`), created by `startAnalytics` (the analytics routes call it). */
  analytics?: AnalyticsRuntime;
  /**
   * The quota counter's batching queues and leases (`subscriptions/state.ts`), created on first use
   * by `subscriptions/lease.ts`; its leases are given back at close. A copy of a context with another
   * database needs its own (`undefined`).
   */
  quota?: QuotaRuntime;
  /** The recurring scheduler of agent schedules (`jobs/scheduler.ts`), set by the schedules routes; closed with the app. */
  scheduler?: RecurringScheduler;
  /** Per-minute limiters of inbound triggers (`triggers/state.ts`), created on first delivery by `triggers/deliver.ts`. */
  triggerLimits?: TriggerLimiters;
}
