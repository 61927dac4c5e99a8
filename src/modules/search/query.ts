/**
 * Query understanding for tool search: typo tolerance and plain-language queries,
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
 * - Words of other forms: a word's abbreviation or full form ("repos" ~ repository,
 *   {@link equivalentsOf}) is one more word of its group, always; the everyday verbs for API
 *   operations ("stop" ~ cancel, "write" ~ create, {@link synonymsOf}) are extra groups weighing
 *   {@link SYNONYM_WEIGHT} × their own inverse document frequency, searched only in the relaxed
 *   search (no tool holds every typed word), so a query whose words all match is never broadened.
 * - Questions: what a question's form asks for ("which …" a list, "did …" a check, "who …" people,
 *   "how many …" a count) and what its phrasal verbs mean ("turn off" ~ disable) are extra groups
 *   weighing {@link QUESTION_WEIGHT} × their inverse document frequency, and such a query is
 *   searched relaxed ({@link questionGroups}).
 *
 * The vocabulary is cached per application context (`AppContext.search`) and rebuilt in the
 * background when {@link catalogVersion} changes (checked after this instance's registry writes,
 * else at most every `CACHE_TTL_MS`); see {@link vocabularyOf}.
 */
import type { AppContext } from '../../context.js';
import { STOPWORDS } from '../memory/embeddings.js';
import { catalogGeneration, catalogVersion, catalogVocabulary, type TermGroup } from '../registry/catalog.js';
import { editDistance, typoBudget } from './highlight.js';
import { refreshOnce } from './refresh.js';
import { searchStateOf, type Vocabulary } from './state.js';
import { equivalentsOf, questionGroups, synonymsOf } from './synonyms.js';

/** Words searched per query (after stop words are left out). */
export const MAX_TERMS = 8;

/** Weight of a word's synonyms relative to the word, at equal rarity (relaxed search only). */
export const SYNONYM_WEIGHT = 0.5;

/**
 * Weight of the words a question form or a phrasal verb stands for ({@link questionGroups}) relative
 * to a typed word, at equal rarity: chosen on the dev half and the extra dev questions of
 * `bench:search-quality` (searched relaxed, with the phrasal verbs; 1 / 2 / 3: extra dev plain 33.3 / 41.7 / 41.7 %, 25.0 without).
 */
export const QUESTION_WEIGHT = 2;

/** Inverse document frequency of a term in `df` of the vocabulary's documents, at least 0.1. */
function idf(v: Vocabulary, df: number): number {
  return Math.max(0.1, Math.log(1 + v.docs / (1 + df)));
}

/** Corrections kept per typed word. */
export const MAX_CORRECTIONS = 3;

/** Stands in while no vocabulary is built yet: no corrections, every word equally weighted. */
const EMPTY_VOCABULARY: Vocabulary = {
  version: '',
  docs: 0,
  ndoc: new Map(),
  byLength: new Map(),
  sorted: [],
  corrections: new Map(),
  generation: -1,
  checkedAt: 0,
};

/**
 * Published tools read per vocabulary statement: the build is a series of short statements with
 * the event loop turning between them, so searches interleave with it (PGlite runs one statement
 * at a time, on the application's thread; ts_stat over 10k tools' text took seconds in one piece).
 */
export const VOCABULARY_PAGE = 250;

async function buildVocabulary(
  ctx: AppContext,
  version: string,
  generation: number,
  checkedAt: number,
): Promise<Vocabulary> {
  const ndoc = new Map<string, number>();
  let docs = 0;
  for (let afterId = ''; ; ) {
    const page = await catalogVocabulary(ctx, { afterId, limit: VOCABULARY_PAGE });
    if (!page.lastId) break;
    docs += page.docs;
    for (const w of page.words) ndoc.set(w.word, (ndoc.get(w.word) ?? 0) + w.ndoc);
    afterId = page.lastId;
    // Let timers and I/O run between pages: PGlite executes on this thread, and the next page's
    // statement would otherwise start within the same microtask chain, before any search got in.
    await new Promise((resolve) => setImmediate(resolve));
  }
  const byLength = new Map<number, string[]>();
  for (const word of ndoc.keys()) {
    const list = byLength.get(word.length) ?? [];
    list.push(word);
    byLength.set(word.length, list);
  }
  return {
    version,
    docs,
    ndoc,
    byLength,
    sorted: [...ndoc.keys()].sort(),
    corrections: new Map(),
    generation,
    checkedAt,
  };
}

/** How long a query waits for a vocabulary build before answering with the previous vocabulary (ms). */
export const VOCABULARY_WAIT_MS = 250;
/** How long the first query of an instance (no vocabulary yet) waits before answering without corrections (ms). */
export const VOCABULARY_COLD_WAIT_MS = 1000;

/**
 * Bring the vocabulary up to date unless that is under way: read the catalog's version, rebuild
 * when it changed (else mark the cached vocabulary current), and again if this instance changed
 * the registry meanwhile ({@link catalogGeneration}). Failures are logged; the previous vocabulary
 * stays.
 */
