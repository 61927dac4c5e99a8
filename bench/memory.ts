/**
 * User-memory benchmark (issue 5 §3): `npm run bench:memory`.
 *
 * 1. Retrieval quality on the committed labelled set (bench/fixtures/memory-retrieval.json: 331
 *    memories, 67 paraphrased questions): recall@5 and MRR@10 of vector-only, full-text-only and
 *    hybrid search, through the service's own search (`searchMemories`, modes vector/text/hybrid).
 * 2. Scale on the pgvector path (PGlite): BENCH_SCALE_N (default 100,000) memories of one user,
 *    search p50/p95 (hybrid = what GET /memory/search does; vector arm alone) with the HNSW index,
 *    recall@10 of the index against exact search, for several `hnsw.ef_search` values. The loaded
 *    database is cached under data/bench/ (first run loads it and builds the index; later runs reuse it).
 * 3. The same on PostgreSQL's real[] path (exact cosine) at BENCH_PG_N (default 10,000) memories,
 *    when PostgreSQL is reachable (BENCH_PG_URL, default postgres://postgres@127.0.0.1:5432/memory_bench).
 * 4. Ingest rate (memories/s): the automatic-memory writer (embedding + batched insert, live index).
 *
 * The synthetic scale corpus (`synth`) varies ~30% of each labelled memory's words within its topic
 * (v2; the cache directory is named after it): the v1 corpus, 300 near-copies of each sentence,
 * measured HNSW on near-ties more than on a user's memories (docs/adr/0134-bench-memory-scale-corpus-v2-each-synthetic-memory-swaps-30.md).
 *
 * Environment: BENCH_ID_ORDERS (random id orders of the quality set, default 10), BENCH_SCALE_N, BENCH_PG_N, BENCH_QUERIES (default 200; at most 50 on the exact path),
 * BENCH_PG_URL, BENCH_SKIP_SCALE=1, BENCH_EF (hnsw.ef_search values, 0 = the service's default from the user's memory count; default 0,100,200,400,800,1000), BENCH_SHARED_BUFFERS (PGlite `shared_buffers` of the scale run;
 * default: the app's PGLITE_SHARED_BUFFERS default, `auto`, which sizes the buffers to the data directory at start-up).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import { buildApp, type BuiltApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import type { AppContext } from '../src/context.js';
import { execRows } from '../src/db/client.js';
import { newId } from '../src/http/ids.js';
import { embeddingProviderOf, rememberExecution, settleMemoryEmbeddings } from '../src/modules/memory/runtime.js';
import { searchMemories } from '../src/modules/memory/service.js';
import { benchQueries, synth } from './lib/memory-scale-corpus.js';
import {
  distance,
  HNSW_INDEX,
  insertMemoryRows,
  noteRow,
  type NewMemoryRow,
  type SearchMode,
} from '../src/modules/memory/store.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const data = JSON.parse(fs.readFileSync(path.join(here, 'fixtures/memory-retrieval.json'), 'utf8')) as {
  memories: Array<{ id: string; topic: string; content: string }>;
  queries: Array<{ id: string; topic: string; text: string; relevant: string[] }>;
};
const SCALE_N = Number(process.env.BENCH_SCALE_N ?? 100_000);
const PG_N = Number(process.env.BENCH_PG_N ?? 10_000);
const N_QUERIES = Number(process.env.BENCH_QUERIES ?? 200);
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/memory_bench';
const ID_ORDERS = Number(process.env.BENCH_ID_ORDERS ?? 10);
const EF_VALUES = (process.env.BENCH_EF ?? '0,100,200,400,800,1000').split(',').map(Number);
const started = performance.now();
const summary: Array<[string, string]> = [];

function log(s: string): void {
  process.stdout.write(`[${((performance.now() - started) / 1000).toFixed(0).padStart(4)} s] ${s}\n`);
}

function env(extra: Record<string, string | undefined>): Record<string, string | undefined> {
  // the local embedder unless BENCH_PROVIDER says otherwise: this bench's corpus and baselines were made with it
  return {
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
    RATE_LIMIT_USER: '1000000',
    EMBEDDINGS_PROVIDER: process.env.BENCH_PROVIDER ?? 'local',
    ...extra,
  };
}

async function newUser(ctx: AppContext): Promise<string> {
  const id = newId('usr');
  await ctx.db.execute(sql`insert into users (id, subject) values (${id}, ${`bench|${id}`})`);
  return id;
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}
const ms = (x: number) => `${x.toFixed(1)} ms`;

/** Load memories (embedded in batches) for `userId`; returns ids in order and the elapsed seconds. */
async function load(
  ctx: AppContext,
  userId: string,
  contents: string[],
  batch = 500,
  onProgress?: (n: number) => void,
): Promise<{ ids: string[]; seconds: number }> {
  const emb = embeddingProviderOf(ctx);
  const ids: string[] = [];
  const t0 = performance.now();
  for (let i = 0; i < contents.length; i += batch) {
    const chunk = contents.slice(i, i + batch);
    const rows: NewMemoryRow[] = chunk.map((content) => noteRow(userId, content));
    for (const r of rows) ids.push(r.id);
    await insertMemoryRows(ctx, ctx.db, rows, await emb.embed(chunk));
    onProgress?.(i + chunk.length);
  }
  return { ids, seconds: (performance.now() - t0) / 1000 };
}

