/**
 * Where the time of one memory search goes at scale (issue 21): `npx tsx bench/memory-profile.ts`.
 *
 * One user holds the conversation turns of bench/fixtures/memory-conversations.txt (stored through
 * `addMemory`, in sessions) plus variants of them up to BENCH_SCALE_N (default 10,000) memories,
 * embedded by the provider under test (BENCH_PROVIDER: `local` or `sentence-encoder`; the encoder's
 * vectors of the variants are cached under data/bench/, embedding 10k texts takes minutes here).
 * Then every question of the set is searched BENCH_ROUNDS (2) times and each stage is timed
 * separately: embedding the query, the transaction with the HNSW settings, the vector arm alone, the
 * text arm alone, both fused, the turn re-ranking, and the whole `searchMemories` (what
 * `GET /memory/search` runs). Prints p50/p95 per stage with the load average.
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
import { distance, fusedCandidates, HNSW_INDEX, insertMemoryRows, withSearchSettings, type NewMemoryRow } from '../src/modules/memory/store.js';
import { rerankTurns } from '../src/modules/memory/turns.js';
import { createSession } from '../src/modules/sessions/service.js';
import { loadConversations, synthTurns } from './memory-conversations.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const N = Number(process.env.BENCH_SCALE_N ?? 10_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const PROVIDER = process.env.BENCH_PROVIDER ?? 'local';

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

/** Vectors of `texts` by `embed`, cached in `file` (float32, little-endian, `dims` per text). */
async function cachedVectors(file: string, texts: string[], dims: number, embed: (t: string[]) => Promise<Float32Array[]>): Promise<Float32Array[]> {
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
    NODE_ENV: 'test', LOG_LEVEL: 'silent', SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
    ...(process.env.BENCH_DATABASE_URL ? { DATABASE_URL: process.env.BENCH_DATABASE_URL, MEMORY_REEMBED: 'on' } : { DATABASE_IN_MEMORY: 'on' }),
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
      await addMemory(ctx, actor, { content: t.text, session_id: sessionOf.get(s), metadata: { speaker: t.speaker, occurred_at: t.at } });
    }
    const emb = embeddingProviderOf(ctx);
    const texts = synthTurns(turns, Math.max(0, N - turns.length));
    const t0 = performance.now();
    const vectors = await cachedVectors(path.resolve(here, `../data/bench/memory-profile-${emb.model}-${texts.length}.f32`), texts, emb.dimensions, (t) => emb.embed(t));
    process.stdout.write(`variants embedded (or read from the cache) in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
    // bulk load without the HNSW index, then build it (inserting into a live index is ~10x slower)
    if (ctx.database.hasVector) await ctx.db.execute(sql`drop index if exists memories_embedding_hnsw_idx`);
    for (let i = 0; i < texts.length; i += 500) {
      const rows: NewMemoryRow[] = texts.slice(i, i + 500).map((content, j) => ({
        id: newId('mem'), userId, sessionId: null, agentId: null, serviceId: null, toolId: null, executionId: null,
        source: 'explicit', content, metadata: { speaker: (i + j) % 2 ? 'Alex' : 'Sam' },
      }));
      await insertMemoryRows(ctx, ctx.db, rows, vectors.slice(i, i + 500));
    }
    if (ctx.database.hasVector) await ctx.db.execute(HNSW_INDEX);
    await ctx.db.execute(sql`vacuum (analyze) memories`);
    process.stdout.write(`${N} memories loaded and indexed in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
    const stages = ['embed', 'settings', 'vector arm', 'vector exact scan', 'vector in process', 'text arm', 'fused', 'rerank', 'searchMemories', 'searchMemories (SQL vector arm)'] as const;
    const times = new Map<string, number[]>(stages.map((s) => [s, []]));
    const time = async <T>(stage: string, fn: () => Promise<T>): Promise<T> => {
      const t = performance.now();
      const r = await fn();
      times.get(stage)!.push(performance.now() - t);
      return r;
    };
    const where = sql`user_id = ${userId}`;
    const cache = ctx.memory!.vectors;
    if (cache) await cache.nearest(ctx.db, userId, await emb.embed(['warm up']).then((v) => v[0]), 50); // loads the user's vectors once
    for (let round = 0; round < ROUNDS; round++) {
      for (const q of questions) {
        const [vector] = await time('embed', () => emb.embed([q.text]));
        await time('settings', () => withSearchSettings(ctx, userId, async () => null));
        await withSearchSettings(ctx, userId, async (tx) => {
          await time('vector arm', () => fusedCandidates(ctx, tx, { userId, where, query: q.text, vector, pool: 50, mode: 'vector' }));
          // the same arm without the index: an exact scan of the user's rows (the `+ 0` hides the order from the HNSW index)
          await time('vector exact scan', () => tx.execute(sql`select id from memories where ${where} and embedding is not null order by (${distance(ctx, vector)}) + 0 limit 50`));
          if (cache) await time('vector in process', () => cache.nearest(ctx.db, userId, vector, 50));
          await time('text arm', () => fusedCandidates(ctx, tx, { userId, where, query: q.text, vector, pool: 50, mode: 'text' }));
          const fused = await time('fused', () => fusedCandidates(ctx, tx, { userId, where, query: q.text, vector, pool: 50, mode: 'hybrid' }));
          await time('rerank', () => rerankTurns(ctx, tx, userId, q.text, fused));
        });
        ctx.memory!.queryVectors.clear(); // both searches pay the query embedding
        await time('searchMemories', () => searchMemories(ctx, actor, { q: q.text, limit: 10 }));
        // the same search with the vector arm in SQL (HNSW), as before the in-process arm
        ctx.memory!.vectors = null;
        ctx.memory!.queryVectors.clear();
        await time('searchMemories (SQL vector arm)', () => searchMemories(ctx, actor, { q: q.text, limit: 10 }));
        ctx.memory!.vectors = cache;
      }
    }
    process.stdout.write(`${PROVIDER} @ ${N} memories, ${questions.length} questions × ${ROUNDS} rounds, load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}\n`);
    for (const [s, xs] of times) if (xs.length) process.stdout.write(`  ${s.padEnd(16)} p50 ${pct(xs, 50).toFixed(1).padStart(6)} ms  p95 ${pct(xs, 95).toFixed(1).padStart(6)} ms\n`);
  } finally {
    await app.app.close();
  }
}

await main();
