/**
 * Memory search on real conversations: `npm run bench:memory-locomo`.
 *
 * Data: LoCoMo conversations (Maharana et al., ACL 2024), one JSON file per conversation, read from
 * `LOCOMO_DIR` or `../shared/data/locomo-dev` beside the repository (never copied into it: the
 * licence allows evaluation only). Without that folder the bench says so and exits 0.
 *
 * Method (the platform's default configuration: embedded engine, default embeddings provider):
 * every turn of every conversation is stored with `POST /memory` as `"Speaker: text"` plus
 * `metadata.session_time` (nothing else: no speaker field, no session), all under ONE user; every
 * question of categories 1–4 (multi-hop, temporal, open-domain, single-hop) is asked with
 * `GET /memory/search?limit=10`; a hit@k when an evidence turn is among the first k. Reported:
 * hit@1/5/10, MRR@10, per category and per conversation, search p50/p95, the add rate, and a
 * plain BM25 (k1 1.2, b 0.75, PostgreSQL's English lexemes of each turn) over the same turns in the
 * same run. Then search latency at ~6,000 memories of one user (the turns copied with their vectors
 * until there are BENCH_SCALE_N, default 6,000; 0 skips): every question asked first with the
 * query-vector cache emptied (the encoder runs), then again (vectors cached), with the process's CPU
 * time per search and the machine's load (a shared machine's load inflates the wall times).
 *
 * Tuning, leave-one-conversation-out: every combination of `GRID` (BENCH_GRID=small: each setting
 * alone, the others at their defaults) is scored on every conversation in the same run; the
 * combination chosen for conversation c is the best hit@5 on the other conversations, and c's
 * figure is its score on c. The default's figures and the held-out figures are printed side by
 * side. Then where a search's time goes (uncached questions): the query embedding alone, a
 * text-mode search (no embedding), a hybrid search.
 *
 * Environment: LOCOMO_DIR, BENCH_SCALE_N, BENCH_GRID=0|small, BENCH_PROFILE_N (150), BENCH_DATABASE_URL (PostgreSQL),
 * and any EMBEDDINGS_* / MEMORY_* variable (passed to the platform, e.g. EMBEDDINGS_PROVIDER=local).
 * Output: tables and one machine-readable JSON line (`{"bench":"memory-locomo",…}`).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import { execRows } from '../src/db/client.js';
import { insertMemoryRows, noteRow, type NewMemoryRow } from '../src/modules/memory/store.js';
import { embeddingProviderOf } from '../src/modules/memory/runtime.js';
import { benchUser, startBenchApp } from './lib/app.js';
import {
  bm25Ranker,
  locomoDir,
  loadLocomo,
  percentile,
  scoreRuns,
  type LocomoQuestion,
  type Scores,
} from './memory-locomo-lib.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const SCALE_N = Number(process.env.BENCH_SCALE_N ?? 6_000);
/** Questions timed by the latency profile (BENCH_PROFILE_N). */
const PROFILE_N = Number(process.env.BENCH_PROFILE_N ?? 150);
const started = performance.now();

function log(s: string): void {
  process.stdout.write(`[${((performance.now() - started) / 1000).toFixed(0).padStart(4)} s] ${s}\n`);
}

/**
 * Settings scored leave-one-conversation-out, jointly: name → values (`ctx.config.memory.fusion`
 * fields; the defaults are among them). BENCH_GRID=small scores one setting at a time instead.
 */
const GRID: Record<string, number[]> = {
  vectorWeight: [1, 2, 3],
  neighbourWeight: [0.25, 0.5, 0.75],
  timeBoost: [0.25, 0.5, 1],
  questionPenalty: [0, 0.25, 0.5],
};

const dir = locomoDir(path.resolve(here, '..'));
if (!dir) {
  console.log('bench:memory-locomo: no LoCoMo data (set LOCOMO_DIR or provide ../shared/data/locomo-dev); skipped.');
  process.exit(0);
}

const data = loadLocomo(dir);
const passEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => /^(EMBEDDINGS_|MEMORY_)/.test(k)));
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-locomo-'));
const { app, ctx, base } = await startBenchApp({
  DATABASE_IN_MEMORY: process.env.BENCH_DATABASE_URL ? 'on' : 'off',
  DATA_DIR: dataDir,
  ...passEnv,
});
log(
  `${data.turns.length} turns, ${data.questions.length} questions (categories 1-4) from ${data.conversations.join(', ')}; embeddings ${ctx.config.memory.embeddings.provider}; data ${dataDir}`,
);

