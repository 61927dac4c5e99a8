/**
 * The embedded database on its own thread (db/pglite-thread.ts, db/pglite-worker.ts): an on-disk
 * PGlite executes off the main thread, keeps PostgreSQL's errors (SQLSTATE and fields) across the
 * thread, runs concurrent callers' statements and transactions without interleaving them, persists
 * across a close and a reopen, and fails a bad open or a call after close with an error, never a hang.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { messages } from '@electric-sql/pglite';
import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { execRows, openDatabase, type Database } from '../../../src/db/client.js';
import { PGliteThread, openPGliteThread } from '../../../src/db/pglite-thread.js';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-pglite-thread-'));
const open = (dir: string) =>
  openDatabase(
    loadConfig({ NODE_ENV: 'test', DATA_DIR: path.join(root, dir), DATABASE_IN_MEMORY: 'off', PGLITE_THREAD: 'on' }),
  );

afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

describe.skipIf(!!process.env.TEST_DATABASE_URL)('PGlite on its own thread', () => {
  let database: Database;

  it('opens an on-disk data directory on a worker thread: a slow statement leaves this thread free', async () => {
    database = await open('a');
    expect(database.engine).toBe('pglite');
    expect((database.db as unknown as { $client: unknown }).$client).toBeInstanceOf(PGliteThread);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 10);
    const started = Date.now();
    await execRows(database.db, sql`select pg_sleep(0.4)`);
    clearInterval(timer);
    expect(Date.now() - started).toBeGreaterThanOrEqual(390);
    // On this thread, PGlite would have blocked the event loop for the whole 0.4 s (no tick at all).
    expect(ticks).toBeGreaterThan(10);
  });

  it("keeps PostgreSQL's error fields across the thread", async () => {
    await database.db.execute(sql`create table thread_t (id text primary key, n int not null check (n >= 0))`);
    await database.db.execute(sql`insert into thread_t values ('a', 1)`);
    const dup = await database.db.execute(sql`insert into thread_t values ('a', 2)`).catch((e: Error) => e);
    const cause = (dup as Error & { cause?: unknown }).cause as Record<string, unknown>;
    expect(cause).toBeInstanceOf(messages.DatabaseError);
    expect(cause).toMatchObject({ code: '23505', constraint: 'thread_t_pkey', table: 'thread_t', severity: 'ERROR' });
    expect(String(cause.detail)).toContain('(id)=(a)');
    const check = await database.db
      .execute(sql`insert into thread_t values ('b', -1)`)
      .catch((e: Error & { cause?: { code?: string } }) => e.cause?.code);
    expect(check).toBe('23514');
    // the connection is usable after an error
    expect(await execRows(database.db, sql`select count(*)::int as n from thread_t`)).toEqual([{ n: 1 }]);
  });

  it('runs concurrent statements and transactions without interleaving them; a rolled-back transaction leaves nothing', async () => {
    const inserts = Array.from({ length: 40 }, (_, i) =>
      database.db.execute(sql`insert into thread_t values (${`c${i}`}, ${i})`),
    );
    const failed = database.db
      .transaction(async (tx) => {
        await tx.execute(sql`insert into thread_t values ('tx', 0)`);
        await new Promise((r) => setTimeout(r, 30)); // other callers wait, they do not land inside
        throw new Error('roll back');
      })
      .catch((e: Error) => e.message);
    const committed = database.db.transaction(async (tx) => {
      const [{ n }] = await execRows<{ n: number }>(tx, sql`select count(*)::int as n from thread_t`);
      await tx.execute(sql`insert into thread_t values ('count', ${n})`);
    });
    await Promise.all([...inserts, committed]);
    expect(await failed).toBe('roll back');
    const rows = await execRows<{ id: string; n: number }>(database.db, sql`select id, n from thread_t order by id`);
    expect(rows.map((r) => r.id)).not.toContain('tx');
    expect(rows.filter((r) => r.id.startsWith('c') && r.id !== 'count')).toHaveLength(40);
    // the transaction's count saw a whole state: 1 + the inserts that ran before it, never half of one
    const count = rows.find((r) => r.id === 'count')!.n;
    expect(count).toBeGreaterThanOrEqual(1);
    expect(count).toBeLessThanOrEqual(41);
  });

  it('reads the same types as in process (timestamps as text, jsonb, arrays, bigint as string)', async () => {
    const [row] = await execRows<Record<string, unknown>>(
      database.db,
      sql`select '2026-01-02T03:04:05.678Z'::timestamptz as at, '{"k":[1,2]}'::jsonb as doc, array['x','y, z']::text[] as tags, 9007199254740993::int8 as big, null::text as nothing`,
    );
    expect(row).toMatchObject({ doc: { k: [1, 2] }, tags: ['x', 'y, z'], nothing: null });
    expect(new Date(String(row!.at)).toISOString()).toBe('2026-01-02T03:04:05.678Z');
    expect(String(row!.big)).toBe('9007199254740993');
  });

  it('persists across a close and a reopen; a call after close rejects', async () => {
    await database.close();
    await expect(execRows(database.db, sql`select 1`)).rejects.toThrow();
    const again = await open('a');
    try {
      expect(await execRows(again.db, sql`select count(*)::int as n from thread_t`)).toEqual([{ n: 42 }]);
    } finally {
      await again.close();
    }
  });

  it('fails the open of a directory PGlite cannot use with an error instead of hanging', async () => {
    const file = path.join(root, 'not-a-dir');
    fs.writeFileSync(file, 'x');
    await expect(openPGliteThread({ dataDir: file, postgresqlconf: [] })).rejects.toThrow();
  });
});
