/**
 * Retrieval on long multi-session conversations (issue 21): `npm run bench:memory-conversations`.
 *
 * Data: bench/fixtures/memory-conversations.txt (4 conversations between two people, 6 dated
 * sessions each, every turn labelled with its speaker) and memory-conversations.questions.txt
 * (paraphrased questions of four kinds — paraphrase, people, when, multi-hop — each labelled with the
 * turn(s) that answer it; the 1st, 3rd… question of each conversation is the dev half, the others
 * are held out). Every turn is stored as one memory of ONE user through the service's `addMemory`
 * (what `POST /memory` runs), with a session per conversation session and metadata
 * `{speaker, conversation, occurred_at}`; questions go through `searchMemories` (what
 * `GET /memory/search?limit=10` runs). A hit is a labelled turn in the top 5.
 *
 * Rankers compared on the same turns: a textbook BM25 (k1 1.2, b 0.75, over PostgreSQL's English
 * lexemes of each turn — the yardstick), the service's modes (text, vector, hybrid) and offline
 * variants re-ranking the service's hybrid candidates (speaker match, neighbouring turns, Universal
 * Sentence Encoder Lite as a third reciprocal-rank arm). Then search p95 with BENCH_SCALE_N (10,000)
 * memories of the user (the conversations plus variants of their turns).
 *
 * Environment: BENCH_QUALITY=0 (latency only), BENCH_DATABASE_URL (PostgreSQL instead of in-memory PGlite), BENCH_SCALE_N (0 skips
 * the latency part), BENCH_ENCODER=0 (skip the sentence-encoder variants), BENCH_EMBEDDINGS_URL (+
 * BENCH_EMBEDDINGS_MODEL, BENCH_EMBEDDINGS_DIMENSIONS, BENCH_EMBEDDINGS_API_KEY): also measure an
 * OpenAI-compatible embeddings server, the production option.
 * Output: a table per ranker and one machine-readable JSON line (`{"bench":"memory-conversations",…}`).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import type { AppContext } from '../src/context.js';
import { execRows } from '../src/db/client.js';
import { newId } from '../src/http/ids.js';
import { l2normalize, LocalHashEmbedder } from '../src/modules/memory/embeddings.js';
import { embeddingProviderOf } from '../src/modules/memory/runtime.js';
import { insertMemoryRows, noteRow, type NewMemoryRow, type SearchMode } from '../src/modules/memory/store.js';
import { addMemory, searchMemories } from '../src/modules/memory/service.js';
import { createSession } from '../src/modules/sessions/service.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const SCALE_N = Number(process.env.BENCH_SCALE_N ?? 10_000);
const USE_ENCODER = process.env.BENCH_ENCODER !== '0';
const QUALITY = process.env.BENCH_QUALITY !== '0';
const started = performance.now();

function log(s: string): void {
  process.stdout.write(`[${((performance.now() - started) / 1000).toFixed(0).padStart(4)} s] ${s}\n`);
}

// ---------------------------------------------------------------------------------------- data

/** One turn of a conversation. */
export interface Turn {
  key: string;
  conv: string;
  session: number;
  index: number;
  speaker: string;
  text: string;
  at: string;
  tag?: string;
}

/** One labelled question. */
export interface Question {
  conv: string;
  kind: 'para' | 'people' | 'when' | 'multi';
  text: string;
  answers: string[];
  half: 'dev' | 'held-out';
}

