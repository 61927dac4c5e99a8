/**
 * Background jobs behind one interface (DESIGN.md §2): an in-process queue in embedded mode, a
 * BullMQ (Redis) queue when `REDIS_URL` is set. Job handlers are registered by modules at start-up;
 * `PROCESS_ROLE` decides whether this process consumes jobs (`all`, `worker`) or only enqueues
 * them (`api`).
 *
 * Delivery is at-least-once in both implementations: handlers must be idempotent.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { RedisOptions } from 'ioredis';
import type { Config } from '../config.js';
import { AppError } from '../http/errors.js';
import { newId } from '../http/ids.js';
import { traceEnqueue, traceJob } from '../telemetry/jobs.js';

/**
 * ioredis options of the platform's command clients (`ctx.redis`, queue producers) — fail fast
 * while Redis is down: a command waits at most `REDIS_COMMAND_TIMEOUT_MS`, is
 * retried once across a reconnect, and reconnects back off from 100 ms to 2 s. The offline queue
 * stays on so commands issued during start-up wait for the first connection (bounded by the
 * command timeout). Blocking consumers (BullMQ workers) keep BullMQ's own settings.
 */
export function redisClientOptions(config: Config): RedisOptions {
  return {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: true,
    commandTimeout: config.redis.commandTimeoutMs,
    connectTimeout: config.redis.connectTimeoutMs,
    retryStrategy: (times) => Math.min(100 * 2 ** (times - 1), 2000),
  };
}

/** `p`'s value, or undefined when it has not settled within `ms` (a rejection propagates). */
async function within<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)));
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Seconds a client is told to wait (`Retry-After`) when the job queue's Redis is unreachable. */
const QUEUE_RETRY_AFTER_S = 5;

/** Options of one enqueued job. */
export interface JobOptions {
  /** Run no earlier than this many ms from now. */
  delayMs?: number;
  /** Total attempts (first run included) before the job is given up; default 1. */
  attempts?: number;
  /** Base of the exponential backoff between attempts, ms; default 1000. */
  backoffMs?: number;
  /** Deduplication key: a job with the same id that is still queued is not added twice. */
  jobId?: string;
}

/** Facts about the running job given to its handler. */
export interface JobMeta {
  id: string;
  name: string;
  /** 1 for the first run. */
  attempt: number;
}

/** A job handler; throwing fails the attempt (retried while attempts remain). */
export type JobHandler<P = unknown> = (payload: P, meta: JobMeta) => Promise<void>;

/** The queue every module uses (`ctx.jobs`). Payloads must be JSON-serialisable. */
export interface JobQueue {
  readonly kind: 'in-process' | 'bullmq';
  /** Register the handler of jobs named `name` (one per name). */
  register<P>(name: string, handler: JobHandler<P>): void;
  /** Enqueue a job; resolves to its id once it is durably queued. */
  enqueue<P>(name: string, payload: P, opts?: JobOptions): Promise<string>;
  /** Resolves when nothing is queued or running in this process (tests; in-process only meaningful). */
  drain(): Promise<void>;
  /** Stop consuming and release connections; running jobs are allowed to finish. */
  close(): Promise<void>;
}

/** In-process queue: jobs run on this event loop, retried with exponential backoff. */
export class InProcessQueue implements JobQueue {
  readonly kind = 'in-process' as const;
  private readonly handlers = new Map<string, JobHandler<any>>();
  /** Jobs enqueued before their handler was registered. */
  private readonly waiting = new Map<string, Array<() => void>>();
  private readonly pending = new Set<Promise<void>>();
  private readonly queuedIds = new Set<string>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private closed = false;

  constructor(
    private readonly log: FastifyBaseLogger,
    private readonly consume = true,
  ) {}

  register<P>(name: string, handler: JobHandler<P>): void {
    if (this.handlers.has(name)) throw new Error(`job handler "${name}" already registered`);
    this.handlers.set(name, handler as JobHandler<any>);
    for (const start of this.waiting.get(name) ?? []) start();
    this.waiting.delete(name);
  }

  async enqueue<P>(name: string, payload: P, opts: JobOptions = {}): Promise<string> {
    if (this.closed) throw new Error('job queue is closed');
    return traceEnqueue(this.kind, name, async (carrier) => this.add(name, payload, opts, carrier));
  }

