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
import { newId } from '../../../src/http/ids.js';
import { embeddingProviderOf, initMemory, searchMemories } from '../../../src/modules/memory/service.js';
import { insertMemoryRows, type NewMemoryRow } from '../../../src/modules/memory/store.js';
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
  const database: Database = { db, engine: 'pglite', hasVector: false, ping: async () => undefined, close: () => client.close() };
  afterAll(() => client.close());
  return { ...ctx, database, db, onClose: [] };
}

describe('memory storage paths', () => {
  it('pgvector/HNSW and real[]/exact return the same hits for the same data', { timeout: 90_000 }, async () => {
    const exact = await plainPglite();
    await initMemory(exact);
    const col = await exact.db.execute(sql`select format_type(atttypid, atttypmod) as t from pg_attribute where attrelid = 'memories'::regclass and attname = 'embedding'`);
    expect((col as unknown as { rows: Array<{ t: string }> }).rows[0].t).toBe('real[]');

    const u = await createUser(app);
    await exact.db.execute(sql`insert into users (id, subject) values (${u.userId}, ${u.subject})`);
    // every third memory (110) and the questions about them: enough near-duplicates to catch a
    // difference in ranking, small enough for the exact path of a WASM engine
    const subset = data.memories.filter((_, i) => i % 3 === 0);
    const rows: NewMemoryRow[] = subset.map((m) => ({
      id: newId('mem'), userId: u.userId, sessionId: null, agentId: null, serviceId: null, toolId: null, executionId: null,
      source: 'explicit', content: m.content, metadata: { ref: m.id },
    }));
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
      const shape = (r: typeof a) => r.data.map((h) => [h.id, h.score, h.vector_rank, h.text_rank]);
      expect(shape(a), q.text).toEqual(shape(b));
      a.data.forEach((h, i) => expect(h.similarity).toBeCloseTo(b.data[i].similarity, 5));
      compared += a.data.length;
    }
    expect(compared).toBe(queries.length * 10);
  });
});