const main = await benchUser(app, `locomo-${Date.now()}@bench.test`);
const http = (user: typeof main) => ({
  async post(body: unknown): Promise<{ id: string }> {
    const res = await fetch(`${base}/memory`, {
      method: 'POST',
      headers: { ...user.headers, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (res.status !== 201) throw new Error(`POST /memory ${res.status} ${await res.text()}`);
    return (await res.json()) as { id: string };
  },
  async search(q: string): Promise<{ ids: string[]; ms: number; scores: number[] }> {
    const t0 = performance.now();
    const res = await fetch(`${base}/memory/search?limit=10&q=${encodeURIComponent(q)}`, { headers: user.headers });
    const body = (await res.json()) as { data: Array<{ id: string; score: number }> };
    const ms = performance.now() - t0;
    if (res.status !== 200) throw new Error(`GET /memory/search ${res.status} ${JSON.stringify(body)}`);
    return { ids: body.data.map((d) => d.id), ms, scores: body.data.map((d) => d.score) };
  },
});

// ------------------------------------------------------------------------------------ store
const api = http(main);
const memOf = new Map<string, string>(); // turn key → memory id
const turnOf = new Map<string, string>();
const t0 = performance.now();
for (const t of data.turns) {
  const m = await api.post({ content: `${t.speaker}: ${t.text}`, metadata: { session_time: t.sessionTime } });
  memOf.set(t.key, m.id);
  turnOf.set(m.id, t.key);
}
const addSeconds = (performance.now() - t0) / 1000;
const addRate = data.turns.length / addSeconds;
log(
  `stored ${data.turns.length} turns in ${addSeconds.toFixed(1)} s: ${addRate.toFixed(1)} adds/s (one client, sequential)`,
);

// ------------------------------------------------------------------------------------ search
async function platformRun(qs: LocomoQuestion[]): Promise<{ ranked: string[][]; ms: number[] }> {
  const ranked: string[][] = [];
  const ms: number[] = [];
  for (const q of qs) {
    const r = await api.search(q.question);
    ranked.push(r.ids.map((id) => turnOf.get(id) ?? id));
    ms.push(r.ms);
  }
  return { ranked, ms };
}

await platformRun(data.questions.slice(0, 20)); // warm-up (query encoder, indexes)
const def = await platformRun(data.questions);
const defScores = scoreRuns(data.questions, def.ranked);
const bm25 = await bm25Ranker(ctx, data.turns);
const bmRanked: string[][] = [];
for (const q of data.questions) bmRanked.push(await bm25(q.question, 10));
const bmScores = scoreRuns(data.questions, bmRanked);

function table(rows: Array<[string, Scores]>): void {
  const cats = [1, 2, 3, 4];
  console.log(
    `\n| ranker | hit@1 | hit@5 | hit@10 | MRR@10 | ${cats.map((c) => `hit@5 c${c}`).join(' | ')} | ${data.conversations.map((c) => `hit@5 ${c}`).join(' | ')} |`,
  );
  console.log(
    `|---|---|---|---|---|${cats.map(() => '---|').join('')}${data.conversations.map(() => '---|').join('')}`,
  );
  for (const [name, s] of rows) {
    const f = (x: number | undefined) => (x === undefined ? '—' : x.toFixed(3));
    console.log(
      `| ${name} | ${f(s.hit1)} | ${f(s.hit5)} | ${f(s.hit10)} | ${f(s.mrr)} | ${cats.map((c) => f(s.byCategory[c]?.hit5)).join(' | ')} | ${data.conversations.map((c) => f(s.byConversation[c]?.hit5)).join(' | ')} |`,
    );
  }
}

const rows: Array<[string, Scores]> = [
  ['BM25 (same turns)', bmScores],
  ['platform default', defScores],
];

// ------------------------------------------------------------------------ leave-one-out grid
const heldOut: { chosen: Record<string, Record<string, number>>; scores: Scores } | null =
  process.env.BENCH_GRID === '0' ? null : await leaveOneOut();
if (heldOut)
  rows.push([
    `tuned, held out (${Object.entries(heldOut.chosen)
      .map(([c, v]) => `${c}: ${Object.values(v).join('/')}`)
      .join('; ')})`,
    heldOut.scores,
  ]);

/**
 * Every combination of {@link GRID} (or, with BENCH_GRID=small, each setting alone with the others
 * at their defaults) scored on all questions; for each conversation, the combination with the best
 * hit@5 on the OTHER conversations, and its answers on this one.
 */
async function leaveOneOut(): Promise<{ chosen: Record<string, Record<string, number>>; scores: Scores }> {
  const fusion = ctx.config.memory.fusion as unknown as Record<string, number>;
  const defaults = Object.fromEntries(
    Object.keys(GRID).map((k) => [k, k === 'vectorWeight' ? (ctx.memory?.vectorWeight ?? fusion[k]) : fusion[k]]),
  );
  let combos: Array<Record<string, number>> = [{}];
  if (process.env.BENCH_GRID === 'small')
    combos = Object.entries(GRID).flatMap(([k, vs]) => vs.map((v) => ({ ...defaults, [k]: v })));
  else for (const [k, vs] of Object.entries(GRID)) combos = combos.flatMap((c) => vs.map((v) => ({ ...c, [k]: v })));
  const seen = new Map<string, string[][]>();
  const apply = (c: Record<string, number>) => {
    Object.assign(fusion, c);
    if (ctx.memory) ctx.memory.vectorWeight = c.vectorWeight;
  };
  for (const c of combos) {
    const key = JSON.stringify(c);
    if (seen.has(key)) continue;
    apply(c);
    seen.set(key, (await platformRun(data.questions)).ranked);
    log(`${key}: hit@5 ${scoreRuns(data.questions, seen.get(key)!).hit5.toFixed(3)}`);
  }
  apply(defaults);
  const ranked: string[][] = data.questions.map(() => []);
  const chosen: Record<string, Record<string, number>> = {};
  for (const conv of data.conversations) {
    const train = data.questions.flatMap((q, i) => (q.conv !== conv ? [i] : []));
    let best = '';
    let bestHit = -1;
    for (const [key, r] of seen) {
      const h = scoreRuns(
        train.map((i) => data.questions[i]),
        train.map((i) => r[i]),
      ).hit5;
      if (h > bestHit) [best, bestHit] = [key, h];
    }
    chosen[conv] = JSON.parse(best);
    data.questions.forEach((q, i) => {
      if (q.conv === conv) ranked[i] = seen.get(best)![i];
    });
  }
  return { chosen, scores: scoreRuns(data.questions, ranked) };
}

// ------------------------------------------------------------------------ where the time goes
/**
 * Per question, uncached: the query's embedding alone (the provider, as `embedQuery` calls it), and
 * the whole search over HTTP in text mode (no embedding) and hybrid mode (the default).
 */
async function profile(): Promise<{ embed: number[]; text: number[]; hybrid: number[] }> {
  const out = { embed: [] as number[], text: [] as number[], hybrid: [] as number[] };
  const provider = embeddingProviderOf(ctx);
  for (const [i, q] of data.questions.slice(0, PROFILE_N).entries()) {
    const fresh = `${q.question} (${i})`; // not in the query-vector cache
    let t = performance.now();
    await provider.embed([fresh], { query: true });
    out.embed.push(performance.now() - t);
    t = performance.now();
    await fetch(`${base}/memory/search?limit=10&mode=text&q=${encodeURIComponent(fresh)}`, {
      headers: main.headers,
    }).then((r) => r.arrayBuffer());
    out.text.push(performance.now() - t);
    out.hybrid.push((await api.search(`${fresh}.`)).ms);
  }
  return out;
}
const prof = await profile();
table(rows);
console.log(
  `\nsearch latency (${data.turns.length} memories): p50 ${percentile(def.ms, 50).toFixed(1)} ms, p95 ${percentile(def.ms, 95).toFixed(1)} ms; add rate ${addRate.toFixed(1)}/s`,
);
console.log(
  `default / BM25 hit@5: ${(defScores.hit5 / bmScores.hit5).toFixed(3)}×${heldOut ? `; held out / BM25: ${(heldOut.scores.hit5 / bmScores.hit5).toFixed(3)}×` : ''}`,
);
const pct = (xs: number[]) => `p50 ${percentile(xs, 50).toFixed(1)} / p95 ${percentile(xs, 95).toFixed(1)} ms`;
if (PROFILE_N > 0)
  console.log(
    `where the time goes (${prof.embed.length} uncached queries): query embedding alone ${pct(prof.embed)}; search in text mode (no embedding) ${pct(prof.text)}; hybrid ${pct(prof.hybrid)}`,
  );

// ------------------------------------------------------------------------------ at scale
/** p50/p95 wall and CPU ms of one pass over the questions. */
type Latency = { p50: number; p95: number; cpu_p50: number; cpu_p95: number };
let scale: ({ n: number; cached: Latency; load: number[] } & Latency) | null = null;
if (SCALE_N > 0) {
  const big = await benchUser(app, `locomo-scale-${Date.now()}@bench.test`);
  const stored = await execRows<{ id: string; content: string; metadata: Record<string, unknown>; v: string | null }>(
    ctx.db,
    sql`select id, content, metadata, embedding::text as v from memories where user_id = ${main.userId} order by id`,
  );
  let n = 0;
  for (let copy = 0; n < SCALE_N; copy++) {
    const part = stored.slice(0, Math.min(stored.length, SCALE_N - n));
    const rowsIn: NewMemoryRow[] = part.map((r) =>
      noteRow(big.userId, r.content, { metadata: { ...r.metadata, copy } }),
    );
    const vectors = part.map((r) =>
      r.v
        ? Float32Array.from(
            r.v
              .replace(/[{}[\]]/g, '')
              .split(',')
              .map(Number),
          )
        : null,
    );
    for (let i = 0; i < rowsIn.length; i += 200)
      await insertMemoryRows(ctx, ctx.db, rowsIn.slice(i, i + 200), vectors.slice(i, i + 200));
    n += part.length;
  }
  const apiBig = http(big);
  for (const q of data.questions.slice(0, 20)) await apiBig.search(q.question); // loads the user's indexes
  // every question twice: first with the query-vector LRU emptied (each query embedded by the
  // encoder, as a question asked for the first time), then again (each vector from the LRU: the
  // search's own cost); the CPU of the process (all threads, the HTTP client's included) per search
  const pass = async () => {
    const ms: number[] = [];
    const cpu: number[] = [];
    for (const q of data.questions) {
      const c = process.cpuUsage();
      ms.push((await apiBig.search(q.question)).ms);
      const used = process.cpuUsage(c);
      cpu.push((used.user + used.system) / 1000);
    }
    return { ms, cpu };
  };
  const loadBefore = os.loadavg()[0];
  ctx.memory?.queryVectors.clear();
  const first = await pass();
  const again = await pass();
  const fig = (x: { ms: number[]; cpu: number[] }) => ({
    p50: percentile(x.ms, 50),
    p95: percentile(x.ms, 95),
    cpu_p50: percentile(x.cpu, 50),
    cpu_p95: percentile(x.cpu, 95),
  });
  scale = { n, ...fig(first), cached: fig(again), load: [loadBefore, os.loadavg()[0]] };
  const line = (f: ReturnType<typeof fig>) =>
    `p50 ${f.p50.toFixed(1)} ms, p95 ${f.p95.toFixed(1)} ms (CPU per search p50 ${f.cpu_p50.toFixed(1)} / p95 ${f.cpu_p95.toFixed(1)} ms)`;
  console.log(`search latency (${n} memories of one user), first ask (query embedded): ${line(scale)}`);
  console.log(`search latency (${n} memories of one user), asked again (query vector cached): ${line(scale.cached)}`);
  console.log(`machine load (1 min) ${scale.load.map((x) => x.toFixed(1)).join(' → ')}`);
}

console.log(
  JSON.stringify({
    bench: 'memory-locomo',
    provider: ctx.config.memory.embeddings.provider,
    turns: data.turns.length,
    questions: data.questions.length,
    bm25: bmScores,
    default: defScores,
    held_out: heldOut,
    profile:
      PROFILE_N > 0
        ? {
            embed_p95: percentile(prof.embed, 95),
            text_p95: percentile(prof.text, 95),
            hybrid_p95: percentile(prof.hybrid, 95),
          }
        : null,
    search_ms: { p50: percentile(def.ms, 50), p95: percentile(def.ms, 95) },
    scale,
    add_per_s: addRate,
  }),
);
await app.close();
fs.rmSync(dataDir, { recursive: true, force: true });
