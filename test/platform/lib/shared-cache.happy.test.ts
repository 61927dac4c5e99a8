import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import type { AppContext } from '../../../src/context.js';
import { SharedCache } from '../../../src/lib/shared-cache.js';

const quiet = { warn: () => undefined } as never;

function fakeCtx(redis?: Redis): AppContext {
  return { config: {}, log: quiet, onClose: [], redis } as unknown as AppContext;
}

/** A loader that counts its calls and answers `value`. */
function counter(value: () => string) {
  const calls: string[] = [];
  return { calls, load: async (key: string) => (calls.push(key), value()) };
}

describe('SharedCache', () => {
  it('loads once per key until the key (or everything) is invalidated', async () => {
    const cache = SharedCache.of<string>(fakeCtx(), { name: 't', max: 10, ttlMs: 60_000 });
    let v = 'one';
    const c = counter(() => v);
    expect(await cache.get('a', c.load)).toBe('one');
    v = 'two';
    expect(await cache.get('a', c.load)).toBe('one');
    await cache.invalidate('a');
    expect(await cache.get('a', c.load)).toBe('two');
    await cache.get('b', c.load);
    await cache.invalidate(null);
    await cache.get('a', c.load);
    await cache.get('b', c.load);
    expect(c.calls).toEqual(['a', 'a', 'b', 'a', 'b']);
  });

  it('peek answers what get would without loading: nothing before a load, after an eviction, or without caching', async () => {
    const cache = SharedCache.of<string>(fakeCtx(), { name: 'peek', max: 10, ttlMs: 60_000 });
    expect(cache.peek('a')).toBeUndefined();
    await cache.get('a', async () => 'one');
    expect(cache.peek('a')).toBe('one');
    cache.evictLocal('a');
    expect(cache.peek('a')).toBeUndefined();
    const none = SharedCache.of<string>(fakeCtx(), { name: 'off', max: 10, ttlMs: 0 });
    await none.get('a', async () => 'one');
    expect(none.peek('a')).toBeUndefined();
  });

  it('returns the same cache for the same name and app, another for another app', () => {
    const ctx = fakeCtx();
    const a = SharedCache.of(ctx, { name: 'same', max: 1, ttlMs: 1000 });
    expect(SharedCache.of(ctx, { name: 'same', max: 1, ttlMs: 1000 })).toBe(a);
    expect(SharedCache.of(fakeCtx(), { name: 'same', max: 1, ttlMs: 1000 })).not.toBe(a);
  });

  it('does not keep a value loaded before an invalidation that happened during the load', async () => {
    const cache = SharedCache.of<string>(fakeCtx(), { name: 'race', max: 10, ttlMs: 60_000 });
    let release!: () => void;
    const slow = cache.get('k', () => new Promise<string>((r) => (release = () => r('stale'))));
    await cache.invalidate('k'); // the write commits while the read is in flight
    release();
    expect(await slow).toBe('stale'); // that caller gets what it read…
    expect(await cache.get('k', async () => 'fresh')).toBe('fresh'); // …but it was not cached
  });

  it('does not cache failed loads, and caches nothing with ttlMs 0', async () => {
    const cache = SharedCache.of<string>(fakeCtx(), { name: 'errors', max: 10, ttlMs: 60_000 });
    await expect(cache.get('k', async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await cache.get('k', async () => 'ok')).toBe('ok');
    const off = SharedCache.of<string>(fakeCtx(), { name: 'off', max: 10, ttlMs: 0 });
    const c = counter(() => 'x');
    await off.get('k', c.load);
    await off.get('k', c.load);
    expect(c.calls).toHaveLength(2);
  });

  it('expires entries after ttlMs', async () => {
    const cache = SharedCache.of<string>(fakeCtx(), { name: 'ttl', max: 10, ttlMs: 30 });
    const c = counter(() => 'x');
    await cache.get('k', c.load);
    await new Promise((r) => setTimeout(r, 60));
    await cache.get('k', c.load);
    expect(c.calls).toHaveLength(2);
  });

  it.skipIf(!process.env.TEST_REDIS_URL)('evicts on every instance through Redis', async () => {
    const url = process.env.TEST_REDIS_URL!;
    const ctxA = fakeCtx(new Redis(url));
    const ctxB = fakeCtx(new Redis(url));
    try {
      const a = SharedCache.of<string>(ctxA, { name: 'cross', max: 10, ttlMs: 60_000 });
      const b = SharedCache.of<string>(ctxB, { name: 'cross', max: 10, ttlMs: 60_000 });
      await Promise.all([a.ready(), b.ready()]);
      let v = 'old';
      const c = counter(() => v);
      await b.get('k', c.load);
      v = 'new';
      await a.invalidate('k'); // instance A wrote
      const deadline = Date.now() + 2000;
      while ((await b.get('k', c.load)) !== 'new' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      expect(await b.get('k', c.load)).toBe('new');
    } finally {
      for (const ctx of [ctxA, ctxB]) {
        for (const fn of ctx.onClose) await fn();
        ctx.redis!.disconnect();
      }
    }
  });
});