  /** Queue one job; `carrier`: the enqueuing trace context its runs continue (telemetry/jobs.ts). */
  private add<P>(name: string, payload: P, opts: JobOptions, carrier: string | undefined): string {
    const id = opts.jobId ?? newId('job');
    if (this.queuedIds.has(id)) return id;
    this.queuedIds.add(id);
    const data = JSON.parse(JSON.stringify(payload ?? null)) as P; // same semantics as a Redis queue
    const attempts = Math.max(1, opts.attempts ?? 1);
    const backoff = opts.backoffMs ?? 1000;
    let settle!: () => void;
    const done = new Promise<void>((r) => (settle = r));
    this.pending.add(done);
    const finish = () => {
      this.queuedIds.delete(id);
      this.pending.delete(done);
      settle();
    };
    const run = async (attempt: number): Promise<void> => {
      if (this.closed) return finish();
      const handler = this.handlers.get(name)!;
      try {
        await traceJob({ system: this.kind, name, id, attempt, carrier }, () => handler(data, { id, name, attempt }));
        finish();
      } catch (err) {
        if (attempt < attempts && !this.closed) {
          this.log.warn({ job: name, id, attempt, err: (err as Error).message }, 'job failed; retrying');
          this.later(() => void run(attempt + 1), backoff * 2 ** (attempt - 1));
        } else {
          this.log.error({ job: name, id, attempt, err }, 'job failed');
          finish();
        }
      }
    };
    const start = () => this.later(() => void run(1), opts.delayMs ?? 0);
    if (!this.consume) {
      this.log.warn({ job: name }, 'PROCESS_ROLE=api without Redis: job not run');
      finish();
    } else if (this.handlers.has(name)) start();
    else this.waiting.set(name, [...(this.waiting.get(name) ?? []), start]);
    return id;
  }

  private later(fn: () => void, ms: number): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    this.timers.add(t);
  }

  async drain(): Promise<void> {
    while (this.pending.size) await Promise.allSettled([...this.pending]);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    await Promise.race([this.drain(), new Promise((r) => setTimeout(r, 5000).unref())]);
  }
}

/**
 * How long a worker's lock on a job lives without renewal, ms (renewed every half of it). BullMQ's
 * default is 30 s with a 30 s stalled check, which is two checks apart: a job of a worker that died
 * (SIGKILL, OOM, lost host) came back after up to ~65 s (measured 68 s in the topology test, and
 * over 90 s once under CI load). With 10 s / 5 s it is back within ~20 s. The job handlers never
 * block the event loop that long (sandboxed code runs in child processes).
 */
export const JOB_LOCK_MS = 10_000;
/** Interval of BullMQ's stalled-job check, ms (see {@link JOB_LOCK_MS}). */
export const JOB_STALLED_CHECK_MS = 5_000;

/** BullMQ queue: one Redis queue per job name, a Worker per registered name unless `PROCESS_ROLE=api`. */
export class BullQueue implements JobQueue {
  readonly kind = 'bullmq' as const;
  private readonly queues = new Map<string, import('bullmq').Queue>();
  private readonly workers: Array<import('bullmq').Worker> = [];
  private readonly running = new Set<Promise<unknown>>();
  private closing?: Promise<void>;

  constructor(
    private readonly bull: typeof import('bullmq'),
    private readonly redisUrl: string,
    private readonly prefix: string,
    private readonly consume: boolean,
    private readonly log: FastifyBaseLogger,
    /** Producer connection options: {@link redisClientOptions} without the offline queue (enqueue fails at once while Redis is down). */
    private readonly producer: RedisOptions = { maxRetriesPerRequest: null },
    /** Longest wait for a producer connection to be ready before an enqueue fails with 503, ms. */
    private readonly readyTimeoutMs = 1000,
    /**
     * Worker (blocking) connection options on top of BullMQ's required `maxRetriesPerRequest: null`:
     * the reconnect backoff of {@link redisClientOptions}. BullMQ's own grows to 20 s after four
     * failed attempts, so a worker resumed up to 20 s after Redis was back, and closing the app
     * waited for that reconnection.
     */
    private readonly consumer: RedisOptions = {},
  ) {}

