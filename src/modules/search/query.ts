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
 * The vocabulary is cached per application context (`AppContext.search`) and rebuilt when {@link catalogVersion} changes
 * (checked after this instance's registry writes, else at most every `CACHE_TTL_MS`).
 */
import type { AppContext } from '../../context.js';
import { STOPWORDS } from '../memory/embeddings.js';
import { catalogGeneration, catalogVersion, catalogVocabulary, type TermGroup } from '../registry/catalog.js';
import { editDistance, typoBudget } from './highlight.js';
import { searchStateOf, type Vocabulary } from './state.js';

/** Words searched per query (after stop words are left out). */
export const MAX_TERMS = 8;

/** Corrections kept per typed word. */
export const MAX_CORRECTIONS = 3;

async function buildVocabulary(ctx: AppContext, version: string, generation: number, checkedAt: number): Promise<Vocabulary> {
  const { docs, words } = await catalogVocabulary(ctx);
  const ndoc = new Map<string, number>();
  const byLength = new Map<number, string[]>();
  for (const w of words) {
    ndoc.set(w.word, w.ndoc);
    const list = byLength.get(w.word.length) ?? [];
    list.push(w.word);
    byLength.set(w.word.length, list);
  }
  return { version, docs, ndoc, byLength, sorted: [...ndoc.keys()].sort(), corrections: new Map(), generation, checkedAt };
}

/**
 * The current vocabulary, rebuilt when the catalog changed since the cached one. The catalog's
 * version is read from the database only when this instance changed the registry since the last
 * check ({@link catalogGeneration}) or after `CACHE_TTL_MS` (another instance's change), not on
 * every query.
 */
async function vocabularyOf(ctx: AppContext): Promise<Vocabulary> {
  const generation = catalogGeneration(ctx);
  const state = searchStateOf(ctx);
  const cached = await state.vocabulary?.catch(() => null);
  const now = Date.now();
  if (cached && cached.generation === generation && now - cached.checkedAt < ctx.config.cacheTtlMs) return cached;
  const version = await catalogVersion(ctx);
  if (cached && cached.version === version) {
    cached.generation = generation;
    cached.checkedAt = now;
    return cached;
  }
  const fresh = buildVocabulary(ctx, version, generation, now);
  state.vocabulary = fresh;
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
 * Plan a tool-search query: stop words dropped, words (at most {@link MAX_TERMS}), typo corrections added, weights
 * from inverse document frequency (`ln(1 + N / (1 + df))`, df of the word or of its most frequent
 * correction; at least 0.1).
 */
export async function planQuery(ctx: AppContext, q: string): Promise<QueryPlan> {
  // Stop words do not count towards the MAX_TERMS words ("store a secret for github actions in a
  // repository" keeps "repository").
  const terms = (q.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).slice(0, 64).map((t) => t.slice(0, 64));
  if (!terms.length) return { groups: [], dropped: [], corrected: {} };
  const content = terms.filter((t) => !STOPWORDS.has(t)).slice(0, MAX_TERMS);
  const kept = content.length ? content : terms.slice(0, MAX_TERMS);
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
