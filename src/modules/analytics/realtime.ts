/**
 * Realtime request counters (last 1 and 5 minutes): requests, 5xx errors, 4xx client errors and a
 * latency histogram per second, platform-wide (`all`) and per account (`a:<usr_…>`).
 *
 * Without Redis the counters live in this process (a map of the last 300 seconds). With Redis
 * (`REDIS_URL`) each instance adds its per-second cells to hashes `<prefix><scope>:<epoch-second>`
 * (HINCRBY, 10-minute expiry) every `ANALYTICS_REALTIME_FLUSH_MS`, so every instance reads the
 * same totals; a read flushes this instance's pending cells first. The hot path is a few map
 * increments (no I/O).
 */
import type { AppContext } from '../../context.js';
import { BUCKETS, addBuckets, bucketOf, percentile } from './histogram.js';
import type { RealtimeWindow } from './state.js';

/** Counters of one scope in one second (or summed over a window). */
interface Cell {
  r: number;
  e: number;
  c: number;
  max: number;
  lat: number[];
}

function emptyCell(): Cell {
  return { r: 0, e: 0, c: 0, max: 0, lat: new Array<number>(BUCKETS).fill(0) };
}

/** Largest window served, seconds. */
export const REALTIME_HORIZON_S = 300;
/** Expiry of a per-second hash in Redis, seconds. */
const KEY_TTL_S = 600;

export type { RealtimeWindow } from './state.js';

/** Per-second request counters, in memory or shared through Redis. */
export class RealtimeCounters {
  /** Memory mode: the store (last {@link REALTIME_HORIZON_S} s). Redis mode: cells not yet flushed. */
  private seconds = new Map<number, Map<string, Cell>>();
  private timer?: NodeJS.Timeout;
  private flushing: Promise<void> | null = null;

  constructor(private readonly ctx: AppContext) {}

  /** `redis` when counters are shared through Redis, else `memory` (this instance only). */
  get backend(): 'redis' | 'memory' {
    return this.ctx.redis ? 'redis' : 'memory';
  }

  /** Count one finished request (hot path: no I/O). */
  record(accountId: string | null, status: number, ms: number, now = Date.now()): void {
    const sec = Math.floor(now / 1000);
    let cells = this.seconds.get(sec);
    if (!cells) {
      cells = new Map();
      this.seconds.set(sec, cells);
      if (!this.ctx.redis) this.prune(sec);
    }
    const b = bucketOf(ms);
    bump(cells, 'all', status, ms, b);
    if (accountId) bump(cells, `a:${accountId}`, status, ms, b);
  }

  /** Start the periodic flush to Redis (no-op in memory mode). */
  start(): void {
    if (!this.ctx.redis || this.timer) return;
    this.timer = setInterval(() => void this.flush(), this.ctx.config.analytics.realtimeFlushMs);
    this.timer.unref();
  }

  /** Stop the timer and flush what is pending. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  /** Add pending cells to Redis (one pipeline). Failures are logged and the cells dropped (realtime data only). */
  async flush(): Promise<void> {
    const redis = this.ctx.redis;
    if (!redis) return;
    if (this.flushing) await this.flushing;
    if (!this.seconds.size) return;
    const batch = this.seconds;
    this.seconds = new Map();
    const prefix = this.ctx.config.analytics.redisPrefix;
    const pipe = redis.pipeline();
    for (const [sec, cells] of batch) {
      for (const [scope, cell] of cells) {
        const key = `${prefix}${scope}:${sec}`;
        pipe.hincrby(key, 'r', cell.r);
        if (cell.e) pipe.hincrby(key, 'e', cell.e);
        if (cell.c) pipe.hincrby(key, 'c', cell.c);
        cell.lat.forEach((n, i) => {
          if (n) pipe.hincrby(key, `l${i}`, n);
        });
        pipe.eval(
          `local m = tonumber(redis.call('HGET', KEYS[1], 'm') or '0'); if tonumber(ARGV[1]) > m then redis.call('HSET', KEYS[1], 'm', ARGV[1]) end; return 1`,
          1,
          key,
          String(Math.round(cell.max)),
        );
        pipe.expire(key, KEY_TTL_S);
      }
    }
    this.flushing = pipe
      .exec()
      .then(() => undefined)
      .catch((err: Error) => this.ctx.log.warn({ err: err.message }, 'realtime counters: flush to Redis failed'))
      .finally(() => {
        this.flushing = null;
      });
    await this.flushing;
  }

  /** Sum the cells of `scope` (`all` or `a:<account>`) over each of `windows` (seconds, ≤ 300), ending now. */
  async windows(scope: string, windows: number[], now = Date.now()): Promise<RealtimeWindow[]> {
    const nowSec = Math.floor(now / 1000);
    const horizon = Math.min(REALTIME_HORIZON_S, Math.max(...windows));
    const perSecond = new Map<number, Cell>();
    if (this.ctx.redis) {
      await this.flush();
      const prefix = this.ctx.config.analytics.redisPrefix;
      const pipe = this.ctx.redis.pipeline();
      for (let s = nowSec - horizon + 1; s <= nowSec; s++) pipe.hgetall(`${prefix}${scope}:${s}`);
      const res = (await pipe.exec()) ?? [];
      res.forEach(([err, h], i) => {
        if (err || !h || typeof h !== 'object' || !Object.keys(h).length) return;
        const f = h as Record<string, string>;
        const cell = emptyCell();
        cell.r = Number(f.r ?? 0);
        cell.e = Number(f.e ?? 0);
        cell.c = Number(f.c ?? 0);
        cell.max = Number(f.m ?? 0);
        for (let b = 0; b < BUCKETS; b++) cell.lat[b] = Number(f[`l${b}`] ?? 0);
        perSecond.set(nowSec - horizon + 1 + i, cell);
      });
    } else {
      for (const [sec, cells] of this.seconds) {
        const c = cells.get(scope);
        if (c && sec > nowSec - horizon) perSecond.set(sec, c);
      }
    }
    return windows.map((w) => {
      const sum = emptyCell();
      for (const [sec, c] of perSecond) {
        if (sec <= nowSec - w) continue;
        sum.r += c.r;
        sum.e += c.e;
        sum.c += c.c;
        sum.max = Math.max(sum.max, c.max);
        addBuckets(sum.lat, c.lat);
      }
      return {
        window_seconds: w,
        requests: sum.r,
        requests_per_second: Math.round((sum.r / w) * 1000) / 1000,
        errors: sum.e,
        client_errors: sum.c,
        error_rate: sum.r ? Math.round((sum.e / sum.r) * 10_000) / 10_000 : null,
        p50_ms: percentile(sum.lat, 0.5, sum.max || undefined),
        p95_ms: percentile(sum.lat, 0.95, sum.max || undefined),
        max_ms: sum.r ? Math.round(sum.max * 100) / 100 : null,
      };
    });
  }

  /** Drop seconds that left the horizon (memory mode). */
  private prune(nowSec: number): void {
    for (const sec of this.seconds.keys()) if (sec <= nowSec - REALTIME_HORIZON_S) this.seconds.delete(sec);
  }
}

function bump(cells: Map<string, Cell>, scope: string, status: number, ms: number, b: number): void {
  let c = cells.get(scope);
  if (!c) {
    c = emptyCell();
    cells.set(scope, c);
  }
  c.r++;
  if (status >= 500) c.e++;
  else if (status >= 400) c.c++;
  if (ms > c.max) c.max = ms;
  c.lat[b]++;
}
