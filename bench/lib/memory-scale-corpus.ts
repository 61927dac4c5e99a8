/**
 * The synthetic scale corpus of `bench/memory.ts`: deterministic variants of the labelled memories
 * of `fixtures/memory-retrieval.json` (numbers, cities, topic words and extra context varied) and the
 * benchmark queries (the labelled questions, then city-swapped variants).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const data = JSON.parse(fs.readFileSync(path.join(here, '../fixtures/memory-retrieval.json'), 'utf8')) as {
  memories: Array<{ topic: string; content: string }>;
  queries: Array<{ text: string }>;
};

const CITY =
  /\b(Lisbon|Porto|Madrid|Seville|Barcelona|Valencia|Paris|Lyon|Marseille|Nice|Berlin|Munich|Hamburg|Cologne|Vienna|Zurich|Geneva|Milan|Rome|Naples|Florence|Venice|Athens|Prague|Budapest|Krakow|Warsaw|Copenhagen|Stockholm|Oslo|Helsinki|Dublin|Edinburgh|Amsterdam|Rotterdam|Brussels|Antwerp|Reykjavik|Tallinn|Riga)\b/g;
const CITIES = CITY.source.slice(3, -3).split('|');
const EXTRA = [
  'again',
  'for the team',
  'as requested',
  'before the deadline',
  'on behalf of the customer',
  'during the sprint',
  'after the review',
  'for the quarterly report',
  'on mobile',
  'via the API',
];

/** Words of the labelled set, to vary the synthetic memories. */
const VOCAB = [...new Set(data.memories.flatMap((m) => m.content.match(/[A-Za-z]{4,}/g) ?? []))];
/** Lower-case words (4+ letters) of each topic of the labelled set. */
const TOPIC_WORDS = new Map<string, string[]>();
for (const m of data.memories)
  TOPIC_WORDS.set(m.topic, [
    ...new Set([...(TOPIC_WORDS.get(m.topic) ?? []), ...(m.content.match(/\b[a-z]{4,}\b/g) ?? [])]),
  ]);

/**
 * Deterministic variants of the labelled memories, like a user's automatic memories, which repeat
 * the same tools with different arguments and outcomes: other numbers and cities, ~30% of the
 * lower-case words swapped for other words of the same topic (so the ~300 variants of a memory at
 * 100k are not near-copies of one sentence), and some extra context (a phrase, a few words of the
 * labelled set's vocabulary, a reference code). Before, only numbers, cities and the extras
 * varied: 300 near-copies per sentence, whose nearest neighbours differ by ~1e-3 in distance —
 * an HNSW stress test more than a user's memory (docs/adr/0134-bench-memory-scale-corpus-v2-each-synthetic-memory-swaps-30.md).
 */
export function synth(n: number): string[] {
  let s = 12345;
  const r = () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 4294967296;
  const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)];
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const base = data.memories[i % data.memories.length];
    const topicWords = TOPIC_WORDS.get(base.topic)!;
    let t = base.content.replace(/\d+/g, (d) => String(Math.floor(r() * 10 ** d.length)).padStart(d.length, '0'));
    t = t.replace(CITY, () => pick(CITIES));
    t = t.replace(/\b[a-z]{4,}\b/g, (w) => (r() < 0.3 ? pick(topicWords) : w));
    t = t.replace(/\.$/, '');
    if (r() < 0.6) t += ` ${pick(EXTRA)}`;
    if (r() < 0.7)
      t += `; ${Array.from({ length: 1 + Math.floor(r() * 3) }, () => pick(VOCAB).toLowerCase()).join(' ')}`;
    if (r() < 0.5) t += ` (ref ${Math.floor(r() * 36 ** 6).toString(36)})`;
    out.push(`${t}.`);
  }
  return out;
}

/** Benchmark queries: the labelled questions, then city-swapped variants of them. */
export function benchQueries(n: number): string[] {
  const qs = data.queries.map((q) => q.text);
  let k = 0;
  while (qs.length < n) {
    const base = data.queries[k % data.queries.length].text;
    qs.push(base.replace(CITY, () => CITIES[(k * 7) % CITIES.length]) + (k % 2 ? ' recently' : ''));
    k++;
  }
  return qs.slice(0, n);
}
