/**
 * Recurring (cron) ticks behind one interface, beside the job queue (`queue.ts`): BullMQ job
 * schedulers when `REDIS_URL` is set (one delayed job per tick in Redis, so however many
 * instances run, one worker gets each tick), an embedded scheduler (croner timers in this
 * process) otherwise. Both read cron expressions with croner (5 fields, or 6 with seconds first),
 * BullMQ through a custom `repeatStrategy`, so a pattern means the same on both.
 *
 * Delivery is at-least-once: a tick may reach the handler twice (a worker dying mid-tick, or
 * several embedded schedulers on one PostgreSQL), so the handler deduplicates by (key, tick).
 * Missed ticks: BullMQ keeps the one pending job of a scheduler while nothing consumes it and runs
 * it late, once, then computes the next tick from now; the embedded scheduler keeps nothing and
 * its owner replays the first missed tick itself at start-up (see the schedules module).
 */
import type { FastifyBaseLogger } from 'fastify';
import type { RedisOptions } from 'ioredis';
import { Cron } from 'croner';
import type { Config } from '../config.js';
import { redisClientOptions } from './queue.js';

/** A cron expression read in an IANA time zone. */
export interface CronSpec {
  /** 5 fields (minute precision) or 6 (seconds first); croner syntax. */
  pattern: string;
  /** IANA time zone name, e.g. `Europe/Paris`. */
  timezone: string;
}

/** Called once per tick of recurring schedule `key`; `tickAt` is the scheduled instant. Throwing is logged. */
export type TickHandler = (key: string, tickAt: Date) => Promise<void>;

/** The recurring scheduler of an app (`ctx` field owned by the schedules module). */
export interface RecurringScheduler {
  readonly kind: 'embedded' | 'bullmq';
  /** Set the tick handler and start consuming ticks (not in `PROCESS_ROLE=api` processes). */
  start(handler: TickHandler): void;
  /** Create or replace recurring schedule `key`; its first tick is the next match after now. */
  upsert(key: string, spec: CronSpec): Promise<void>;
  /** True when schedule `key` is known to the scheduler (BullMQ: it survives restarts). */
  has(key: string): Promise<boolean>;
  /** Stop schedule `key` (no-op when unknown). */
  remove(key: string): Promise<void>;
  /** Stop every timer / worker and release connections. */
  close(): Promise<void>;
}

/** Croner options of every expression: seconds optional, the year field not accepted. */
const CRON_MODE = { mode: '5-or-6-parts' } as const;

/**
 * A croner job (never started) for `spec`, to validate it and compute its run times.
 * @throws Error (croner's message) for a malformed pattern or an unknown time zone
 */
export function cronOf(spec: CronSpec): Cron {
  return new Cron(spec.pattern, { ...CRON_MODE, timezone: spec.timezone, paused: true });
}

/** The first `n` ticks of `spec` strictly after `after`. */
export function nextTicks(spec: CronSpec, n: number, after: Date = new Date()): Date[] {
  return cronOf(spec).nextRuns(n, after);
}

/** Embedded scheduler: one croner timer per schedule in this process. */
export class EmbeddedScheduler implements RecurringScheduler {
  readonly kind = 'embedded' as const;
  private readonly jobs = new Map<string, Cron>();
  private handler?: TickHandler;

  constructor(
    private readonly log: FastifyBaseLogger,
    private readonly consume: boolean,
  ) {}

  start(handler: TickHandler): void {
    this.handler = handler;
  }

  async upsert(key: string, spec: CronSpec): Promise<void> {
    this.jobs.get(key)?.stop();
    if (!this.consume) return;
    const job = new Cron(spec.pattern, { ...CRON_MODE, timezone: spec.timezone, unref: true }, (self: Cron) => {
      // currentRun() is the scheduled instant of this run (croner fires at or just after it).
      const tickAt = self.currentRun() ?? new Date(Math.floor(Date.now() / 1000) * 1000);
      this.handler?.(key, tickAt).catch((err: unknown) =>
        this.log.error({ err, schedule: key }, 'scheduled tick failed'),
      );
    });
    this.jobs.set(key, job);
  }

  async has(key: string): Promise<boolean> {
    return this.jobs.has(key);
  }

