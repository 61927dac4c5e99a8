/**
 * Where the time of one memory search goes at scale (issue 21): `npx tsx bench/memory-profile.ts`.
 *
 * One user holds the conversation turns of bench/fixtures/memory-conversations.txt (stored through
 * `addMemory`, in sessions) plus variants of them up to BENCH_SCALE_N (default 10,000) memories,
 * embedded by the provider under test (BENCH_PROVIDER: `sentence-encoder`, the default, or `local`;
 * the encoder's vectors of the variants are cached under data/bench/, embedding 10k texts takes
 * minutes here). Then every question of the set is searched BENCH_ROUNDS (2) times: each stage of
 * the default path alone (the query's embedding in the worker, the query-terms statement, the
 * in-process text arm and vector arm, the fused candidates, the turn re-ranking with the index's
 * facts, the page's 10 rows read by id — and every fused candidate's, as the search did before),
 * the stages of the SQL statement (the path before the text index, and PostgreSQL's), the whole
 * default search with the query's vector already in the query LRU (all but the embedding), and the
 * whole `searchMemories` (what `GET /memory/search` runs) on each path, interleaved per question
 * with the order alternating. BENCH_SQL_PATH=1 adds the vector arm in SQL (HNSW). BENCH_DATABASE_URL:
 * PostgreSQL instead of in-memory PGlite (only the SQL paths exist there). Prints p50/p95 per stage
 * with the load average, then one JSON line (`{"bench":"memory-profile",…}`).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { newId } from '../src/http/ids.js';
import { embeddingProviderOf } from '../src/modules/memory/runtime.js';
import { addMemory, searchMemories } from '../src/modules/memory/service.js';
import {
  CANDIDATE_COLUMNS,
  fusedCandidates,
  HNSW_INDEX,
  insertMemoryRows,
  noteRow,
  queryTerms,
  SAFE_LEXEME,
  withSearchSettings,
  type NewMemoryRow,
} from '../src/modules/memory/store.js';
import { inProcessCandidates, pageOf } from '../src/modules/memory/search-in-process.js';
import { flatOrOperands } from '../src/modules/memory/text-index.js';
import { rowFacts } from '../src/modules/memory/turn-facts.js';
import { rankCandidates } from '../src/modules/memory/ranking.js';
import { createSession } from '../src/modules/sessions/service.js';
import { loadConversations, synthTurns } from './memory-conversations.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const N = Number(process.env.BENCH_SCALE_N ?? 10_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const PROVIDER = process.env.BENCH_PROVIDER ?? 'sentence-encoder';
/** Also time both arms in SQL (HNSW; slow with 512-d vectors): BENCH_SQL_PATH=1. */
const SQL_PATH = process.env.BENCH_SQL_PATH === '1';

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

/** Vectors of `texts` by `embed`, cached in `file` (float32, little-endian, `dims` per text). */
async function cachedVectors(
  file: string,
  texts: string[],
  dims: number,
  embed: (t: string[]) => Promise<Float32Array[]>,
): Promise<Float32Array[]> {
  if (fs.existsSync(file)) {
    const buf = fs.readFileSync(file);
    const all = new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4);
    if (all.length === texts.length * dims) return texts.map((_, i) => all.slice(i * dims, (i + 1) * dims));
  }
  const out: Float32Array[] = [];
  for (let i = 0; i < texts.length; i += 256) out.push(...(await embed(texts.slice(i, i + 256))));
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const all = new Float32Array(texts.length * dims);
  out.forEach((v, i) => all.set(v, i * dims));
  fs.writeFileSync(file, Buffer.from(all.buffer));
  return out;
}