// ------------------------------------------------------------------------------------- quality

type Acc = Record<'all' | 'dev' | 'test', [number, number, number]>;

/** recall@5 and MRR@10 sums of `mode` over the labelled queries; `idOf` maps memory ids to labels. */
async function evaluate(
  ctx: AppContext,
  userId: string,
  idOf: Map<string, string>,
  mode: SearchMode,
): Promise<{ acc: Acc; rankings: string[][] }> {
  const actor = { accountId: userId, agentId: null };
  const acc: Acc = { all: [0, 0, 0], dev: [0, 0, 0], test: [0, 0, 0] };
  const rankings: string[][] = [];
  for (let qi = 0; qi < data.queries.length; qi++) {
    const q = data.queries[qi];
    const r = await searchMemories(ctx, actor, { q: q.text, limit: 10, mode });
    const ranked = r.data.map((h) => idOf.get(h.id)!);
    rankings.push(ranked);
    const rel = new Set(q.relevant);
    const recall = ranked.slice(0, 5).filter((id) => rel.has(id)).length / rel.size;
    const first = ranked.findIndex((id) => rel.has(id));
    const rr = first >= 0 ? 1 / (first + 1) : 0;
    for (const k of ['all', qi % 2 === 0 ? 'dev' : 'test'] as const) {
      acc[k][0] += recall;
      acc[k][1] += rr;
      acc[k][2] += 1;
    }
  }
  return { acc, rankings };
}

/** Give the labelled memories the (time-sorted) ids `sorted` in the order `order` (dataset positions). */
async function assignIds(ctx: AppContext, current: string[], sorted: string[], order: number[]): Promise<string[]> {
  const next = new Array<string>(current.length);
  order.forEach((pos, j) => (next[pos] = sorted[j]));
  await ctx.db.transaction(async (tx) => {
    for (let i = 0; i < current.length; i++)
      await tx.execute(sql`update memories set id = ${`tmp_${i}`} where id = ${current[i]}`);
    for (let i = 0; i < current.length; i++)
      await tx.execute(sql`update memories set id = ${next[i]} where id = ${`tmp_${i}`}`);
  });
  return next;
}

/**
 * recall@5 and MRR@10 of each mode on the labelled set: over all queries, and over its two halves
 * (even positions: the dev half the fusion weights were chosen on; odd positions: held out). Ids
 * follow the dataset order, so ties (equal rank scores) break the same way on every run and engine.
 * With `idOrders` > 0 it also reports the mean over that many random id orders (seeded): the text
 * arm leaves many memories tied, and which of them a tie-break by id puts first is luck.
 */
