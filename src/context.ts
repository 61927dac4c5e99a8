/**
 * The dependencies every service receives: configuration, database, auth registry, logger and
 * optional Redis. Built once per app in `app.ts`; services never read `process.env`.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';
import type { Config } from './config.js';
import type { Database, Db } from './db/client.js';
import type { EventHub } from './events.js';
import type { AuthRegistry } from './http/auth.js';
import type { JobQueue } from './jobs/queue.js';

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
  /** Functions run at shutdown, in reverse order of registration (close queues, clients…). */
  onClose: Array<() => Promise<void> | void>;
}
