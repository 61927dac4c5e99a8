/**
 * Rate-limit counts leased from Redis in blocks: a store for @fastify/rate-limit
 * that reserves a block of a key's window budget with one Redis command (`INCRBY`) and admits the
 * block's requests from process memory, instead of one Redis round trip per request (one `EVALSHA`
 * per request was ~11–15 % of an agent-memory GET's CPU: socket writes are expensive).
 *
 * Bounded approximation, on the strict side only: the Redis counter counts units *reserved* by
 * all instances in the window, and a request is admitted only on a reserved unit numbered ≤ max,
 * so the instances together never admit more than `max` per window (as with a per-request `INCR`).
 * What may be lost: units an instance reserved but did not use before the window ends — a caller
 * can be refused while up to (instances − 1) × (block − 1) units sit unused in other instances'
 * blocks. The block is {@link LEASE_FRACTION} of `max` (rounded down, at most {@link MAX_LEASE}), so
 * limits under 200 per window are counted one request per command, exactly as before; an over-limit
 * window is remembered locally until it ends (its counter cannot go down). `RateLimit-Remaining`
 * is `max` minus the request's unit number (units of other instances' unused blocks count as used).
 */
import type { Redis } from 'ioredis';
import { LRUCache } from 'lru-cache';

/** Share of a window's budget one command reserves. */
export const LEASE_FRACTION = 0.01;
/** Largest block reserved at once (bounds the units an instance can leave unused). */
export const MAX_LEASE = 1000;

type StoreCallback = (err: Error | null, res?: { current: number; ttl: number }) => void;

/** Reserve ARGV[2] units of KEYS[1]; the window (ARGV[1] ms) starts with the first reservation. → {total, pttl} */
const LEASE_LUA = `
local total = redis.call('INCRBY', KEYS[1], ARGV[2])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {total, ttl}`;

/** One key's block in this process. */
interface Lease {
  /** Next unit number to hand out. */
  next: number;
  /** Last usable unit number of the block (≤ max). */
  last: number;
  /** When the window ends (local clock, from Redis's PTTL). */
  resetAt: number;
  /** Whether the window's budget is spent (nothing more will be reserved before `resetAt`). */
  spent: boolean;
  /** Requests waiting for the block being reserved (null: none in flight). */
  waiting: Array<{ cb: StoreCallback; max: number }> | null;
}

type LeaseRedis = Redis & {
  rateLimitLease(
    key: string,
    windowMs: number,
    units: number,
    cb: (err: Error | null, res?: [number, number]) => void,
  ): void;
};

/** Units reserved per command for a limit of `max` per window. */
export function leaseSize(max: number): number {
  return Math.max(1, Math.min(MAX_LEASE, Math.floor(max * LEASE_FRACTION)));
}

/**
 * The @fastify/rate-limit store contract (`incr`, `child`) over blocks leased from Redis. Route
 * options `continueExceeding`/`exponentialBackoff` (which move the window per request) are not
 * supported: the caller uses the plugin's own per-request `RedisStore` for those.
 */
export class LeasedRedisStore {
  private readonly redis: LeaseRedis;

  /** `leases`: the blocks in hand, by Redis key — one LRU shared by a store and its per-route children. */
  constructor(
    redis: Redis,
    private readonly prefix: string,
    private readonly leases = new LRUCache<string, Lease>({ max: 50_000 }),
  ) {
    this.redis = redis as LeaseRedis;
    if (!this.redis.rateLimitLease) this.redis.defineCommand('rateLimitLease', { numberOfKeys: 1, lua: LEASE_LUA });
  }

  incr(name: string, cb: StoreCallback, timeWindow: number, max: number): void {
    const key = this.prefix + name;
    const now = Date.now();
    let lease = this.leases.get(key);
    // (A block being reserved has no window yet: its requests wait for it.)
    if (!lease || (!lease.waiting && now >= lease.resetAt)) {
      lease = { next: 1, last: 0, resetAt: 0, spent: false, waiting: null };
      this.leases.set(key, lease);
    }
    if (lease.waiting) {
      lease.waiting.push({ cb, max });
      return;
    }
    if (this.serve(lease, cb, max, now)) return;
    lease.waiting = [{ cb, max }];
    this.reserve(key, lease, timeWindow, max);
  }

  /** @throws Error for route options that move the window per request (`continueExceeding`, `exponentialBackoff`). */
  child(routeOptions: {
    routeInfo: { method: string; url: string };
    continueExceeding?: boolean;
    exponentialBackoff?: boolean;
  }): LeasedRedisStore {
    if (routeOptions.continueExceeding || routeOptions.exponentialBackoff)
      throw new Error('rate limits: continueExceeding and exponentialBackoff are not supported by the leased store');
    return new LeasedRedisStore(
      this.redis,
      `${this.prefix}${routeOptions.routeInfo.method}${routeOptions.routeInfo.url}-`,
      this.leases,
    );
  }

  /** Answer from the block in hand; false when it is used up (a new block is needed). */
  private serve(lease: Lease, cb: StoreCallback, max: number, now: number): boolean {
    if (lease.spent) {
      cb(null, { current: max + 1, ttl: lease.resetAt - now });
      return true;
    }
    if (lease.next > lease.last) {
      // The block ended at the limit: the window's budget is spent until it ends.
      if (lease.last < max) return false;
      lease.spent = true;
      cb(null, { current: max + 1, ttl: lease.resetAt - now });
      return true;
    }
    cb(null, { current: lease.next++, ttl: lease.resetAt - now });
    return true;
  }

  private reserve(key: string, lease: Lease, timeWindow: number, max: number): void {
    const units = leaseSize(max);
    this.redis.rateLimitLease(key, timeWindow, units, (err, res) => {
      const waiting = lease.waiting ?? [];
      lease.waiting = null;
      if (err || !res) {
        // Nothing was reserved (or it is unknown): the waiting requests get the error (the failover
        // store counts them locally), the next request tries again.
        this.leases.delete(key);
        for (const w of waiting) w.cb(err ?? new Error('rate-limit lease: empty reply'));
        return;
      }
      const [total, ttl] = res;
      const first = total - units + 1;
      lease.next = first;
      lease.last = Math.min(total, max);
      lease.resetAt = Date.now() + ttl;
      lease.spent = first > max;
      const now = Date.now();
      let i = 0;
      for (; i < waiting.length; i++) if (!this.serve(lease, waiting[i].cb, waiting[i].max, now)) break;
      if (i < waiting.length) {
        lease.waiting = waiting.slice(i);
        this.reserve(key, lease, timeWindow, max);
      }
    });
  }
}
