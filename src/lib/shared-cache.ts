/**
 * In-process read-through caches whose entries can be evicted on every instance.
 *
 * A {@link SharedCache} is an LRU (lru-cache) of values loaded from the database. The module that
 * owns the data calls {@link SharedCache.invalidate} after each write: the entry is deleted here at
 * once and, when `REDIS_URL` is set, the eviction is published on one Redis pub/sub channel so
 * every other instance deletes it too (one subscriber connection per app, shared by all caches).
 * Without Redis (one embedded instance, or several instances on one PostgreSQL without Redis) the
 * TTL bounds how long another instance can serve a stale entry (docs/adr/0126-execute-caches-the-execution-path-reads-the.md).
 *
 * A load that races an invalidation never re-inserts the value it read before the write: every
 * invalidation bumps a generation, and a loaded value is cached only when the generation it
 * started under is still current.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';
import { LRUCache } from 'lru-cache';

/** Redis channel that carries evictions: messages are `<instance>\n<cache>\n<key>` (empty key = clear all). */
const CHANNEL = 'ap:cache:evict';

/** Options of a cache. */
export interface SharedCacheOptions {
  /** Unique name of the cache within the app (part of the eviction message). */
  name: string;
  /** Most entries kept (least recently used ones are dropped). */
  max: number;
  /** Longest time an entry is served, in milliseconds (bounds cross-instance staleness without Redis); 0 = do not cache. */
  ttlMs: number;
}

/** The per-app eviction bus (`AppContext.cacheBus`): the caches by name and, with Redis, the subscriber connection. */
export interface CacheBus {
  /** Id of this instance in eviction messages (its own are ignored). */
  instance: string;
  caches: Map<string, SharedCache<unknown>>;
  /** Resolves once subscribed (null without Redis). */
  ready: Promise<void> | null;
  /** True while Redis is unreachable: publishing is skipped (logged once per outage). */
  offline: boolean;
}

/**
 * What a cache needs of the app: the `AppContext` fields it uses (declared here, structurally, so
 * that `context.ts` can name {@link CacheBus} without an import loop).
 */
export interface CacheHost {
  redis?: Redis;
  log: FastifyBaseLogger;
  onClose: Array<() => Promise<void> | void>;
  cacheBus?: CacheBus;
}

function busOf(ctx: CacheHost): CacheBus {
  if (ctx.cacheBus) return ctx.cacheBus;
  const bus: CacheBus = { instance: randomUUID(), caches: new Map(), ready: null, offline: false };
  ctx.cacheBus = bus;
  if (ctx.redis) {
    const sub = ctx.redis.duplicate();
    sub.on('error', (err) => ctx.log.warn({ err: err.message }, 'redis cache-eviction subscriber error'));
    sub.on('message', (_channel: string, message: string) => {
      const [from, name, key] = message.split('\n');
      if (from === bus.instance) return;
      bus.caches.get(name)?.evictLocal(key === '' ? null : key);
    });
    // Pub/sub is not durable: evictions published while this subscriber was disconnected are lost,
    // so on every reconnection (ioredis resubscribes by itself) every cache is cleared once.
    let connected = false;
    sub.on('ready', () => {
      if (connected) for (const c of bus.caches.values()) c.evictLocal(null);
      connected = true;
    });
    bus.ready = sub.subscribe(CHANNEL).then(
      () => undefined,
      (err: Error) =>
        ctx.log.warn(
          { err: err.message },
          'could not subscribe to cache evictions; other instances may serve stale entries until their TTL',
        ),
    );
    ctx.onClose.push(() => {
      sub.disconnect();
    });
  }
  return bus;
}

/** A named read-through cache of one kind of value (see the module comment). */
export class SharedCache<V> {
  private readonly lru: LRUCache<string, { v: V }> | null;
  private generation = 0;

  private constructor(
    private readonly ctx: CacheHost,
    private readonly bus: CacheBus,
    readonly name: string,
    opts: SharedCacheOptions,
  ) {
    this.lru = opts.ttlMs > 0 ? new LRUCache<string, { v: V }>({ max: opts.max, ttl: opts.ttlMs }) : null;
  }

  /**
   * The cache called `opts.name` of this app, created on first use (later calls return the same
   * cache; their options are ignored).
   */
  static of<V>(ctx: CacheHost, opts: SharedCacheOptions): SharedCache<V> {
    const bus = busOf(ctx);
    let cache = bus.caches.get(opts.name) as SharedCache<V> | undefined;
    if (!cache) {
      cache = new SharedCache<V>(ctx, bus, opts.name, opts);
      bus.caches.set(opts.name, cache as SharedCache<unknown>);
    }
    return cache;
  }

  /** Resolves once evictions from other instances are being received (immediately without Redis). */
  ready(): Promise<void> {
    return this.bus.ready ?? Promise.resolve();
  }

  /** The cached value of `key`, or `load(key)`'s (cached unless an invalidation happened meanwhile). Errors of `load` propagate and are not cached. */
  async get(key: string, load: (key: string) => Promise<V>): Promise<V> {
    if (!this.lru) return load(key);
    const hit = this.lru.get(key);
    if (hit) return hit.v;
    const generation = this.generation;
    const v = await load(key);
    if (generation === this.generation) this.lru.set(key, { v });
    return v;
  }

  /** The cached value of `key` when there is one (no load; `undefined` on a miss or without caching). */
  peek(key: string): V | undefined {
    return this.lru?.get(key)?.v;
  }

  /**
   * Evict `key` (or everything, when `key` is null) here and on every other instance. Call it
   * after the write has committed. Never throws and never waits for an unreachable Redis: a failed
   * or skipped publish is logged once per outage (other instances then hold the entry until they
   * reconnect, which clears their caches, or until its TTL).
   */
  async invalidate(key: string | null): Promise<void> {
    this.evictLocal(key);
    const redis = this.ctx.redis;
    if (!redis) return;
    // While Redis is unreachable a publish could only wait for the command timeout and fail (and
    // the other instances' subscribers are disconnected too: they clear their caches when they
    // reconnect), so the write that called this does not wait for it.
    if (redis.status !== 'ready') return this.offline(`Redis connection is ${redis.status}`);
    try {
      await redis.publish(CHANNEL, `${this.bus.instance}\n${this.name}\n${key ?? ''}`);
      if (this.bus.offline) {
        this.bus.offline = false;
        this.ctx.log.info('cache evictions: Redis is back; publishing again');
      }
    } catch (err) {
      this.offline((err as Error).message);
    }
  }

  private offline(reason: string): void {
    if (this.bus.offline) return;
    this.bus.offline = true;
    this.ctx.log.warn(
      { reason, cache: this.name },
      'cache evictions: Redis unavailable; other instances may serve stale entries until they reconnect or the TTL ends',
    );
  }

  /** Evict on this instance only (what a received eviction does). */
  evictLocal(key: string | null): void {
    this.generation++;
    if (key === null) this.lru?.clear();
    else this.lru?.delete(key);
  }
}