/** Parse the two fixture files (format in their headers). */
export function loadConversations(dir = path.join(here, 'fixtures')): { turns: Turn[]; questions: Question[] } {
  const turns: Turn[] = [];
  let conv = '';
  let session = 0;
  let at = '';
  let index = 0;
  for (const raw of fs.readFileSync(path.join(dir, 'memory-conversations.txt'), 'utf8').split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    let m: RegExpMatchArray | null;
    if ((m = line.match(/^= conv (\S+)/))) [conv, session] = [m[1], 0];
    else if ((m = line.match(/^== (\S+)/))) [at, session, index] = [m[1], session + 1, 0];
    else if ((m = line.match(/^([^:]+): (.*?)(?:\s*\{#([\w-]+)\})?$/))) {
      index++;
      turns.push({
        key: `${conv}-s${session}-t${index}`,
        conv,
        session,
        index,
        speaker: m[1],
        text: m[2],
        at,
        tag: m[3] ? `${conv}#${m[3]}` : undefined,
      });
    } else throw new Error(`memory-conversations.txt: cannot parse "${line}"`);
  }
  const byTag = new Map(turns.filter((t) => t.tag).map((t) => [t.tag!, t.key]));
  const questions: Question[] = [];
  const seen = new Map<string, number>();
  for (const raw of fs.readFileSync(path.join(dir, 'memory-conversations.questions.txt'), 'utf8').split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const [c, kind, text, tags] = line.split('|').map((s) => s.trim());
    const answers = tags.split(/\s+/).map((t) => {
      const key = byTag.get(`${c}${t}`);
      if (!key) throw new Error(`unknown tag ${c}${t}`);
      return key;
    });
    const n = seen.get(c) ?? 0;
    seen.set(c, n + 1);
    questions.push({ conv: c, kind: kind as Question['kind'], text, answers, half: n % 2 === 0 ? 'dev' : 'held-out' });
  }
  return { turns, questions };
}

// --------------------------------------------------------------------------------------- BM25

/** Lexeme → term frequency of each text, from PostgreSQL's `to_tsvector('english', …)`. */
async function lexemes(ctx: AppContext, texts: string[]): Promise<Array<Map<string, number>>> {
  const rows = await execRows<{ i: number; v: string }>(
    ctx.db,
    sql`select i, to_tsvector('english', t)::text as v from json_array_elements_text(${JSON.stringify(texts)}::json) with ordinality as x(t, i) order by i`,
  );
  return rows.map((r) => {
    const m = new Map<string, number>();
    for (const [, lex, pos] of r.v.matchAll(/'((?:[^']|'')+)'(?::([\d,ABCD]+))?/g))
      m.set(lex.replaceAll("''", "'"), pos ? pos.split(',').length : 1);
    return m;
  });
}

/** Textbook Okapi BM25 (Robertson & Zaragoza 2009, k1 1.2, b 0.75): scores of every document for `q`. */
function bm25(docs: Array<Map<string, number>>, q: Map<string, number>, k1 = 1.2, b = 0.75): number[] {
  const n = docs.length;
  const len = docs.map((d) => [...d.values()].reduce((a, x) => a + x, 0));
  const avg = len.reduce((a, x) => a + x, 0) / n;
  const df = new Map<string, number>();
  for (const d of docs) for (const t of d.keys()) df.set(t, (df.get(t) ?? 0) + 1);
  return docs.map((d, i) => {
    let s = 0;
    for (const t of q.keys()) {
      const tf = d.get(t);
      if (!tf) continue;
      const f = df.get(t)!;
      s += Math.log(1 + (n - f + 0.5) / (f + 0.5)) * ((tf * (k1 + 1)) / (tf + k1 * (1 - b + (b * len[i]) / avg)));
    }
    return s;
  });
}

// ------------------------------------------------------------------------------------ scoring

type Ranking = string[]; // turn keys, best first

/** Top-5 hit rate (a labelled turn in the top 5) per half, per kind and overall. */
function hitRates(questions: Question[], rankings: Ranking[]): Record<string, number> {
  const acc = new Map<string, [number, number]>();
  questions.forEach((q, i) => {
    const hit = rankings[i].slice(0, 5).some((k) => q.answers.includes(k)) ? 1 : 0;
    for (const key of ['all', q.half, `${q.half}:${q.kind}`]) {
      const a = acc.get(key) ?? [0, 0];
      acc.set(key, [a[0] + hit, a[1] + 1]);
    }
  });
  return Object.fromEntries([...acc].map(([k, [h, n]]) => [k, Number((h / n).toFixed(3))]));
}

/** Keys of `scores` (a key → score map), best first; ties keep `order`. */
function rankBy(scores: Map<string, number>, order: string[]): Ranking {
  const pos = new Map(order.map((k, i) => [k, i]));
  return [...scores.keys()].sort(
    (a, b) => scores.get(b)! - scores.get(a)! || (pos.get(a) ?? 1e9) - (pos.get(b) ?? 1e9),
  );
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

// --------------------------------------------------------------------------------------- main

interface Run {
  label: string;
  app: Awaited<ReturnType<typeof buildApp>>;
  ctx: AppContext;
  userId: string;
  keyOf: Map<string, string>;
}

/** A fresh app (`extraEnv`) with every turn stored through `addMemory`; speaker metadata unless `speakers` is false. */
async function loadRun(
  label: string,
  turns: Turn[],
  extraEnv: Record<string, string>,
  speakers: boolean,
): Promise<Run> {
  const env = {
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
    ...(process.env.BENCH_DATABASE_URL
      ? { DATABASE_URL: process.env.BENCH_DATABASE_URL, MEMORY_REEMBED: 'on' }
      : { DATABASE_IN_MEMORY: 'on' }),
    ...extraEnv,
  };
  const app = await buildApp(loadConfig(env));
  const { ctx } = app;
  const userId = newId('usr');
  await ctx.db.execute(sql`insert into users (id, subject) values (${userId}, ${`bench|${userId}`})`);
  const actor = { accountId: userId, agentId: null };
  const sessionOf = new Map<string, string>();
  const keyOf = new Map<string, string>();
  const t0 = performance.now();
  for (const t of turns) {
    const s = `${t.conv}-s${t.session}`;
    if (!sessionOf.has(s)) sessionOf.set(s, (await createSession(ctx, actor, { name: s })).id);
    const metadata = speakers
      ? { speaker: t.speaker, conversation: t.conv, occurred_at: t.at }
      : { conversation: t.conv, occurred_at: t.at };
    const m = await addMemory(ctx, actor, {
      content: t.text,
      session_id: sessionOf.get(s),
      metadata,
      occurred_at: t.at,
    });
    keyOf.set(m.id, t.key);
  }
  log(
    `${label}: stored ${turns.length} turns (${sessionOf.size} sessions) through addMemory in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
  return { label, app, ctx, userId, keyOf };
}

async function rank(run: Run, questions: Question[], mode: SearchMode = 'hybrid'): Promise<Ranking[]> {
  const out: Ranking[] = [];
  for (const q of questions)
    out.push(
      (
        await searchMemories(run.ctx, { accountId: run.userId, agentId: null }, { q: q.text, limit: 10, mode })
      ).data.map((h) => run.keyOf.get(h.id)!),
    );
  return out;
}

/** Deterministic variants of the turns (~30 % of the words swapped for other words of the set). */
export function synthTurns(turns: Turn[], n: number): string[] {
  let seed = 42;
  const rnd = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296;
  const vocab = [...new Set(turns.flatMap((t) => t.text.match(/[A-Za-z]{3,}/g) ?? []))];
  return Array.from({ length: n }, () => {
    const t = turns[Math.floor(rnd() * turns.length)];
    return t.text.replace(/[A-Za-z]{3,}/g, (w) => (rnd() < 0.3 ? vocab[Math.floor(rnd() * vocab.length)] : w));
  });
}

/** Fill `run`'s user up to SCALE_N memories (turn-like, in sessions of 16, with speakers); `vectors` maps texts to vectors. */
async function fill(run: Run, turns: Turn[], vectors: (texts: string[]) => Promise<Float32Array[]>): Promise<void> {
  const texts = synthTurns(turns, Math.max(0, SCALE_N - turns.length));
  for (let i = 0; i < texts.length; i += 500) {
    const chunk = texts.slice(i, i + 500);
    const rows: NewMemoryRow[] = chunk.map((content, j) =>
      noteRow(run.userId, content, {
        metadata: { speaker: (i + j) % 2 ? 'Alex' : 'Sam', conversation: `synthetic-${Math.floor((i + j) / 16)}` },
      }),
    );
    await insertMemoryRows(run.ctx, run.ctx.db, rows, await vectors(chunk));
  }
  await run.ctx.db.execute(sql`vacuum (analyze) memories`);
}

async function main(): Promise<void> {
  const { turns, questions } = loadConversations();
  const results: Record<string, Record<string, number>> = {};
  const extra: Record<string, unknown> = {};
  const rankings: Record<string, Ranking[]> = {};
  const order = turns.map((t) => t.key);
  const runs: Run[] = [];
  try {
    // before: the turns without speaker metadata are stored and searched as the service did before issue 21
    const before = QUALITY
      ? await loadRun('before (no speaker metadata)', turns, { EMBEDDINGS_PROVIDER: 'local' }, false)
      : null;
    if (before) {
      runs.push(before);
      // yardstick: textbook BM25 over the same turns
      const docs = await lexemes(
        before.ctx,
        turns.map((t) => t.text),
      );
      const qlex = await lexemes(
        before.ctx,
        questions.map((q) => q.text),
      );
      rankings.bm25 = questions.map((_, i) => {
        const s = bm25(docs, qlex[i]);
        return rankBy(new Map(turns.map((t, j) => [t.key, s[j]])), order).slice(0, 10);
      });
      for (const mode of ['text', 'vector', 'hybrid'] as const)
        rankings[`before: ${mode}`] = await rank(before, questions, mode);
    }

    const local = await loadRun('local embedder', turns, { EMBEDDINGS_PROVIDER: 'local' }, true);
    runs.push(local);
    const fusion = local.ctx.config.memory.fusion;
    if (QUALITY) {
      rankings['local: hybrid'] = await rank(local, questions);
      for (const [sb, nw] of [
        [0, 0],
        [0.5, 0],
        [0, 0.5],
      ]) {
        Object.assign(fusion, { neighbourWeight: nw });
        rankings[`local: hybrid, speaker ${sb}, neighbours ${nw}`] = await rank(local, questions);
      }
      Object.assign(fusion, { neighbourWeight: 0.5 });
      const chosen = fusion.timeBoost;
      for (const tb of [0, 0.25, 1]) {
        fusion.timeBoost = tb;
        rankings[`local: hybrid, time boost ${tb}`] = await rank(local, questions);
      }
      fusion.timeBoost = chosen;
    }

    if (USE_ENCODER) {
      const t0 = performance.now();
      const enc = await loadRun('sentence encoder', turns, {}, true); // the default: no EMBEDDINGS_* at all, as `npm start`
      extra.sentence_encoder_load_and_store_s = Number(((performance.now() - t0) / 1000).toFixed(1));
      runs.push(enc);
    }
    if (USE_ENCODER && QUALITY) {
      const enc = runs.find((r) => r.label === 'sentence encoder')!;
      rankings['encoder: vector'] = await rank(enc, questions, 'vector');
      const f = enc.ctx.config.memory.fusion;
      const chosen = f.vectorWeight;
      for (const vw of [1, 2, 3]) {
        f.vectorWeight = vw;
        rankings[`encoder: hybrid, vector weight ${vw}`] = await rank(enc, questions);
      }
      f.vectorWeight = chosen;
      const tb = f.timeBoost;
      f.timeBoost = 0;
      rankings[`encoder: hybrid (${chosen}), no time boost`] = await rank(enc, questions);
      f.timeBoost = tb;
      Object.assign(f, { neighbourWeight: 0 });
      rankings[`encoder: hybrid (${chosen}), no speaker/neighbours`] = await rank(enc, questions);
      Object.assign(f, { neighbourWeight: 0.5 });
      rankings[`encoder: hybrid (default, ${chosen})`] = await rank(enc, questions);
    }

    if (process.env.BENCH_EMBEDDINGS_URL) {
      // the production option: an OpenAI-compatible server (EMBEDDINGS_URL) with a real model
      const remote = await loadRun(
        'EMBEDDINGS_URL',
        turns,
        {
          EMBEDDINGS_URL: process.env.BENCH_EMBEDDINGS_URL,
          EMBEDDINGS_MODEL: process.env.BENCH_EMBEDDINGS_MODEL ?? 'text-embedding-3-small',
          EMBEDDINGS_DIMENSIONS: process.env.BENCH_EMBEDDINGS_DIMENSIONS ?? '1536',
          ...(process.env.BENCH_EMBEDDINGS_API_KEY ? { EMBEDDINGS_API_KEY: process.env.BENCH_EMBEDDINGS_API_KEY } : {}),
        },
        true,
      );
      runs.push(remote);
      rankings['EMBEDDINGS_URL: vector'] = await rank(remote, questions, 'vector');
      rankings['EMBEDDINGS_URL: hybrid'] = await rank(remote, questions);
    }

    if (QUALITY) {
      const base = hitRates(questions, rankings.bm25);
      const lines = [
        `  ${'ranker'.padEnd(44)} ${'all'.padStart(6)} ${'dev'.padStart(6)} ${'held-out'.padStart(9)}  held-out para/people/when/multi  ×BM25 (held-out)`,
      ];
      for (const [name, r] of Object.entries(rankings)) {
        const h = hitRates(questions, r);
        results[name] = h;
        const kinds = ['para', 'people', 'when', 'multi'].map((k) => (h[`held-out:${k}`] ?? 0).toFixed(2)).join(' / ');
        lines.push(
          `  ${name.padEnd(44)} ${h.all.toFixed(3).padStart(6)} ${h.dev.toFixed(3).padStart(6)} ${h['held-out'].toFixed(3).padStart(9)}  ${kinds.padEnd(30)}  ${(h['held-out'] / base['held-out']).toFixed(2)}`,
        );
      }
      log(
        `top-5 hit rate (${questions.length} questions: ${questions.filter((q) => q.half === 'dev').length} dev, ${questions.filter((q) => q.half === 'held-out').length} held-out)\n${lines.join('\n')}`,
      );
    }

    if (SCALE_N > 0) {
      // latency at SCALE_N memories of one user, interleaved rounds over the runs, hybrid search
      const hash = new LocalHashEmbedder(384);
      await fill(local, turns, async (t) => t.map((x) => hash.embedOne(x)));
      const enc = runs.find((r) => r.label === 'sentence encoder');
      if (enc) {
        // stored vectors: the encoder's vectors of the original turns plus noise (embedding 10k synthetic
        // texts takes minutes on this machine; latency depends on the query embedding and the SQL, not on the words)
        const real = await embeddingProviderOf(enc.ctx).embed(turns.map((t) => t.text));
        let seed = 7;
        const rnd = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296 - 0.5;
        await fill(enc, turns, async (t) =>
          t.map((_, j) => l2normalize(real[j % real.length].map((x) => x + rnd() * 0.05))),
        );
      }
      // variants: the local run without the turn re-ranking (the baseline), with it, and the encoder run
      const variants: Array<[string, Run, number]> = [
        ['local, no re-ranking (before)', local, 0],
        ['local', local, 0.5],
        ...(enc ? [['sentence encoder (default)', enc, 0.5] as [string, Run, number]] : []),
      ];
      const times = new Map<string, number[]>(variants.map(([k]) => [k, []]));
      for (let round = 0; round < 2; round++) {
        for (const q of questions) {
          for (const [label, r, w] of variants) {
            Object.assign(r.ctx.config.memory.fusion, { neighbourWeight: w });
            const t = performance.now();
            await searchMemories(r.ctx, { accountId: r.userId, agentId: null }, { q: q.text, limit: 10 });
            times.get(label)!.push(performance.now() - t);
          }
        }
      }
      const lat = Object.fromEntries(
        [...times].map(([k, xs]) => [k, { p50: Number(pct(xs, 50).toFixed(1)), p95: Number(pct(xs, 95).toFixed(1)) }]),
      );
      extra.latency_ms = lat;
      extra.scale_n = SCALE_N;
      log(
        `hybrid search at ${SCALE_N} memories of one user (${questions.length} questions × 2 rounds, interleaved; load ${os
          .loadavg()
          .map((x) => x.toFixed(2))
          .join(' ')}):\n${Object.entries(lat)
          .map(([k, v]) => `  ${k.padEnd(30)} p50 ${v.p50} ms  p95 ${v.p95} ms`)
          .join('\n')}`,
      );
    }
  } finally {
    for (const r of runs) await r.app.app.close();
  }
  process.stdout.write(
    `${JSON.stringify({ bench: 'memory-conversations', load: os.loadavg().map((x) => Number(x.toFixed(2))), results, ...extra })}\n`,
  );
}

// run when executed (`npm run bench:memory-conversations`), not when imported (bench/memory-profile.ts)
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