function refreshVocabulary(ctx: AppContext): Promise<void> {
  const state = searchStateOf(ctx);
  return refreshOnce(ctx, 'vocabularyRefresh', 'search vocabulary build failed', async (generation, checkedAt) => {
    const version = await catalogVersion(ctx);
    const cached = state.vocabulary;
    if (cached && cached.version === version) {
      cached.generation = generation;
      cached.checkedAt = checkedAt;
    } else state.vocabulary = await buildVocabulary(ctx, version, generation, checkedAt);
  });
}

/**
 * The vocabulary to correct against. It is current until this instance changes the registry
 * ({@link catalogGeneration}) or, on PostgreSQL, `CACHE_TTL_MS` passes (another instance's change;
 * a PGlite data directory has no other writer); then it is
 * refreshed ({@link refreshVocabulary}; a rebuild is ts_stat over every published tool's text,
 * seconds at 10k tools) in the background: the query waits for that at most
 * {@link VOCABULARY_WAIT_MS} (so a small catalog's new words are corrected at once) and otherwise
 * answers with the previous vocabulary; with none yet, at most {@link VOCABULARY_COLD_WAIT_MS},
 * then `null` (no corrections).
 */
async function vocabularyOf(ctx: AppContext): Promise<Vocabulary | null> {
  const state = searchStateOf(ctx);
  const cached = state.vocabulary;
  // Other instances write only to PostgreSQL (a PGlite data directory belongs to one process).
  if (
    cached &&
    cached.generation === catalogGeneration(ctx) &&
    (ctx.database.engine === 'pglite' || Date.now() - cached.checkedAt < ctx.config.cacheTtlMs)
  )
    return cached;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>(
    (resolve) => (timer = setTimeout(resolve, cached ? VOCABULARY_WAIT_MS : VOCABULARY_COLD_WAIT_MS)),
  );
  await Promise.race([refreshVocabulary(ctx), timeout]);
  clearTimeout(timer);
  return state.vocabulary ?? null;
}

/**
 * Start building the vocabulary in the background (at start-up, so the first queries need not
 * wait for it). A no-op with `SEARCH_QUERY_REWRITE=off`.
 */
export function warmVocabulary(ctx: AppContext): void {
  if (ctx.config.search.queryRewrite) void refreshVocabulary(ctx);
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
  if (max === 0 || v.docs === 0 || v.ndoc.has(word) || !/^[a-z]+$/.test(word)) return [];
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
  const out =
    best <= max
      ? found.sort((a, b) => (v.ndoc.get(b) ?? 0) - (v.ndoc.get(a) ?? 0) || (a < b ? -1 : 1)).slice(0, MAX_CORRECTIONS)
      : [];
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
  /**
   * {@link groups} with each word's synonyms ({@link synonymsOf}, those in the catalog's
   * vocabulary) and the words of its question form or phrasal verbs ({@link questionGroups})
   * added: searched when no tool holds every typed word, or when {@link question} (the relaxed search).
   */
  expanded: TermGroup[];
  /** The query is a question or holds a phrasal verb whose words are in the catalog: it is searched relaxed. */
  question: boolean;
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
  if (!terms.length) return { groups: [], dropped: [], corrected: {}, expanded: [], question: false };
  const content = terms.filter((t) => !STOPWORDS.has(t)).slice(0, MAX_TERMS);
  const kept = content.length ? content : terms.slice(0, MAX_TERMS);
  const dropped = content.length ? terms.filter((t) => STOPWORDS.has(t)) : [];
  const v = (await vocabularyOf(ctx)) ?? EMPTY_VOCABULARY;
  const corrected: Record<string, string[]> = {};
  const groups = kept.map((word, i) => {
    const last = i === kept.length - 1 && terms[terms.length - 1] === word;
    const fixes = last && prefixesAWord(v, word) ? [] : correctionsOf(v, word);
    if (fixes.length) corrected[word] = fixes;
    const same = [word, ...fixes]
      .flatMap((w) => equivalentsOf(w))
      .filter((w) => v.ndoc.has(w) && w !== word && !fixes.includes(w));
    const df = Math.max(v.ndoc.get(word) ?? 0, ...fixes.map((f) => v.ndoc.get(f) ?? 0));
    return { words: [...new Set([word, ...fixes, ...same])], prefix: last, weight: idf(v, df) };
  });
  // Synonyms are extra groups, weighted by their own rarity × SYNONYM_WEIGHT: they add evidence,
  // never as much as the typed word.
  const expanded = [...groups];
  for (const g of groups) {
    const extra = synonymsOf(g.words[0]).filter((w) => v.ndoc.has(w) && !g.words.includes(w));
    if (!extra.length) continue;
    const df = Math.max(...extra.map((w) => v.ndoc.get(w) ?? 0));
    expanded.push({ words: extra, prefix: false, weight: SYNONYM_WEIGHT * idf(v, df) });
  }
  // A question's form and its phrasal verbs: extra groups (QUESTION_WEIGHT × their rarity), and the
  // query searched relaxed, so the words they stand for count even when every typed word matched.
  let question = false;
  for (const words of questionGroups(terms)) {
    const known = words.filter((w) => v.ndoc.has(w));
    if (!known.length) continue;
    const df = Math.max(...known.map((w) => v.ndoc.get(w) ?? 0));
    expanded.push({ words: known, prefix: false, weight: QUESTION_WEIGHT * idf(v, df) });
    question = true;
  }
  return { groups, dropped, corrected, expanded, question };
}