  async remove(key: string): Promise<void> {
    this.jobs.get(key)?.stop();
    this.jobs.delete(key);
  }

  async close(): Promise<void> {
    for (const job of this.jobs.values()) job.stop();
    this.jobs.clear();
  }
}

/** Name of the BullMQ queue that carries ticks. */
const TICK_QUEUE = 'schedules.tick';

/** BullMQ's repeat strategy, with croner: the next tick of `opts.pattern` in `opts.tz` after `millis`. */
function cronerStrategy(millis: number, opts: { pattern?: string; tz?: string }): number | undefined {
  if (!opts.pattern) return undefined;
  return cronOf({ pattern: opts.pattern, timezone: opts.tz ?? 'UTC' })
    .nextRun(new Date(millis))
    ?.getTime();
}

/** BullMQ job schedulers (one per schedule key) on one queue; a worker unless `consume` is false. */
export class BullScheduler implements RecurringScheduler {
  readonly kind = 'bullmq' as const;
  private readonly queue: import('bullmq').Queue;
  private worker?: import('bullmq').Worker;
  private closing?: Promise<void>;

  /**
   * `connection`: producer connection options ({@link redisClientOptions}); the worker's blocking
   * connection keeps only their reconnect backoff.
   */
  constructor(
    private readonly bull: typeof import('bullmq'),
    private readonly opts: {
      redisUrl: string;
      prefix: string;
      consume: boolean;
      log: FastifyBaseLogger;
      connection: RedisOptions;
    },
  ) {
    this.queue = new bull.Queue(TICK_QUEUE, {
      connection: { url: this.opts.redisUrl, ...this.opts.connection } as import('bullmq').ConnectionOptions,
      prefix: this.opts.prefix,
      settings: { repeatStrategy: cronerStrategy },
    });
    this.queue.on('error', (err) => this.opts.log.warn({ err: err.message }, 'schedule queue error'));
  }

  start(handler: TickHandler): void {
    if (!this.opts.consume || this.worker) return;
    this.worker = new this.bull.Worker(
      TICK_QUEUE,
      async (job) => {
        // A scheduler's job carries its scheduled instant as `prevMillis`.
        const tickAt = new Date(job.opts.prevMillis ?? job.timestamp + (job.opts.delay ?? 0));
        await handler(String(job.data.key), tickAt);
      },
      {
        connection: {
          url: this.opts.redisUrl,
          retryStrategy: this.opts.connection.retryStrategy,
          maxRetriesPerRequest: null,
        } as import('bullmq').ConnectionOptions,
        prefix: this.opts.prefix,
        concurrency: 8,
        settings: { repeatStrategy: cronerStrategy },
      },
    );
    this.worker.on('error', (err) => this.opts.log.warn({ err: err.message }, 'schedule worker error'));
    this.worker.on('failed', (job, err) =>
      this.opts.log.error({ schedule: job?.data?.key, err: err.message }, 'scheduled tick failed'),
    );
  }

  async upsert(key: string, spec: CronSpec): Promise<void> {
    await this.queue.upsertJobScheduler(
      key,
      { pattern: spec.pattern, tz: spec.timezone },
      { name: 'tick', data: { key }, opts: { removeOnComplete: { count: 100 }, removeOnFail: { count: 100 } } },
    );
  }

  async has(key: string): Promise<boolean> {
    return Boolean(await this.queue.getJobScheduler(key));
  }

  async remove(key: string): Promise<void> {
    await this.queue.removeJobScheduler(key);
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.worker?.close();
      await this.queue.close();
    })();
    return this.closing;
  }
}

/**
 * The recurring scheduler for `config`: BullMQ job schedulers under `JOBS_PREFIX` when `redisUrl`
 * is set (instances sharing Redis and the prefix share the schedulers), embedded otherwise. Ticks
 * are consumed unless `PROCESS_ROLE=api`.
 */
export async function createScheduler(config: Config, log: FastifyBaseLogger): Promise<RecurringScheduler> {
  const consume = config.processRole !== 'api';
  if (!config.redisUrl) return new EmbeddedScheduler(log, consume);
  const bull = await import('bullmq');
  return new BullScheduler(bull, {
    redisUrl: config.redisUrl,
    prefix: config.jobsPrefix,
    consume,
    log,
    connection: redisClientOptions(config),
  });
}
