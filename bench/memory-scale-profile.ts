/**
 * Where the time of one memory search goes at ~6,000 memories of one user, on real conversation
 * turns (issue 38's latency goal): `npx tsx bench/memory-scale-profile.ts`.
 *
 * Data: the LoCoMo turns bench/memory-locomo.ts reads (`LOCOMO_DIR` or `../shared/data/locomo-dev`;
 * skipped without them). The turns are embedded as `addMemory` embeds them (`"Speaker: text"` after
 * the previous turn, turns.ts) in batches by the configured provider, then stored for one user with
 * their vectors, copied until there are BENCH_SCALE_N (6,000) — the set-up of memory-locomo's
 * scale figure without its sequential adds. The platform runs in its default configuration
 * (embedded PGlite on disk, sentence encoder).
 *
 * Per question (BENCH_ROUNDS rounds, default 2, of its 383 questions; the query's vector already in
 * the query LRU, as memory-locomo's scale figure has it): the whole `GET /memory/search` over HTTP,
 * `searchMemories` called directly, and each stage alone — the query-terms statement (SQL), the
 * text arm (in-process index), the vector arm (SIMD scan), the fused candidates, the ranking, the
 * page's rows read by id. Then BENCH_UNCACHED (100) searches with a query the LRU does not hold (the
 * sentence encoder runs) and the encoder alone: over HTTP, and `searchMemories` directly followed
 * by the same query again (cached), so `uncached − cached` is what the embedding adds to the
 * critical path; the encoder's own stage times of each (`sentenceEncoderStats().lastJob`). Prints p50/p95 per stage with the load average,
 * then one JSON line (`{"bench":"memory-scale-profile",…}`).
 */
import fs from 'node:fs';
import inspector from 'node:inspector';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import { sentenceEncoderStats } from '../src/lib/sentence-encoder.js';
import { embeddingProviderOf, embedQuery } from '../src/modules/memory/runtime.js';
import { searchMemories } from '../src/modules/memory/service.js';
import { inProcessCandidates, pageOf } from '../src/modules/memory/search-in-process.js';
import { rankCandidates } from '../src/modules/memory/ranking.js';
import {
  CANDIDATE_COLUMNS,
  insertMemoryRows,
  noteRow,
  queryTerms,
  SAFE_LEXEME,
  type NewMemoryRow,
} from '../src/modules/memory/store.js';
import { flatOrOperands } from '../src/modules/memory/text-index.js';
import { embeddingText } from '../src/modules/memory/turns.js';
import { benchUser, startBenchApp } from './lib/app.js';
import { loadLocomo, locomoDir, percentile } from './memory-locomo-lib.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const N = Number(process.env.BENCH_SCALE_N ?? 6_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const UNCACHED = Number(process.env.BENCH_UNCACHED ?? 100);

const dir = locomoDir(path.resolve(here, '..'));
if (!dir) {
  console.log('memory-scale-profile: no LoCoMo data (set LOCOMO_DIR or provide ../shared/data/locomo-dev); skipped.');
  process.exit(0);
}
const data = loadLocomo(dir);
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-mem-scale-'));
const { app, ctx, base } = await startBenchApp({ DATABASE_IN_MEMORY: 'off', DATA_DIR: dataDir });
const user = await benchUser(app, `scale-${Date.now()}@bench.test`);
const emb = embeddingProviderOf(ctx);