async function main(): Promise<void> {
  const { turns, questions } = loadConversations();
  const env = {
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
    ...(process.env.BENCH_DATABASE_URL
      ? { DATABASE_URL: process.env.BENCH_DATABASE_URL, MEMORY_REEMBED: 'on' }
      : { DATABASE_IN_MEMORY: 'on' }),
    EMBEDDINGS_PROVIDER: PROVIDER,
  };
  const app = await buildApp(loadConfig(env));
  const { ctx } = app;
  try {
    const userId = newId('usr');
    await ctx.db.execute(sql`insert into users (id, subject) values (${userId}, ${`bench|${userId}`})`);
    const actor = { accountId: userId, agentId: null };
    const sessionOf = new Map<string, string>();
    for (const t of turns) {
      const s = `${t.conv}-s${t.session}`;
      if (!sessionOf.has(s)) sessionOf.set(s, (await createSession(ctx, actor, { name: s })).id);
      await addMemory(ctx, actor, {
        content: t.text,
        session_id: sessionOf.get(s),
        metadata: { speaker: t.speaker, occurred_at: t.at },
      });
    }
    const emb = embeddingProviderOf(ctx);
    const texts = synthTurns(turns, Math.max(0, N - turns.length));
    const t0 = performance.now();
    const vectors = await cachedVectors(
      path.resolve(here, `../data/bench/memory-profile-${emb.model}-${texts.length}.f32`),
      texts,
      emb.dimensions,
      (t) => emb.embed(t),
    );
    process.stdout.write(
      `variants embedded (or read from the cache) in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`,
    );
    // bulk load without the HNSW index, then build it (inserting into a live index is ~10x slower)
    if (ctx.database.hasVector) await ctx.db.execute(sql`drop index if exists memories_embedding_hnsw_idx`);
    for (let i = 0; i < texts.length; i += 500) {
      const rows: NewMemoryRow[] = texts
        .slice(i, i + 500)
        .map((content, j) => noteRow(userId, content, { metadata: { speaker: (i + j) % 2 ? 'Alex' : 'Sam' } }));
      await insertMemoryRows(ctx, ctx.db, rows, vectors.slice(i, i + 500));
    }
    if (ctx.database.hasVector) await ctx.db.execute(HNSW_INDEX);
    await ctx.db.execute(sql`vacuum (analyze) memories`);
    process.stdout.write(`${N} memories loaded and indexed in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
    const times = new Map<string, number[]>();
    const time = async <T>(stage: string, fn: () => Promise<T>): Promise<T> => {
      const t = performance.now();
      const r = await fn();
      if (!times.has(stage)) times.set(stage, []);
      times.get(stage)!.push(performance.now() - t);
      return r;
    };
    const where = sql`user_id = ${userId}`;
    const rt = ctx.memory!;
    const { vectors: cache, text } = rt;
    const warm = (await emb.embed(['warm up'], { query: true }))[0];
    if (cache) await cache.nearest(ctx.db, userId, warm, 50); // loads the user's vectors once
    const tLoad = performance.now();
    if (text)
      await text.search(ctx.db, userId, {
        terms: [],
        items: [],
        pool: 50,
        expectedCount: (await queryTerms(ctx.db, userId, 'warm up')).docs,
      });
    if (text)
      process.stdout.write(`text index of ${N} memories loaded in ${(performance.now() - tLoad).toFixed(0)} ms\n`);
    // a whole search as GET /memory/search runs it, paying the query embedding
    // and the CPU it costs the process (every thread: the query's embedding in the worker included),
    // a figure the machine's load inflates less than the wall time
    const search = async (stage: string, q: string) => {
      rt.queryVectors.clear();
      const cpu = process.cpuUsage();
      const r = await time(stage, () => searchMemories(ctx, actor, { q, limit: 10 }));
      const used = process.cpuUsage(cpu);
      const key = `CPU ms: ${stage}`;
      if (!times.has(key)) times.set(key, []);
      times.get(key)!.push((used.user + used.system) / 1000);
      return r;
    };
    // the paths compared (same data, same questions, interleaved, the order alternating per question):
    // default = both arms in process (PGlite); before = text arm in SQL, vector arm in process (the
    // search before the text index); sql = both arms in SQL (HNSW), as on PostgreSQL with pgvector
    const paths: Array<[string, () => void, () => void]> = [
      ['searchMemories (default)', () => undefined, () => undefined],
      ['searchMemories (before: SQL text arm)', () => void (rt.text = null), () => void (rt.text = text)],
      ...(SQL_PATH
        ? [
            [
              'searchMemories (both arms in SQL)',
              () => void ((rt.text = null), (rt.vectors = null)),
              () => void ((rt.text = text), (rt.vectors = cache)),
            ] as [string, () => void, () => void],
          ]
        : []),
    ];
    let turn = 0;
    for (let round = 0; round < ROUNDS; round++) {
      for (const q of questions) {
        // stages of the default path, one by one
        const [vector] = await time('embed (query, worker)', () => emb.embed([q.text], { query: true }));
        const qt = await time('query terms (SQL)', () => queryTerms(ctx.db, userId, q.text));
        if (text) {
          const items = flatOrOperands(qt.tsquery) ?? [];
          const terms = qt.terms
            .filter((w) => SAFE_LEXEME.test(w.lexeme))
            .map((w) => ({ lexeme: w.lexeme, micro: Math.round(Number(w.idf.toFixed(6)) * 1e6) }));
          await time('text arm (index)', () =>
            text.search(ctx.db, userId, { terms, items, pool: 50, expectedCount: qt.docs }),
          );
        }
        if (cache) await time('vector arm (in process)', () => cache.nearest(ctx.db, userId, vector, 50));
        if (cache && text) {
          const fused = await time('in-process candidates', () =>
            inProcessCandidates(ctx, ctx.db, {
              userId,
              agentId: null,
              kinds: ~0,
              where,
              query: q.text,
              vector: Promise.resolve(vector),
              pool: 50,
              mode: 'hybrid',
              text,
              vectors: cache,
            }),
          );
          if (fused) {
            const facts = text.facts(
              userId,
              fused.hits.map((h) => h.id),
            );
            const ranked = await time('rerank (index facts, neighbours)', () =>
              rankCandidates(ctx, ctx.db, userId, q.text, fused.hits, {
                mode: 'hybrid',
                where,
                facts: (c) => facts!.get(c.id)!,
                neighbours: (ids) => text.neighbours(userId, ids),
              }),
            );
            // the rows a search reads now (the page's) and before (every fused candidate's), same statement
            const rows = (ids: string[]) =>
              ctx.db.execute(
                sql`select m.id, ${CANDIDATE_COLUMNS} from memories m where m.id = any(${`{${ids.join(',')}}`}::text[]) and user_id = ${userId}`,
              );
            await time('page rows (SQL, 10 by id)', () => rows(pageOf(ranked, 0, 10).top.map((c) => c.id)));
            await time("every candidate's rows (SQL, before)", () => rows(fused.hits.map((h) => h.id)));
          }
        }
        // stages of the SQL statement (the path before, and PostgreSQL's)
        await time('settings transaction', () => withSearchSettings(ctx, userId, async () => null));
        await withSearchSettings(ctx, userId, async (tx) => {
          if (SQL_PATH)
            await time('vector arm (SQL, HNSW)', () =>
              fusedCandidates(ctx, tx, { userId, where, query: q.text, vector, pool: 50, mode: 'vector' }),
            );
          await time('text arm (SQL)', () =>
            fusedCandidates(ctx, tx, { userId, where, query: q.text, vector, pool: 50, mode: 'text' }),
          );
          const vectorHits = cache ? await cache.nearest(tx, userId, vector, 50) : undefined;
          const fused = await time('fused statement (SQL text arm)', () =>
            fusedCandidates(ctx, tx, { userId, where, query: q.text, vector, pool: 50, mode: 'hybrid', vectorHits }),
          );
          await time('rerank (SQL neighbours)', () =>
            rankCandidates(ctx, tx, userId, q.text, fused, { mode: 'hybrid', where, facts: (c) => rowFacts(c.row) }),
          );
        });
        // the default path without the query's embedding (its vector from the query LRU): what a
        // search costs besides the encoder, which the machine's load inflates most
        rt.queryVectors.set(q.text, vector);
        await time('searchMemories (default, query vector cached)', () =>
          searchMemories(ctx, actor, { q: q.text, limit: 10 }),
        );
        const order = turn++ % 2 ? [...paths].reverse() : paths;
        for (const [stage, on, off] of order) {
          on();
          try {
            await search(stage, q.text);
          } finally {
            off();
          }
        }
      }
    }
    const load = os.loadavg().map((x) => Number(x.toFixed(2)));
    process.stdout.write(
      `${PROVIDER} on ${ctx.database.engine} @ ${N} memories, ${questions.length} questions × ${ROUNDS} rounds, load ${load.join(' ')}\n`,
    );
    const result: Record<string, { p50: number; p95: number }> = {};
    for (const [s, xs] of times) {
      result[s] = { p50: Number(pct(xs, 50).toFixed(2)), p95: Number(pct(xs, 95).toFixed(2)) };
      process.stdout.write(
        `  ${s.padEnd(40)} p50 ${pct(xs, 50).toFixed(1).padStart(6)} ms  p95 ${pct(xs, 95).toFixed(1).padStart(6)} ms\n`,
      );
    }
    process.stdout.write(
      `${JSON.stringify({ bench: 'memory-profile', provider: PROVIDER, engine: ctx.database.engine, n: N, questions: questions.length, rounds: ROUNDS, load, at: new Date().toISOString(), stages: result })}\n`,
    );
  } finally {
    await app.app.close();
  }
}

await main();
