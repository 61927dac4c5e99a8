/**
 * Query understanding for tool search (issue 19 §1): typo tolerance and plain-language queries,
 * turned into the term groups the registry's full-text search takes ({@link TermGroup}).
 *
 * - Typos (Typesense/Algolia rules): a word of 4+ letters may carry one typo, 8+ letters two; an
 *   adjacent transposition counts as one (optimal string alignment distance, the
 *   `damerau-levenshtein` package, via {@link editDistance}). A word missing from the published catalog's vocabulary
 *   ({@link catalogVocabulary}) is expanded with the vocabulary words at the smallest allowed
 *   distance (at most {@link MAX_CORRECTIONS}, most frequent first); the typed word is always kept,
 *   so a correction never hides an exact match. The last word, still being typed, is not corrected
 *   when it prefixes a vocabulary word.
 * - Plain language: stop words (the SMART list the memory module's embedder uses) are dropped unless
 *   the query has nothing else; stemming is PostgreSQL's `english` configuration; each remaining
 *   term weighs its inverse document frequency, so rare words decide the ranking.
 *
 * The vocabulary is cached per application context and rebuilt when {@link catalogVersion} changes.
 */
import type { AppContext } from '../../context.js';
import { STOPWORDS } from '../memory/embeddings.js';
import { catalogVersion, catalogVocabulary, queryTerms, type TermGroup } from '../registry/catalog.js';
import { editDistance, typoBudget } from './highlight.js';

/** Corrections kept per typed word. */
export const MAX_CORRECTIONS = 3;

/** The published catalog's words, by length, with document frequencies. */
interface Vocabulary {
  version: string;
  docs: number;
  ndoc: Map<string, number>;
  byLength: Map<number, string[]>;
  /** All words, sorted (prefix look-ups). */
  sorted: string[];
  /** Corrections already computed for a word. */
  corrections: Map<string, string[]>;
}

const vocabularies = new WeakMap<AppContext, Promise<Vocabulary>>();

async function buildVocabulary(ctx: AppContext, version: string): Promise<Vocabulary> {
  const { docs, words } = await catalogVocabulary(ctx);
  const ndoc = new Map<string, number>();
  const byLength = new Map<number, string[]>();
  for (const w of words) {
    ndoc.set(w.word, w.ndoc);
    const list = byLength.get(w.word.length) ?? [];
    list.push(w.word);
    byLength.set(w.word.length, list);
  }
  return { version, docs, ndoc, byLength, sorted: [...ndoc.keys()].sort(), corrections: new Map() };
}

/** The current vocabulary (rebuilt when the catalog changed since the cached one). */
async function vocabularyOf(ctx: AppContext): Promise<Vocabulary> {
  const version = await catalogVersion(ctx);
  const cached = await vocabularies.get(ctx)?.catch(() => null);
  if (cached && cached.version === version) return cached;
  const fresh = buildVocabulary(ctx, version);
  vocabularies.set(ctx, fresh);
  return fresh;
}

/** True when some vocabulary word starts with `prefix` (binary search in the sorted words). */
function prefixesAWord(v: Vocabulary, prefix: string): boolean {
  let lo = 0;
  let hi = v.sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (v.sorted[mid] < prefix) lo = mid + 1;
    else hi = mid;
  }
  return lo < v.sorted.length && v.sorted[lo].startsWith(prefix);
}

/**
 * Vocabulary words within the allowed typos of `word` (none when the word is known or too short),
 * at the smallest distance found, most frequent first, at most {@link MAX_CORRECTIONS}.
 */
function correctionsOf(v: Vocabulary, word: string): string[] {
  const max = typoBudget(word);
  if (max === 0 || v.ndoc.has(word) || !/^[a-z]+$/.test(word)) return [];
  const known = v.corrections.get(word);
  if (known) return known;
  let best = max + 1;
  let found: string[] = [];
  for (let len = word.length - max; len <= word.length + max; len++) {
    for (const cand of v.byLength.get(len) ?? []) {
      // Cheap filter: one or two typos leave the first letter in place, or move it by one (a
      // transposition, an insertion or a deletion at the start), or change it alone.
      if (cand[0] !== word[0] && cand[1] !== word[1] && cand[0] !== word[1] && cand[1] !== word[0]) continue;
      const d = editDistance(word, cand, max);
      if (d < best) {
        best = d;
        found = [cand];
      } else if (d === best) found.push(cand);
    }
  }
  const out = best <= max ? found.sort((a, b) => (v.ndoc.get(b) ?? 0) - (v.ndoc.get(a) ?? 0) || (a < b ? -1 : 1)).slice(0, MAX_CORRECTIONS) : [];
  if (v.corrections.size > 10_000) v.corrections.clear();
  v.corrections.set(word, out);
  return out;
}

/** How a query was understood (reported by `GET /search/tools` as `query_terms`). */
export interface QueryPlan {
  /** Term groups for the full-text search; empty when the query has no words. */
  groups: TermGroup[];
  /** Stop words left out. */
  dropped: string[];
  /** Typed word → the corrections also searched. */
  corrected: Record<string, string[]>;
}

/**
 * Plan a tool-search query: words (at most 8), stop words dropped, typo corrections added, weights
 * from inverse document frequency (`ln(1 + N / (1 + df))`, df of the word or of its most frequent
 * correction; at least 0.1).
 */
export async function planQuery(ctx: AppContext, q: string): Promise<QueryPlan> {
  const terms = queryTerms(q);
  if (!terms.length) return { groups: [], dropped: [], corrected: {} };
  const content = terms.filter((t) => !STOPWORDS.has(t));
  const kept = content.length ? content : terms;
  const dropped = content.length ? terms.filter((t) => STOPWORDS.has(t)) : [];
  const v = await vocabularyOf(ctx);
  const corrected: Record<string, string[]> = {};
  const groups = kept.map((word, i) => {
    const last = i === kept.length - 1 && terms[terms.length - 1] === word;
    const fixes = last && prefixesAWord(v, word) ? [] : correctionsOf(v, word);
    if (fixes.length) corrected[word] = fixes;
    const df = Math.max(v.ndoc.get(word) ?? 0, ...fixes.map((f) => v.ndoc.get(f) ?? 0));
    return { words: [word, ...fixes], prefix: last, weight: Math.max(0.1, Math.log(1 + v.docs / (1 + df))) };
  });
  return { groups, dropped, corrected };
}
