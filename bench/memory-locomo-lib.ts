/**
 * Helpers of bench/memory-locomo.ts: the LoCoMo loader, a plain BM25 over the same turns, the
 * retrieval metrics and percentiles.
 */
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import type { AppContext } from '../src/context.js';
import { execRows } from '../src/db/client.js';

/** One turn: `key` is `<conversation>:<dia_id>` (e.g. `26:D1:3`). */
export interface LocomoTurn {
  key: string;
  conv: string;
  speaker: string;
  text: string;
  /** The session's date as the data writes it ("1:56 pm on 8 May, 2023"). */
  sessionTime: string;
}

/** One question of categories 1–4 with the keys of its evidence turns. */
export interface LocomoQuestion {
  conv: string;
  question: string;
  category: number;
  evidence: string[];
}

/** `LOCOMO_DIR`, else `../shared/data/locomo-dev` beside the repository; null when absent. */
export function locomoDir(repo: string): string | null {
  const dir = process.env.LOCOMO_DIR ?? path.resolve(repo, '../shared/data/locomo-dev');
  return fs.existsSync(dir) && fs.readdirSync(dir).some((f) => f.endsWith('.json')) ? dir : null;
}

/** Every `*.json` conversation of `dir`: turns in session order, questions of categories 1–4. */
export function loadLocomo(dir: string): { conversations: string[]; turns: LocomoTurn[]; questions: LocomoQuestion[] } {
  const conversations: string[] = [];
  const turns: LocomoTurn[] = [];
  const questions: LocomoQuestion[] = [];
  for (const file of fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()) {
    const conv = file.replace(/\.json$/, '');
    const d = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')) as Record<string, unknown>;
    conversations.push(conv);
    const sessions = Object.keys(d)
      .filter((k) => /^session_\d+$/.test(k))
      .sort((a, b) => Number(a.slice(8)) - Number(b.slice(8)));
    const known = new Set<string>();
    for (const s of sessions) {
      for (const t of d[s] as Array<{ speaker: string; dia_id: string; text: string }>) {
        turns.push({
          key: `${conv}:${t.dia_id}`,
          conv,
          speaker: t.speaker,
          text: t.text,
          sessionTime: String(d[`${s}_date_time`]),
        });
        known.add(`${conv}:${t.dia_id}`);
      }
    }
    for (const q of d.qa as Array<{ question: string; category: number; evidence: string[] }>) {
      if (q.category < 1 || q.category > 4) continue;
      const evidence = q.evidence
        .flatMap((e) => e.split(/[;,\s]+/))
        .filter(Boolean)
        .map((e) => `${conv}:${e}`)
        .filter((k) => known.has(k));
      if (evidence.length > 0) questions.push({ conv, question: q.question, category: q.category, evidence });
    }
  }
  return { conversations, turns, questions };
}

/** Retrieval figures of one ranker. */
export interface Scores {
  n: number;
  hit1: number;
  hit5: number;
  hit10: number;
  mrr: number;
  byCategory: Record<number, { n: number; hit5: number; hit10: number }>;
  byConversation: Record<string, { n: number; hit5: number }>;
}

/** hit@1/5/10 and MRR@10 of `ranked[i]` (turn keys, best first) against `qs[i].evidence`. */
export function scoreRuns(qs: LocomoQuestion[], ranked: string[][]): Scores {
  let [h1, h5, h10, mrr] = [0, 0, 0, 0];
  const cat: Record<number, { n: number; h5: number; h10: number }> = {};
  const conv: Record<string, { n: number; h5: number }> = {};
  qs.forEach((q, i) => {
    const ev = new Set(q.evidence);
    const at = ranked[i].slice(0, 10).findIndex((k) => ev.has(k));
    const c = (cat[q.category] ??= { n: 0, h5: 0, h10: 0 });
    const v = (conv[q.conv] ??= { n: 0, h5: 0 });
    c.n++;
    v.n++;
    if (at < 0) return;
    if (at < 1) h1++;
    if (at < 5) [h5, c.h5, v.h5] = [h5 + 1, c.h5 + 1, v.h5 + 1];
    h10++;
    c.h10++;
    mrr += 1 / (at + 1);
  });
  const n = Math.max(1, qs.length);
  return {
    n: qs.length,
    hit1: h1 / n,
    hit5: h5 / n,
    hit10: h10 / n,
    mrr: mrr / n,
    byCategory: Object.fromEntries(
      Object.entries(cat).map(([k, c]) => [k, { n: c.n, hit5: c.h5 / c.n, hit10: c.h10 / c.n }]),
    ),
    byConversation: Object.fromEntries(Object.entries(conv).map(([k, c]) => [k, { n: c.n, hit5: c.h5 / c.n }])),
  };
}

/** The p-th percentile (nearest rank) of `xs`. */
export function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] : NaN;
}

/** Lexeme → count of each text, from PostgreSQL's `to_tsvector('english', …)` (stemmed, stop words out). */
async function lexemes(ctx: AppContext, texts: string[]): Promise<Array<Map<string, number>>> {
  const rows = await execRows<{ v: string }>(
    ctx.db,
    sql`select to_tsvector('english', t)::text as v from json_array_elements_text(${JSON.stringify(texts)}::json) with ordinality as x(t, i) order by i`,
  );
  return rows.map((r) => {
    const m = new Map<string, number>();
    for (const [, lex, pos] of r.v.matchAll(/'((?:[^']|'')+)'(?::([\d,ABCD]+))?/g))
      m.set(lex.replaceAll("''", "'"), pos ? pos.split(',').length : 1);
    return m;
  });
}

/**
 * A textbook BM25 (Robertson–Spärck Jones IDF `ln(1 + (N − df + ½)/(df + ½))`, k1 1.2, b 0.75) over
 * the stored text of `turns` (`"Speaker: text"`): a ranker of turn keys, best first.
 */
export async function bm25Ranker(
  ctx: AppContext,
  turns: Array<{ key: string; speaker: string; text: string }>,
): Promise<(q: string, k: number) => Promise<string[]>> {
  const docs = await lexemes(
    ctx,
    turns.map((t) => `${t.speaker}: ${t.text}`),
  );
  const df = new Map<string, number>();
  const lens = docs.map((d) => [...d.values()].reduce((a, b) => a + b, 0));
  for (const d of docs) for (const w of d.keys()) df.set(w, (df.get(w) ?? 0) + 1);
  const N = docs.length;
  const avg = lens.reduce((a, b) => a + b, 0) / N;
  const [k1, b] = [1.2, 0.75];
  return async (q: string, k: number) => {
    const [terms] = await lexemes(ctx, [q]);
    const scored = docs.map((d, i) => {
      let s = 0;
      for (const w of terms.keys()) {
        const tf = d.get(w);
        if (!tf) continue;
        const n = df.get(w)!;
        s += Math.log(1 + (N - n + 0.5) / (n + 0.5)) * ((tf * (k1 + 1)) / (tf + k1 * (1 - b + (b * lens[i]) / avg)));
      }
      return { key: turns[i].key, s };
    });
    return scored
      .filter((x) => x.s > 0)
      .sort((a, c) => c.s - a.s)
      .slice(0, k)
      .map((x) => x.key);
  };
}