async function quality(ctx: AppContext, label: string, idOrders = 0): Promise<Record<SearchMode, string[][]>> {
  const userId = await newUser(ctx);
  const { ids: loaded } = await load(
    ctx,
    userId,
    data.memories.map((m) => m.content),
  );
  const sorted = [...loaded].sort();
  const identity = data.memories.map((_, i) => i);
  let ids = await assignIds(ctx, loaded, sorted, identity);
  const labelsOf = (xs: string[]) => new Map(xs.map((id, i) => [id, data.memories[i].id]));
  const out = {} as Record<SearchMode, string[][]>;
  const f = (a: number[]) => `${(a[0] / a[2]).toFixed(3)}  ${(a[1] / a[2]).toFixed(3)}`;
  const table = (rows: Array<[SearchMode, Acc]>) =>
    [`  ${'mode'.padEnd(7)} ${'all: recall@5  MRR@10'.padEnd(24)} ${'dev half'.padEnd(14)} held-out half`]
      .concat(rows.map(([mode, a]) => `  ${mode.padEnd(7)} ${f(a.all).padEnd(24)} ${f(a.dev).padEnd(14)} ${f(a.test)}`))
      .join('\n');
  const modes = ['vector', 'text', 'hybrid'] as const;
  const rows: Array<[SearchMode, Acc]> = [];
  for (const mode of modes) {
    const { acc, rankings } = await evaluate(ctx, userId, labelsOf(ids), mode);
    out[mode] = rankings;
    rows.push([mode, acc]);
    summary.push([`quality ${label} ${mode} (recall@5, MRR@10: all | held-out)`, `${f(acc.all)} | ${f(acc.test)}`]);
  }
  log(`retrieval quality (${label}; ${data.memories.length} memories, ${data.queries.length} queries)\n${table(rows)}`);
  if (idOrders > 0) {
    let s = 987654321;
    const rnd = () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 4294967296;
    const sums = new Map<SearchMode, Acc>(modes.map((m) => [m, { all: [0, 0, 0], dev: [0, 0, 0], test: [0, 0, 0] }]));
    for (let r = 0; r < idOrders; r++) {
      const order = [...identity];
      for (let i = order.length - 1; i > 0; i--) {
        const j = Math.floor(rnd() * (i + 1));
        [order[i], order[j]] = [order[j], order[i]];
      }
      ids = await assignIds(ctx, ids, sorted, order);
      for (const mode of modes) {
        const { acc } = await evaluate(ctx, userId, labelsOf(ids), mode);
        const sum = sums.get(mode)!;
        for (const k of ['all', 'dev', 'test'] as const) for (let x = 0; x < 3; x++) sum[k][x] += acc[k][x];
      }
    }
    const mean = modes.map((m) => [m, sums.get(m)!] as [SearchMode, Acc]);
    log(`retrieval quality (${label}), mean over ${idOrders} random id orders\n${table(mean)}`);
    for (const [mode, a] of mean)
      summary.push([
        `quality ${label} ${mode}, mean of ${idOrders} id orders (all | held-out)`,
        `${f(a.all)} | ${f(a.test)}`,
      ]);
  }
  return out;
}

interface ScaleResult {
  hybrid: { p50: number; p95: number };
  vector: Array<{ ef: string; p50: number; p95: number; recall: number; hybridP50: number; hybridP95: number }>;
}

/** Exact top-k of the vector arm (no index: the planner scans the user's rows and sorts): ids and distances. */
async function exactTopK(
  ctx: AppContext,
  userId: string,
  q: string,
  k: number,
): Promise<Array<{ id: string; d: number }>> {
  const [v] = await embeddingProviderOf(ctx).embed([q]);
  return ctx.db.transaction(async (tx) => {
    await tx.execute(
      sql`select set_config('enable_indexscan', 'off', true), set_config('enable_bitmapscan', 'on', true), set_config('jit', 'off', true)`,
    );
    const dist = distance(ctx, v);
    const rows = await execRows<{ id: string; d: number }>(
      tx,
      sql`select id, ${dist} as d from memories where user_id = ${userId} and embedding is not null order by ${dist}, id limit ${k}::int`,
    );
    return rows.map((r) => ({ id: r.id, d: Number(r.d) }));
  });
}

