/**
 * The automatic-memory writer and its background embedding (issue 18 §1): execution memories are
 * stored at once without a vector (full text finds them), none is dropped under load, and the
 * back-fill gives every one its vector when the process has time — by itself, without a reader
 * asking. Scoped to this file's own users (the PostgreSQL pass shares one database with every suite).
 */
import { describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { execRows } from '../../../src/db/client.js';
import { newId } from '../../../src/http/ids.js';
import { EmbeddingBackfill } from '../../../src/modules/memory/backfill.js';
import { flushMemoryWrites, rememberExecution, settleMemoryEmbeddings } from '../../../src/modules/memory/runtime.js';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { seedSession } from './helpers.js';

const { app, ctx } = await setupApp();

async function counts(userId: string): Promise<{ stored: number; embedded: number }> {
  const [r] = await execRows<{ stored: string; embedded: string }>(
    ctx.db,
    sql`select count(*) as stored, count(embedding) as embedded from memories where user_id = ${userId} and source = 'execution'`,
  );
  return { stored: Number(r.stored), embedded: Number(r.embedded) };
}

function remember(userId: string, sessionId: string, i: number): string {
  const executionId = newId('exe');
  rememberExecution(ctx, {
    executionId,
    userId,
    sessionId,
    agentId: null,
    serviceId: 'svc_writer',
    serviceName: 'weather',
    toolId: 'tool_writer',
    toolName: 'forecast',
    arguments: { city: `city-${i}` },
    status: 'succeeded',
    httpStatus: 200,
    output: { summary: i % 2 ? 'sunny' : 'rain', n: i },
    error: null,
    durationMs: 3,
  });
  return executionId;
}

describe('memory writer — execution memories under load', () => {
  it('stores every memory of a burst at once (found by text), then embeds all of them in the background', async () => {
    const u = await createUser(app);
    const sid = await seedSession(ctx, u.userId);
    const n = 800;
    const ids = new Set<string>();
    // a burst far faster than any embedding model: queued synchronously, in 5 waves
    for (let wave = 0; wave < 5; wave++) {
      for (let i = 0; i < n / 5; i++) ids.add(remember(u.userId, sid, wave * (n / 5) + i));
      await new Promise((r) => setImmediate(r));
    }
    await flushMemoryWrites(ctx);
    const rows = await execRows<{ execution_id: string }>(
      ctx.db,
      sql`select execution_id from memories where user_id = ${u.userId} and source = 'execution'`,
    );
    expect(rows).toHaveLength(n);
    expect(new Set(rows.map((r) => r.execution_id))).toEqual(ids);
    // full text finds one at once, whatever the back-fill has done so far
    const { body: txt } = await call(
      app,
      {
        method: 'GET',
        url: `/memory/search?q=${encodeURIComponent('city-543')}&mode=text&limit=1&kind=execution`,
        headers: u.headers,
      },
      200,
    );
    expect(txt.data[0].content).toContain('city-543');
    // the background back-fill embeds every one by itself (the test process is idle while it waits)
    const deadline = Date.now() + 120_000;
    let c = await counts(u.userId);
    while (c.embedded < n && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      c = await counts(u.userId);
    }
    expect(c).toEqual({ stored: n, embedded: n });
    const { body: vec } = await call(
      app,
      {
        method: 'GET',
        url: `/memory/search?q=${encodeURIComponent('forecast city-77')}&mode=vector&limit=5&kind=execution`,
        headers: u.headers,
      },
      200,
    );
    expect(vec.data.length).toBe(5);
    expect(vec.data.every((h: any) => h.vector_rank !== null)).toBe(true);
  }, 180_000);

  it('settleMemoryEmbeddings makes just-written memories visible to the vector arm', async () => {
    const u = await createUser(app);
    const sid = await seedSession(ctx, u.userId);
    const exe = remember(u.userId, sid, 424242);
    await settleMemoryEmbeddings(ctx);
    const { body } = await call(
      app,
      {
        method: 'GET',
        url: `/memory/search?q=${encodeURIComponent('forecast city-424242')}&mode=vector&limit=1&kind=execution`,
        headers: u.headers,
      },
      200,
    );
    expect(body.data[0].execution_id).toBe(exe);
  });
});

describe('EmbeddingBackfill — when it runs', () => {
  const quietLog = { warn: () => undefined, info: () => undefined };
  /** Keep this thread busy (event-loop utilisation ~1) for `ms`, yielding between 20 ms slices. */
  async function busy(ms: number): Promise<void> {
    const end = performance.now() + ms;
    while (performance.now() < end) {
      const slice = performance.now() + 20;
      while (performance.now() < slice) {
        /* spin */
      }
      await new Promise((r) => setImmediate(r));
    }
  }

  it('waits while the process is busy, embeds when it is idle, and stops when nothing is left', async () => {
    const asked: number[] = [];
    let left = 100;
    const b = new EmbeddingBackfill(
      async (max) => {
        asked.push(max);
        const n = Math.min(max, left);
        left -= n;
        return n;
      },
      quietLog,
      { batch: 40, minBatch: 5, minEveryMs: 60_000, probeMs: 20, idleUtilization: 0.5 },
    );
    b.kick();
    await busy(400);
    expect(asked).toEqual([]); // never idle, and the minimum rate is once a minute
    const deadline = Date.now() + 10_000;
    while (left > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(asked.slice(0, 3)).toEqual([40, 40, 40]);
    expect(left).toBe(0);
    await new Promise((r) => setTimeout(r, 100));
    expect(b.active).toBe(false);
    await b.stop();
  });

  it('keeps a minimum rate on a process that is never idle', async () => {
    const asked: number[] = [];
    const b = new EmbeddingBackfill(async (max) => (asked.push(max), max), quietLog, {
      batch: 40,
      minBatch: 5,
      minEveryMs: 50,
      probeMs: 10,
      idleUtilization: 0.01,
    });
    b.kick();
    await busy(600);
    await b.stop();
    expect(asked.length).toBeGreaterThan(0);
    expect(asked.every((m) => m === 5)).toBe(true);
  });

  it('retries a failing step at the minimum rate only, and settle() surfaces its error', async () => {
    let calls = 0;
    const b = new EmbeddingBackfill(
      async () => {
        calls++;
        throw new Error('provider down');
      },
      quietLog,
      { minEveryMs: 60_000, probeMs: 5 },
    );
    b.kick();
    await new Promise((r) => setTimeout(r, 300));
    expect(calls).toBe(1);
    await expect(b.settle()).rejects.toThrow('provider down');
    await b.stop();
  });
});
