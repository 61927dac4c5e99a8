/** lib/batcher.ts: the group commit shared by the high-volume writers (issue 12 §5). */
import { describe, expect, it } from 'vitest';
import { WriteBatcher } from '../../../src/lib/batcher.js';

describe('WriteBatcher', () => {
  it('carries items that arrive during a write in the next write, in arrival order, one write at a time', async () => {
    const writes: number[][] = [];
    let inFlight = 0;
    let maxInFlight = 0;
    const b = new WriteBatcher<number>({
      write: async (items) => {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        writes.push(items);
        await new Promise((r) => setTimeout(r, 20));
        inFlight--;
      },
    });
    const first = b.add(1);
    await new Promise((r) => setImmediate(r)); // the first write has started
    const rest = [2, 3, 4].map((n) => b.add(n));
    await Promise.all([first, ...rest]);
    expect(writes).toEqual([[1], [2, 3, 4]]);
    expect(maxInFlight).toBe(1);
  });

  it('gathers items added in the same turn into one write and splits at maxBatch', async () => {
    const writes: string[][] = [];
    const b = new WriteBatcher<string>({ write: async (items) => void writes.push(items), maxBatch: 2 });
    await Promise.all(['a', 'b', 'c'].map((x) => b.add(x)));
    expect(writes).toEqual([['a', 'b'], ['c']]);
  });

  it('gather as a function is asked before each batch: without the turn the first item goes alone', async () => {
    const writes: string[][] = [];
    let gather = false;
    let asked = 0;
    const b = new WriteBatcher<string>({
      write: async (items) => void writes.push(items),
      gather: () => (asked++, gather),
    });
    await Promise.all(['a', 'b', 'c'].map((x) => b.add(x)));
    expect(writes).toEqual([['a'], ['b', 'c']]);
    gather = true;
    await Promise.all(['d', 'e'].map((x) => b.add(x)));
    expect(writes.slice(2)).toEqual([['d', 'e']]);
    expect(asked).toBe(3);
  });

  it('settles a promise only when its own item is written: a bad item fails alone', async () => {
    const stored: number[] = [];
    const b = new WriteBatcher<number>({
      write: async (items) => {
        if (items.includes(13)) throw new Error('bad item 13');
        stored.push(...items);
      },
    });
    const results = await Promise.allSettled([1, 13, 2].map((n) => b.add(n)));
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason.message).toBe('bad item 13');
    expect(stored.sort()).toEqual([1, 2]);
  });

  it('drain() waits for queued and in-flight writes', async () => {
    let done = 0;
    const b = new WriteBatcher<number>({
      write: async (items) => void (await new Promise((r) => setTimeout(r, 10)), (done += items.length)),
    });
    void b.add(1);
    void b.add(2);
    expect(b.pending).toBe(2);
    await b.drain();
    expect(done).toBe(2);
    expect(b.pending).toBe(0);
  });

  it('delayMs: waits for companions, takes a full batch at once, and drain() ends the wait', async () => {
    const writes: number[][] = [];
    const b = new WriteBatcher<number>({
      write: async (items) => void writes.push(items),
      maxBatch: 3,
      delayMs: 10_000,
      gather: false,
    });
    const full = [1, 2, 3].map((n) => b.add(n)); // a full batch is not held back
    await Promise.all(full);
    expect(writes).toEqual([[1, 2, 3]]);
    void b.add(4);
    await new Promise((r) => setTimeout(r, 20));
    expect(writes).toHaveLength(1); // still waiting for companions
    void b.add(5);
    const t = performance.now();
    await b.drain();
    expect(performance.now() - t).toBeLessThan(1_000);
    expect(writes).toEqual([
      [1, 2, 3],
      [4, 5],
    ]);
  });

  it("hands each caller its own item's result, also after a failed batch is retried item by item", async () => {
    const writes: number[][] = [];
    const b = new WriteBatcher<number, string>({
      write: async (items) => {
        writes.push(items);
        if (items.includes(13) && items.length > 1) throw new Error('batch refused');
        if (items[0] === 13) throw new Error('13 refused');
        return items.map((n) => `row ${n}`);
      },
    });
    const results = await Promise.allSettled([1, 13, 2].map((n) => b.add(n)));
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).toEqual([
      'row 1',
      '13 refused',
      'row 2',
    ]);
    expect(writes).toEqual([[1, 13, 2], [1], [13], [2]]);
    expect(await b.add(7)).toBe('row 7');
  });

  it('upkeep: runs after the first write, then at most every everyMs, never alongside a write, and its failure fails no caller', async () => {
    const events: string[] = [];
    const errors: unknown[] = [];
    let fail = false;
    const b = new WriteBatcher<number>({
      write: async (items) => {
        events.push(`write ${items.join(',')}`);
        await new Promise((r) => setTimeout(r, 5));
      },
      upkeep: {
        everyMs: 200,
        run: async () => {
          events.push('upkeep');
          await new Promise((r) => setTimeout(r, 5));
          if (fail) throw new Error('prune failed');
        },
        onError: (err) => errors.push(err),
      },
    });
    await b.add(1);
    await b.add(2); // within everyMs: no upkeep
    expect(events).toEqual(['write 1', 'upkeep', 'write 2']);
    await new Promise((r) => setTimeout(r, 250));
    fail = true;
    const during = b.add(3);
    await new Promise((r) => setImmediate(r)); // write 3 has started
    const queued = b.add(4); // arrives while write 3 or its upkeep runs: written after the upkeep
    await expect(Promise.all([during, queued])).resolves.toEqual([undefined, undefined]);
    expect(events.slice(3)).toEqual(['write 3', 'upkeep', 'write 4']);
    expect(errors).toEqual([new Error('prune failed')]);
  });
});