async function scale(
  ctx: AppContext,
  userId: string,
  label: string,
  efValues: number[],
  nQueries = N_QUERIES,
): Promise<ScaleResult> {
  const actor = { accountId: userId, agentId: null };
  const queries = benchQueries(nQueries);
  // warm-up: one pass over the query set, so the latencies are those of a running server whose
  // index pages are cached (the first queries after a start read the index from disk)
  for (const q of queries) await searchMemories(ctx, actor, { q, limit: 10 });
  const hyb: number[] = [];
  for (const q of queries) {
    const t0 = performance.now();
    await searchMemories(ctx, actor, { q, limit: 10 });
    hyb.push(performance.now() - t0);
  }
  log(
    `${label}: hybrid search (GET /memory/search path) p50 ${ms(pct(hyb, 50))}, p95 ${ms(pct(hyb, 95))} over ${queries.length} queries`,
  );
  // recall@10 with ties: a returned memory counts when it is no farther than the 10th exact
  // neighbour (duplicates make "which of the equally near memories" arbitrary)
  const exact: Array<Array<{ id: string; d: number }>> = [];
  for (const q of queries) exact.push(await exactTopK(ctx, userId, q, 10));
  const vector: ScaleResult['vector'] = [];
  const m = ctx.config.memory as { hnswEfSearch: number; hnswEfSearchMax: number };
  const defaults = { ...m };
  const nOf = await execRows<{ n: number }>(ctx.db, sql`select n from memory_doc_counts where user_id = ${userId}`);
  const autoEf = Math.max(
    defaults.hnswEfSearch,
    Math.min(defaults.hnswEfSearchMax, Math.ceil(Number(nOf[0]?.n ?? 0) / 100)),
  );
  for (const ef of efValues) {
    // 0: the service's default (ef_search from the user's memory count); else that ef_search exactly
    Object.assign(m, ef === 0 ? defaults : { hnswEfSearch: ef, hnswEfSearchMax: ef });
    const lat: number[] = [];
    let hit = 0;
    let total = 0;
    for (let i = 0; i < queries.length; i++) {
      const t0 = performance.now();
      const r = await searchMemories(ctx, actor, { q: queries[i], limit: 10, mode: 'vector' });
      lat.push(performance.now() - t0);
      const truth = exact[i];
      const kth = truth[truth.length - 1]?.d ?? Infinity;
      hit += r.data
        .slice(0, truth.length)
        .filter((h) => 1 - h.similarity <= kth + 2e-6 || truth.some((t) => t.id === h.id)).length;
      total += truth.length;
    }
    const hl: number[] = [];
    for (const q of queries) {
      const t0 = performance.now();
      await searchMemories(ctx, actor, { q, limit: 10 });
      hl.push(performance.now() - t0);
    }
    vector.push({
      ef: ef === 0 ? `auto (${autoEf})` : String(ef),
      p50: pct(lat, 50),
      p95: pct(lat, 95),
      recall: hit / total,
      hybridP50: pct(hl, 50),
      hybridP95: pct(hl, 95),
    });
    log(
      `${label}: vector arm${efValues.length > 1 ? ` ef_search=${ef === 0 ? `auto (${autoEf})` : ef}` : ''}: p50 ${ms(pct(lat, 50))}, p95 ${ms(pct(lat, 95))}, recall@10 vs exact ${(hit / total).toFixed(3)}; ` +
        `hybrid p50 ${ms(pct(hl, 50))}, p95 ${ms(pct(hl, 95))}`,
    );
  }
  Object.assign(m, defaults);
  return { hybrid: { p50: pct(hyb, 50), p95: pct(hyb, 95) }, vector };
}

/** Ingest through the automatic-memory writer and its embedding back-fill (what executions do): memories/s. */
async function ingest(ctx: AppContext, userId: string, n: number): Promise<number> {
  const contents = synth(n + 7).slice(7);
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    rememberExecution(ctx, {
      executionId: newId('exe'),
      userId,
      sessionId: 'ses_bench',
      agentId: null,
      serviceId: 'svc_bench',
      serviceName: 'bench',
      toolId: 'tool_bench',
      toolName: 'note',
      arguments: { text: contents[i] },
      status: 'succeeded',
      httpStatus: 200,
      output: { ok: true },
      error: null,
      durationMs: 5,
    });
  }
  // stored at once without a vector, embedded by the back-fill (issue 18 §1): both are timed
  await settleMemoryEmbeddings(ctx);
  return n / ((performance.now() - t0) / 1000);
}