// ------------------------------------------------------------------------------------ load
const t0 = performance.now();
const texts = data.turns.map((t, i) => {
  const prev = i > 0 ? data.turns[i - 1] : null;
  const content = `${t.speaker}: ${t.text}`;
  return embeddingText(content, {}, prev ? `${prev.speaker}: ${prev.text}` : null);
});
// the turns' vectors, cached outside the repository (derived from the data, which stays outside it)
const cacheFile = path.join(os.tmpdir(), `memory-scale-profile-${emb.model}-${texts.length}.f32`);
const vectors: Float32Array[] = [];
if (fs.existsSync(cacheFile)) {
  const buf = fs.readFileSync(cacheFile);
  const all = new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4);
  for (let i = 0; i < texts.length; i++) vectors.push(all.slice(i * emb.dimensions, (i + 1) * emb.dimensions));
} else {
  for (let i = 0; i < texts.length; i += 64) vectors.push(...(await emb.embed(texts.slice(i, i + 64))));
  const all = new Float32Array(texts.length * emb.dimensions);
  vectors.forEach((v, i) => all.set(v, i * emb.dimensions));
  fs.writeFileSync(cacheFile, Buffer.from(all.buffer));
}
let n = 0;
for (let copy = 0; n < N; copy++) {
  const part = data.turns.slice(0, Math.min(data.turns.length, N - n));
  const rows: NewMemoryRow[] = part.map((t) =>
    noteRow(user.userId, `${t.speaker}: ${t.text}`, { metadata: { session_time: t.sessionTime, copy } }),
  );
  for (let i = 0; i < rows.length; i += 200)
    await insertMemoryRows(ctx, ctx.db, rows.slice(i, i + 200), vectors.slice(i, i + 200));
  n += part.length;
}
console.log(`${n} memories of one user loaded in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

// ------------------------------------------------------------------------------------ time
const times = new Map<string, number[]>();
const push = (stage: string, x: number) => {
  if (!times.has(stage)) times.set(stage, []);
  times.get(stage)!.push(x);
};
/** Wall time of `fn` under `stage`; with `cpu`, also the process's CPU time (every thread) under `CPU: stage`. */
async function time<T>(stage: string, fn: () => Promise<T> | T, cpu = false): Promise<T> {
  const c = cpu ? process.cpuUsage() : null;
  const t = performance.now();
  const r = await fn();
  push(stage, performance.now() - t);
  if (c) {
    const used = process.cpuUsage(c);
    push(`CPU: ${stage}`, (used.user + used.system) / 1000);
  }
  return r;
}
const search = async (q: string) => {
  const res = await fetch(`${base}/memory/search?limit=10&q=${encodeURIComponent(q)}`, { headers: user.headers });
  if (res.status !== 200) throw new Error(`GET /memory/search ${res.status} ${await res.text()}`);
  return res.json();
};
const actor = { accountId: user.userId, agentId: null };
const rt = ctx.memory!;
const where = sql`m.user_id = ${user.userId}`;
for (const q of data.questions.slice(0, 20)) await search(q.question); // loads the indexes, warms the JIT
for (const q of data.questions) await embedQuery(ctx, q.question.trim()); // every question's vector in the LRU
const loadStart = os.loadavg()[0];
// BENCH_CPU_PROFILE=<file>: a V8 CPU profile of the timed searches only (open in Chrome DevTools)
const profiler = process.env.BENCH_CPU_PROFILE ? new inspector.Session() : null;
if (profiler) {
  profiler.connect();
  await new Promise((r) => profiler.post('Profiler.enable', () => profiler.post('Profiler.start', r)));
}
const HTTP_ONLY = process.env.BENCH_HTTP_ONLY === '1';
for (let round = 0; round < ROUNDS; round++) {
  for (const q of data.questions) {
    const text = q.question;
    await time('GET /memory/search (HTTP, query vector cached)', () => search(text), true);
    if (HTTP_ONLY) continue;
    await time('searchMemories (direct)', () => searchMemories(ctx, actor, { q: text, limit: 10 }), true);
    const vector = await time('embedQuery (LRU hit)', () => embedQuery(ctx, text));
    const qt = await time('query terms (SQL)', () => queryTerms(ctx.db, user.userId, text));
    const items = flatOrOperands(qt.tsquery) ?? [];
    const terms = qt.terms
      .filter((w) => SAFE_LEXEME.test(w.lexeme))
      .map((w) => ({ lexeme: w.lexeme, micro: Math.round(Number(w.idf.toFixed(6)) * 1e6) }));
    await time('text arm (index)', () =>
      rt.text!.search(ctx.db, user.userId, { terms, items, pool: 50, expectedCount: qt.docs, kinds: ~0 }),
    );
    await time('vector arm (scan)', () => rt.vectors!.nearest(ctx.db, user.userId, vector, 50, null, ~0));
    const fused = await time('in-process candidates (terms + arms + scores)', () =>
      inProcessCandidates(ctx, ctx.db, {
        userId: user.userId,
        agentId: null,
        kinds: ~0,
        where,
        query: text,
        vector: Promise.resolve(vector),
        pool: 50,
        mode: 'hybrid',
        text: rt.text!,
        vectors: rt.vectors!,
      }),
    );
    if (!fused) continue;
    const facts = rt.text!.facts(
      user.userId,
      fused.hits.map((h) => h.id),
    )!;
    const ranked = await time('ranking (facts, time, neighbours)', () =>
      rankCandidates(ctx, ctx.db, user.userId, text, fused.hits, {
        mode: 'hybrid',
        where,
        facts: (c) => facts.get(c.id)!,
        neighbours: (ids) => rt.text!.neighbours(user.userId, ids),
      }),
    );
    const ids = pageOf(ranked, 0, 10).top.map((c) => c.id);
    await time('page rows (SQL, 10 by id, unnamed statement)', () =>
      ctx.db.execute(
        sql`select m.id, null::float8 as distance, ${CANDIDATE_COLUMNS} from memories m where m.id = any(${`{${ids.join(',')}}`}::text[]) and ${where}`,
      ),
    );
  }
}
if (profiler) {
  const { profile } = await new Promise<{ profile: unknown }>((r, j) =>
    profiler.post('Profiler.stop', (err, res) => (err ? j(err) : r(res as { profile: unknown }))),
  );
  fs.writeFileSync(process.env.BENCH_CPU_PROFILE!, JSON.stringify(profile));
  profiler.disconnect();
}
/** The encoder's stage times of the call just answered (sentence encoder only), under `prefix`. */
const encoderStages = (prefix: string) => {
  const t = sentenceEncoderStats().lastJob;
  if (emb.provider !== 'sentence-encoder' || !t) return;
  push(`  ${prefix}: encoder round trip`, t.roundTrip);
  push(`  ${prefix}: encoder graph (in the worker)`, t.graph);
  push(`  ${prefix}: encoder tokens + queue + read + messages`, t.roundTrip - t.graph);
};
for (const [i, q] of data.questions.slice(0, UNCACHED).entries()) {
  const fresh = `${q.question} (${i})`;
  await time('query embedding alone (encoder, uncached)', () => emb.embed([fresh], { query: true }));
  await time('GET /memory/search (HTTP, uncached query)', () => search(`${fresh}.`), true);
  encoderStages('HTTP uncached');
  // the same search in the service, then again with the vector cached: the difference is what
  // the embedding adds to the critical path (it overlaps the flush, the query terms and the text arm)
  await time('searchMemories (direct, uncached query)', () =>
    searchMemories(ctx, actor, { q: `${fresh}!`, limit: 10 }),
  );
  encoderStages('direct uncached');
  await time('searchMemories (direct, same query cached)', () =>
    searchMemories(ctx, actor, { q: `${fresh}!`, limit: 10 }),
  );
}
const load = [loadStart, ...os.loadavg()].map((x) => Number(x.toFixed(2)));
console.log(
  `${emb.provider} on ${ctx.database.engine} @ ${n} memories, ${data.questions.length} questions × ${ROUNDS}, load (start; 1/5/15 min at end) ${load.join(' ')}`,
);
const result: Record<string, { p50: number; p95: number }> = {};
for (const [s, xs] of times) {
  result[s] = { p50: Number(percentile(xs, 50).toFixed(2)), p95: Number(percentile(xs, 95).toFixed(2)) };
  console.log(
    `  ${s.padEnd(50)} p50 ${percentile(xs, 50).toFixed(2).padStart(7)} ms  p95 ${percentile(xs, 95).toFixed(2).padStart(7)} ms`,
  );
}
console.log(
  JSON.stringify({
    bench: 'memory-scale-profile',
    n,
    rounds: ROUNDS,
    load,
    at: new Date().toISOString(),
    stages: result,
  }),
);
await app.close();
fs.rmSync(dataDir, { recursive: true, force: true });
