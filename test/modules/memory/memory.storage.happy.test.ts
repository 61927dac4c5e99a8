/**
 * Both storage paths give the same hits for the same data: the app's database (PGlite with
 * pgvector + HNSW, or PostgreSQL 15 with real[] under TEST_DATABASE_URL) against a second PGlite
 * without the vector extension (the real[] path with exact cosine), loaded with the same rows
 * (same ids) from the committed benchmark set, queried with its 67 paraphrased questions.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/pglite';
import { migrate } from 'drizzle-orm/pglite/migrator';
import { afterAll, describe, expect, it } from 'vitest';
import type { AppContext } from '../../../src/context.js';
import type { Database, Db } from '../../../src/db/client.js';
import * as schema from '../../../src/db/schema/index.js';
import { embeddingProviderOf, initMemory } from '../../../src/modules/memory/runtime.js';
import { searchMemories } from '../../../src/modules/memory/service.js';
import { dot } from '../../../src/modules/memory/embeddings.js';
import {
  exactCosineDistance,
  insertMemoryRows,
  noteRow,
  type NewMemoryRow,
} from '../../../src/modules/memory/store.js';
import { execRows } from '../../../src/db/client.js';
import { createUser, setupApp } from '../../helpers/app.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const data = JSON.parse(fs.readFileSync(path.join(here, '../../../bench/fixtures/memory-retrieval.json'), 'utf8')) as {
  memories: Array<{ id: string; content: string }>;
  queries: Array<{ id: string; text: string; relevant: string[] }>;
};

const { app, ctx } = await setupApp();

async function plainPglite(): Promise<AppContext> {
  const client = await PGlite.create('memory://'); // no extensions: no pgvector
  const db = drizzle({ client, schema }) as unknown as Db;
  await migrate(drizzle({ client }), { migrationsFolder: path.join(here, '../../../src/db/migrations') });
  const database: Database = {
    db,
    hotDb: db,
    engine: 'pglite',
    hasVector: false,
    ping: async () => undefined,
    close: () => client.close(),
  };
  afterAll(() => client.close());
  return { ...ctx, database, db, onClose: [], memory: undefined };
}

describe('memory storage paths', () => {
  it('pgvector/HNSW and real[]/exact return the same hits for the same data', { timeout: 90_000 }, async () => {
    const exact = await plainPglite();
    await initMemory(exact);
    const col = await exact.db.execute(
      sql`select format_type(atttypid, atttypmod) as t from pg_attribute where attrelid = 'memories'::regclass and attname = 'embedding'`,
    );
    expect((col as unknown as { rows: Array<{ t: string }> }).rows[0].t).toBe('real[]');

    const u = await createUser(app);
    await exact.db.execute(sql`insert into users (id, subject) values (${u.userId}, ${u.subject})`);
    // every third memory (110) and the questions about them: enough near-duplicates to catch a
    // difference in ranking, small enough for the exact path of a WASM engine
    const subset = data.memories.filter((_, i) => i % 3 === 0);
    const rows: NewMemoryRow[] = subset.map((m) => noteRow(u.userId, m.content, { metadata: { ref: m.id } }));
    const vectors = await embeddingProviderOf(ctx).embed(rows.map((r) => r.content));
    for (let i = 0; i < rows.length; i += 100) {
      await insertMemoryRows(ctx, ctx.db, rows.slice(i, i + 100), vectors.slice(i, i + 100));
      await insertMemoryRows(exact, exact.db, rows.slice(i, i + 100), vectors.slice(i, i + 100));
    }
    const actor = { accountId: u.userId, agentId: null };
    let compared = 0;
    const kept = new Set(subset.map((m) => m.id));
    const queries = data.queries.filter((q) => q.relevant.some((id) => kept.has(id))).slice(0, 12);
    for (const q of queries) {
      // hybrid answers carry each hit's rank in the vector and the text arm: equal answers mean
      // equal fused order and equal order inside both arms
      const a = await searchMemories(ctx, actor, { q: q.text, limit: 10 });
      const b = await searchMemories(exact, actor, { q: q.text, limit: 10 });
      const shape = (r: typeof a) => r.data.map((h) => [h.id, h.vector_rank, h.text_rank]);
      expect(shape(a), q.text).toEqual(shape(b));
      a.data.forEach((h, i) => expect(h.similarity).toBeCloseTo(b.data[i].similarity, 5));
      // the score weighs in the similarity and the best text score of the candidates, which on
      // PostgreSQL (HNSW pool) may hold a slightly different best: the same order, scores within 0.01
      a.data.forEach((h, i) => expect(h.score).toBeCloseTo(b.data[i].score, 2));
      compared += a.data.length;
    }
    expect(compared).toBe(queries.length * 10);
  });

  it('real[] path: vectors stay inline and uncompressed, and the exact distance is 1 - dot product', {
    timeout: 60_000,
  }, async () => {
    const exact = await plainPglite();
    await initMemory(exact);
    const u = await createUser(app);
    await exact.db.execute(sql`insert into users (id, subject) values (${u.userId}, ${u.subject})`);
    // long contents: rows well past the 2 KB at which PostgreSQL would compress the array by default
    const contents = data.memories
      .slice(0, 40)
      .map((m, i) => `${m.content} ${data.memories[(i + 7) % data.memories.length].content.repeat(6)}`);
    const rows: NewMemoryRow[] = contents.map((content) => noteRow(u.userId, content));
    const emb = embeddingProviderOf(exact);
    const vectors = await emb.embed(contents);
    await insertMemoryRows(exact, exact.db, rows, vectors);
    const [storage] = await execRows<{ s: string }>(
      exact.db,
      sql`select attstorage as s from pg_attribute where attrelid = 'memories'::regclass and attname = 'embedding'`,
    );
    expect(storage.s).toBe('m');
    const sizes = await execRows<{ n: number }>(
      exact.db,
      sql`select pg_column_size(embedding) as n from memories where user_id = ${u.userId}`,
    );
    // 24-byte array header + 4 bytes per component: not compressed
    expect(sizes.map((r) => Number(r.n))).toEqual(rows.map(() => 24 + 4 * emb.dimensions));

    const [q] = await emb.embed(['which flights to Lisbon did I compare last week?']);
    const got = await execRows<{ id: string; d: number | string }>(
      exact.db,
      sql`select id, ${exactCosineDistance(sql`embedding`, q)} as d from memories where user_id = ${u.userId} order by id`,
    );
    const byId = new Map(rows.map((r, i) => [r.id, vectors[i]]));
    expect(got).toHaveLength(rows.length);
    for (const r of got) expect(Number(r.d)).toBeCloseTo(1 - dot(q, byId.get(r.id)!), 6);
    // a vector of another length (a stale embedding space) has no distance rather than a wrong one
    const [short] = await execRows<{ d: unknown }>(
      exact.db,
      sql`select ${exactCosineDistance(sql`'{0.6,0.8}'::real[]`, q)} as d`,
    );
    expect(short.d).toBeNull();
  });
});