// ----------------------------------------------------------------------------------------- main

async function pgliteScale(): Promise<void> {
  const dir = path.resolve(here, `../data/bench/memory-pglite-v2-${SCALE_N}`); // v2: topic-word variants (synth)
  const buffers = process.env.BENCH_SHARED_BUFFERS;
  const open = () => buildApp(loadConfig(env({ DATA_DIR: dir, PGLITE_SHARED_BUFFERS: buffers })));
  if (!fs.existsSync(path.join(dir, 'ready'))) {
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(dir, { recursive: true });
    const { ctx, app } = await open();
    try {
      log(`pgvector path (PGlite): loading ${SCALE_N} memories of one user into ${dir} (first run; cached afterwards)`);
      const userId = await newUser(ctx);
      fs.writeFileSync(path.join(dir, 'user'), userId);
      await ctx.db.execute(sql`drop index if exists memories_embedding_hnsw_idx`);
      const { seconds } = await load(ctx, userId, synth(SCALE_N), 1000, (n) => n % 20000 === 0 && log(`  loaded ${n}`));
      log(`  bulk load (no index): ${seconds.toFixed(1)} s = ${(SCALE_N / seconds).toFixed(0)} memories/s`);
      const t0 = performance.now();
      await ctx.db.execute(sql`set maintenance_work_mem = '1GB'`);
      await ctx.db.execute(HNSW_INDEX);
      const build = (performance.now() - t0) / 1000;
      await ctx.db.execute(sql`analyze memories`);
      log(`  HNSW index build (m=32, ef_construction=200): ${build.toFixed(1)} s`);
      summary.push([`pgvector ${SCALE_N}: bulk load + index build`, `${seconds.toFixed(0)} s + ${build.toFixed(0)} s`]);
      fs.writeFileSync(path.join(dir, 'ready'), new Date().toISOString());
    } finally {
      await app.close(); // reopened below, as a restarted server would (the `auto` buffers follow the data)
    }
  }
  const built: BuiltApp = await open();
  const { ctx } = built;
  const [{ shared_buffers: sb }] = await execRows<{ shared_buffers: string }>(ctx.db, sql`show shared_buffers`);
  log(
    `pgvector path (PGlite): reusing ${SCALE_N} cached memories in ${dir}; shared_buffers = ${sb} (PGLITE_SHARED_BUFFERS=${ctx.config.pgliteSharedBuffers})`,
  );
  try {
    const userId = fs.readFileSync(path.join(dir, 'user'), 'utf8');
    const [size] = await execRows<{ index: string; heap: string }>(
      ctx.db,
      sql`select pg_size_pretty(pg_relation_size('memories_embedding_hnsw_idx')) as index, pg_size_pretty(pg_total_relation_size('memories')) as heap`,
    );
    log(`  HNSW index ${size.index}; memories table with indexes and TOAST ${size.heap}`);
    const r = await scale(ctx, userId, `pgvector/HNSW @ ${SCALE_N} (shared_buffers ${sb})`, EF_VALUES);
    summary.push([
      `pgvector ${SCALE_N} (shared_buffers ${sb}): hybrid search p50 / p95`,
      `${ms(r.hybrid.p50)} / ${ms(r.hybrid.p95)}`,
    ]);
    for (const v of r.vector) {
      summary.push([
        `pgvector ${SCALE_N}: ef_search=${v.ef} vector arm p50 / p95 / recall@10 | hybrid p50 / p95`,
        `${ms(v.p50)} / ${ms(v.p95)} / ${v.recall.toFixed(3)} | ${ms(v.hybridP50)} / ${ms(v.hybridP95)}`,
      ]);
    }
    const other = await newUser(ctx);
    const rate = await ingest(ctx, other, 2000);
    await ctx.db.execute(sql`delete from memories where user_id = ${other}`);
    log(
      `pgvector path: ingest via the automatic-memory writer (live HNSW index over ${SCALE_N}): ${rate.toFixed(0)} memories/s`,
    );
    summary.push([`pgvector ${SCALE_N}: ingest (writer, live HNSW)`, `${rate.toFixed(0)} memories/s`]);
  } finally {
    await built.app.close();
  }
}

