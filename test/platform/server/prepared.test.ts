/**
 * Named prepared statements (`db/prepared.ts`, and on PGlite `db/pglite-prepared.ts`): parameters
 * and rows read as through drizzle, errors keep their SQLSTATE, and on PGlite a run waits for a
 * transaction in progress instead of landing inside it. Runs on PGlite — in memory on this thread,
 * and on disk on its own thread (db/pglite-thread.ts) — or on PostgreSQL with TEST_DATABASE_URL.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { execRows, openDatabase, type Database } from '../../../src/db/client.js';
import { prepareRaw } from '../../../src/db/prepared.js';

const engines: Array<{ name: string; env: Record<string, string> }> = process.env.TEST_DATABASE_URL
  ? [{ name: 'postgres', env: { DATABASE_URL: process.env.TEST_DATABASE_URL } }]
  : [
      { name: 'pglite in memory', env: { DATABASE_IN_MEMORY: 'on' } },
      { name: 'pglite on disk, own thread', env: { DATABASE_IN_MEMORY: 'off', PGLITE_THREAD: 'on' } },
    ];

describe.each(engines)('prepared statements ($name)', ({ env }) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-prepared-'));
  let database!: Database;
  const table = `prepared_test_${process.pid}_${Date.now().toString(36)}`;
  beforeAll(async () => {
    database = await openDatabase(loadConfig({ NODE_ENV: 'test', DATA_DIR: dir, ...env }));
    await database.db.execute(
      sql.raw(`create table ${table} (id text primary key, n int not null, tags text[], doc jsonb, at timestamptz)`),
    );
  });

  afterAll(async () => {
    await database?.db.execute(sql.raw(`drop table if exists ${table}`));
    await database?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const insert = () =>
    prepareRaw<{ id: string; n: number; tags: string[] | null; doc: unknown; at: string | null; total: string }>(
      database.db,
      `test_insert_${table}`,
      () => sql`insert into ${sql.raw(table)} (id, n, tags, doc, at)
                values (${sql.placeholder('id')}, ${sql.placeholder('n')}::int, ${sql.placeholder('tags')}::text[], ${sql.placeholder('doc')}::jsonb, ${sql.placeholder('at')}::timestamptz)
                returning id, n, tags, doc, at, (select count(*) from ${sql.raw(table)}) as total`,
    );

  it('binds text, integers, arrays, JSON and nulls, and reads rows as drizzle does', async () => {
    const a = await insert().run({
      id: 'a',
      n: 7,
      tags: ['x', 'y, z', 'q"uote'],
      doc: JSON.stringify({ k: [1, 2] }),
      at: '2026-01-02T03:04:05.678Z',
    });
    expect(a).toHaveLength(1);
    expect(a[0]).toMatchObject({ id: 'a', n: 7, tags: ['x', 'y, z', 'q"uote'], doc: { k: [1, 2] } });
    // timestamps stay PostgreSQL's text, as drizzle's raw rows give them on both engines
    expect(new Date(String(a[0]!.at)).toISOString()).toBe('2026-01-02T03:04:05.678Z');
    const b = await insert().run({ id: 'b', n: -1, tags: null, doc: null, at: null });
    expect(b[0]).toMatchObject({ id: 'b', n: -1, tags: null, doc: null, at: null });
    expect(insert()).toBe(insert()); // one statement per name and handle
    const [{ n }] = await execRows<{ n: string }>(database.db, sql.raw(`select count(*) as n from ${table}`));
    expect(Number(n)).toBe(2);
  });

  it('keeps the SQLSTATE of a failing run, and the statement still runs afterwards', async () => {
    await expect(insert().run({ id: 'a', n: 1, tags: null, doc: null, at: null })).rejects.toMatchObject({
      cause: { code: '23505' },
    });
    const c = await insert().run({ id: 'c', n: 3, tags: [], doc: '[]', at: null });
    expect(c[0]).toMatchObject({ id: 'c', n: 3, tags: [], doc: [] });
  });

  it('waits for a transaction in progress instead of running inside it', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    const tx = database.db
      .transaction(async (t) => {
        await t.execute(sql.raw(`insert into ${table} (id, n) values ('tx', 0)`));
        entered();
        await held;
        throw new Error('roll back');
      })
      .catch((err: Error) => err.message);
    await inside;
    const run = insert().run({ id: 'outside', n: 5, tags: null, doc: null, at: null });
    await new Promise((r) => setTimeout(r, 50));
    release();
    expect(await tx).toBe('roll back');
    expect((await run)[0]).toMatchObject({ id: 'outside', n: 5 });
    const ids = await execRows<{ id: string }>(database.db, sql.raw(`select id from ${table} order by id`));
    // the transaction's row is gone, the prepared statement's row was not rolled back with it
    expect(ids.map((r) => r.id)).toEqual(['a', 'b', 'c', 'outside']);
  });
});
