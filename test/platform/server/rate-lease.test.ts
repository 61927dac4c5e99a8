/**
 * Rate-limit counts leased from Redis in blocks (src/http/rate-lease.ts): never more than `max`
 * admitted per window across instances, one Redis command per block, exact below 200 per window.
 * Needs Redis (TEST_REDIS_URL); the leased store is only used with Redis.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { LeasedRedisStore, leaseSize } from '../../../src/http/rate-lease.js';

type Res = { current: number; ttl: number };
const url = process.env.TEST_REDIS_URL;

describe.skipIf(!url)('leased rate-limit store', async () => {
  const { Redis } = await import('ioredis');
  const redis = new Redis(url!);
  afterAll(() => redis.disconnect());
  const prefix = () => `test:lease:${randomBytes(6).toString('hex')}:`;
  const incr = (s: LeasedRedisStore, key: string, max: number, window = 60_000) =>
    new Promise<Res>((resolve, reject) => s.incr(key, (err, res) => (err ? reject(err) : resolve(res!)), window, max));

  it('sizes blocks at 1 % of the limit, at least 1 and at most 1000', () => {
    expect([leaseSize(3), leaseSize(199), leaseSize(200), leaseSize(1200), leaseSize(1e8)]).toEqual([
      1, 1, 2, 12, 1000,
    ]);
  });

  it('two instances together admit exactly max, with one command per block', async () => {
    const p = prefix();
    const a = new LeasedRedisStore(redis, p);
    const b = new LeasedRedisStore(redis, p);
    const spy = vi.spyOn(redis as unknown as { rateLimitLease: () => void }, 'rateLimitLease');
    const max = 1000; // blocks of 10
    const admitted: number[] = [];
    // Alternating, then concurrent bursts on each instance.
    for (let i = 0; i < 300; i++) admitted.push((await incr(i % 2 ? a : b, 'k', max)).current);
    const burst = await Promise.all(Array.from({ length: 1000 }, (_, i) => incr(i % 3 ? a : b, 'k', max)));
    admitted.push(...burst.map((r) => r.current));
    const ok = admitted.filter((c) => c <= max);
    expect(ok.length).toBeLessThanOrEqual(max);
    // Unused units are bounded by one block per instance besides the refusing one.
    expect(ok.length).toBeGreaterThanOrEqual(max - (leaseSize(max) - 1));
    // Unit numbers handed out are distinct (each admitted request has its own unit).
    expect(new Set(ok).size).toBe(ok.length);
    expect(spy.mock.calls.length).toBeLessThan(admitted.length / 5);
    // Once spent, the window answers over-limit without Redis until it ends.
    const calls = spy.mock.calls.length;
    const after = await incr(a, 'k', max);
    expect(after.current).toBeGreaterThan(max);
    expect(after.ttl).toBeGreaterThan(0);
    expect(after.ttl).toBeLessThanOrEqual(60_000);
    expect(spy.mock.calls.length).toBe(calls);
    spy.mockRestore();
  });

  it('counts every request in Redis below 200 per window (blocks of one), and a new window starts afresh', async () => {
    const p = prefix();
    const a = new LeasedRedisStore(redis, p);
    const b = new LeasedRedisStore(redis, p);
    const got = [];
    for (let i = 0; i < 6; i++) got.push((await incr(i % 2 ? a : b, 'k', 5, 1000)).current);
    expect(got).toEqual([1, 2, 3, 4, 5, 6]);
    expect(Number(await redis.get(`${p}k`))).toBe(6);
    await new Promise((r) => setTimeout(r, 1100));
    expect((await incr(a, 'k', 5, 1000)).current).toBe(1);
  });

  it('passes a Redis error to the waiting requests and tries again on the next one', async () => {
    const broken = new LeasedRedisStore(redis, prefix());
    const spy = vi
      .spyOn(redis as unknown as { rateLimitLease: (...a: unknown[]) => void }, 'rateLimitLease')
      .mockImplementationOnce((...args: unknown[]) => {
        (args[3] as (err: Error) => void)(new Error('boom'));
      });
    await expect(incr(broken, 'k', 1000)).rejects.toThrow('boom');
    expect((await incr(broken, 'k', 1000)).current).toBe(1);
    spy.mockRestore();
  });
});