async function postgresPath(): Promise<Record<SearchMode, string[][]> | null> {
  const { default: pg } = await import('pg');
  const admin = new pg.Client({ connectionString: PG_URL.replace(/\/[^/]+$/, '/postgres') });
  try {
    await admin.connect();
  } catch (err) {
    log(`PostgreSQL not reachable at ${PG_URL} (${(err as Error).message}); skipping the real[] path`);
    return null;
  }
  const dbName = new URL(PG_URL).pathname.slice(1);
  await admin.query(`drop database if exists "${dbName}" with (force)`);
  await admin.query(`create database "${dbName}"`);
  await admin.end();
  const built = await buildApp(loadConfig(env({ DATABASE_URL: PG_URL })));
  const { ctx } = built;
  try {
    log(
      `real[] path (PostgreSQL ${ctx.database.hasVector ? 'WITH pgvector?!' : 'without pgvector'}): quality set, then ${PG_N} memories`,
    );
    const q = await quality(ctx, 'PostgreSQL real[]');
    const userId = await newUser(ctx);
    const { seconds } = await load(ctx, userId, synth(PG_N), 1000);
    // a settled table, as on a running server: otherwise autovacuum's pass over the fresh rows
    // competes with the timed queries for this machine's two cores
    await ctx.db.execute(sql`vacuum (analyze) memories`);
    log(`  bulk load: ${seconds.toFixed(1)} s = ${(PG_N / seconds).toFixed(0)} memories/s`);
    // exact search scans every row of the user: fewer queries keep the run short
    const r = await scale(ctx, userId, `real[]/exact @ ${PG_N}`, [0], Math.min(N_QUERIES, 50));
    summary.push([`real[] ${PG_N}: hybrid search p50 / p95`, `${ms(r.hybrid.p50)} / ${ms(r.hybrid.p95)}`]);
    summary.push([
      `real[] ${PG_N}: vector arm p50 / p95 / recall@10`,
      `${ms(r.vector[0].p50)} / ${ms(r.vector[0].p95)} / ${r.vector[0].recall.toFixed(3)}`,
    ]);
    const other = await newUser(ctx);
    const rate = await ingest(ctx, other, 2000);
    log(`real[] path: ingest via the automatic-memory writer: ${rate.toFixed(0)} memories/s`);
    summary.push([`real[] ${PG_N}: ingest (writer)`, `${rate.toFixed(0)} memories/s`]);
    return q;
  } finally {
    await built.app.close();
  }
}

async function main(): Promise<void> {
  const mem = await buildApp(loadConfig(env({ DATABASE_IN_MEMORY: 'on' })));
  let pgliteRankings: Record<SearchMode, string[][]>;
  try {
    pgliteRankings = await quality(mem.ctx, 'PGlite pgvector', ID_ORDERS);
  } finally {
    await mem.app.close();
  }
  const pgRankings = await postgresPath();
  if (pgRankings) {
    const same = (['vector', 'text', 'hybrid'] as const).every(
      (m) => JSON.stringify(pgRankings[m]) === JSON.stringify(pgliteRankings[m]),
    );
    log(
      `same top-10 rankings on both storage paths for all ${data.queries.length} queries × 3 modes: ${same ? 'yes' : 'NO'}`,
    );
    summary.push(['both paths: identical rankings on the quality set', same ? 'yes' : 'NO']);
  }
  if (process.env.BENCH_SKIP_SCALE !== '1') await pgliteScale();

  const w = Math.max(...summary.map(([k]) => k.length));
  process.stdout.write(
    `\n${'='.repeat(w + 30)}\nmemory benchmark summary (${((performance.now() - started) / 1000).toFixed(0)} s)\n${'-'.repeat(w + 30)}\n`,
  );
  for (const [k, v] of summary) process.stdout.write(`${k.padEnd(w)}  ${v}\n`);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