  private queue(name: string): import('bullmq').Queue {
    let q = this.queues.get(name);
    if (!q) {
      q = new this.bull.Queue(name, {
        connection: { url: this.redisUrl, ...this.producer } as import('bullmq').ConnectionOptions,
        prefix: this.prefix,
      });
      q.on('error', (err) => this.log.warn({ queue: name, err: err.message }, 'job queue error'));
      this.queues.set(name, q);
    }
    return q;
  }

  register<P>(name: string, handler: JobHandler<P>): void {
    if (!this.consume) return;
    const worker = new this.bull.Worker(
      name,
      async (job) => {
        const meta = { id: String(job.id), name, attempt: job.attemptsMade + 1 };
        const carrier = job.opts.telemetry?.metadata;
        const p = traceJob({ system: this.kind, carrier, ...meta }, () => handler(job.data as P, meta));
        this.running.add(p);
        try {
          await p;
        } finally {
          this.running.delete(p);
        }
      },
      {
        connection: {
          url: this.redisUrl,
          ...this.consumer,
          maxRetriesPerRequest: null,
        } as import('bullmq').ConnectionOptions,
        prefix: this.prefix,
        concurrency: 8,
        lockDuration: JOB_LOCK_MS,
        stalledInterval: JOB_STALLED_CHECK_MS,
      },
    );
    worker.on('error', (err) => this.log.warn({ queue: name, err: err.message }, 'job worker error'));
    worker.on('failed', (job, err) => this.log.error({ job: name, id: job?.id, err: err.message }, 'job failed'));
    this.workers.push(worker);
  }

  /** @throws AppError service_unavailable (503, `Retry-After`) while Redis is unreachable. */
  async enqueue<P>(name: string, payload: P, opts: JobOptions = {}): Promise<string> {
    try {
      const queue = this.queue(name);
      // A queue first used during an outage never finishes connecting (BullMQ waits for `ready`
      // without a deadline) and `add` waits with it: every such request hung until Redis came
      // back. So the connection must be ready within the command timeout, and
      // `add` is only called then (without the offline queue it fails at once if the connection
      // has dropped since, so an enqueue answered 503 never runs later).
      if (
        !(await within(
          queue.waitUntilReady().then(() => true),
          this.readyTimeoutMs,
        ))
      )
        throw new Error('Redis connection is not ready');
      // BullMQ's own context-propagation field carries the enqueuing request's trace context.
      const job = await traceEnqueue(this.kind, name, (carrier) =>
        queue.add(name, payload, {
          ...(carrier ? { telemetry: { metadata: carrier } } : {}),
          jobId: opts.jobId,
          delay: opts.delayMs,
          attempts: Math.max(1, opts.attempts ?? 1),
          backoff: { type: 'exponential', delay: opts.backoffMs ?? 1000 },
          removeOnComplete: { count: 1000 },
          removeOnFail: { count: 5000 },
        }),
      );
      return String(job.id);
    } catch (err) {
      this.log.warn({ job: name, err: (err as Error).message }, 'could not enqueue a job: Redis unavailable');
      throw new AppError('service_unavailable', 'The job queue is unavailable right now; retry shortly', {
        headers: { 'retry-after': String(QUEUE_RETRY_AFTER_S) },
      });
    }
  }

  async drain(): Promise<void> {
    while (this.running.size) await Promise.allSettled([...this.running]);
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      await Promise.all(this.workers.map((w) => w.close()));
      await Promise.all([...this.queues.values()].map((q) => q.close()));
    })();
    return this.closing;
  }
}

/**
 * The queue for `config`: BullMQ when `redisUrl` is set, in-process otherwise. In tests each app
 * instance gets its own Redis prefix so parallel test files never consume each other's jobs.
 */
export async function createJobQueue(config: Config, log: FastifyBaseLogger): Promise<JobQueue> {
  const consume = config.processRole !== 'api';
  if (!config.redisUrl) return new InProcessQueue(log, consume);
  const bull = await import('bullmq');
  const prefix =
    config.nodeEnv === 'test' ? `${config.jobsPrefix}-test-${randomBytes(4).toString('hex')}` : config.jobsPrefix;
  const redis = redisClientOptions(config);
  return new BullQueue(
    bull,
    config.redisUrl,
    prefix,
    consume,
    log,
    { ...redis, enableOfflineQueue: false },
    config.redis.commandTimeoutMs,
    {
      retryStrategy: redis.retryStrategy,
    },
  );
}
