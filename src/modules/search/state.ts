/**
 * Per-application state of the search module, held as `AppContext.search` (per-app state
 * is a typed field of the context, not a module-level `WeakMap<AppContext, …>`). Created on first
 * use ({@link searchStateOf}), so contexts built without it (CLI, unit tests) still work.
 */
import type { LRUCache } from 'lru-cache';
import type { SentenceEncoder } from '../../lib/sentence-encoder.js';
import type { Doc, TrigramIndex, TrigramText } from '../../lib/pg-text.js';

/** Calls per tool over the popularity window (all users; top 1000 tools) and when they were read (ms since epoch). */
export interface PopularityTable {
  at: number;
  rows: Array<{ tool_id: string; service_id: string; calls: number }>;
  byTool: Map<string, number>;
}

/** The published catalog's words, by length, with document frequencies (the typo vocabulary). */
export interface Vocabulary {
  version: string;
  /** `catalogGeneration` and time (ms) when `version` was last found current. */
  generation: number;
  checkedAt: number;
  docs: number;
  ndoc: Map<string, number>;
  byLength: Map<number, string[]>;
  /** All words, sorted (prefix look-ups). */
  sorted: string[];
  /** Corrections already computed for a word. */
  corrections: Map<string, string[]>;
}

/**
 * Tool vectors in memory (brute-force cosine: 10k tools × 512 dimensions is 20 MB and ~5 ms a query):
 * `ids[i]`'s unit vector is `matrix[i * dims … (i + 1) * dims)`. `version` is the catalog version
 * it was built for; `generation`/`checkedAt` as for {@link Vocabulary}.
 */
export interface ToolVectorIndex {
  model: string;
  version: string;
  generation: number;
  checkedAt: number;
  dims: number;
  ids: string[];
  matrix: Float32Array;
}

/** Caches of one application: each a promise, so concurrent first requests share one build. */
export interface SearchState {
  /** The published catalog's typo vocabulary ({@link Vocabulary}) last built, served to queries. */
  vocabulary?: Vocabulary;
  /** The vocabulary build under way (one at a time), settled when `vocabulary` is replaced. */
  vocabularyRefresh?: Promise<void>;
  /** Tool popularity, cached for `SEARCH_POPULARITY_CACHE_MS`. */
  popularity?: Promise<PopularityTable>;
  /** The sentence encoder of the semantic arm (started on first use, closed with the app). */
  encoder?: SentenceEncoder;
  /** Tool vectors loaded for the semantic arm, and the refresh under way (one at a time). */
  vectors?: ToolVectorIndex;
  vectorRefresh?: Promise<void>;
  /** The in-process tool index (`tool-index.ts`) last built, and the refresh under way (one at a time). */
  toolIndex?: ToolIndex;
  toolIndexRefresh?: Promise<void>;
  /** Query words → their `english` lexemes (bounded: cleared when full). */
  lexemes?: Map<string, string[]>;
  /** Sentence vectors of recent queries (normalised text → unit vector), created with the encoder. */
  queryVectors?: LRUCache<string, Float32Array>;
}

/** The search state of an application context, created on first use. */
export function searchStateOf(ctx: { search?: SearchState }): SearchState {
  return (ctx.search ??= {});
}

/** One service of the index. */
export interface IndexedService {
  id: string;
  name: string;
  status: string;
  ownerId: string;
  category: string | null;
  /** Tags, lower-cased. */
  tags: string[];
  strgm: string;
  strgmTrigrams: TrigramText;
  doc: Doc;
  tools: IndexedTool[];
}

/** One tool of the index. */
export interface IndexedTool {
  id: string;
  service: IndexedService;
  lname: string;
  ttrgm: string;
  doc: Doc;
  /** Lexemes of the name (weight A): `length(ts_filter(search_doc, '{a}'))`. */
  nameLexemes: number;
}

/** The index of one application (`AppContext.search.toolIndex`). */
export interface ToolIndex {
  /** `catalogGeneration` and time (ms) when it was last found current. */
  generation: number;
  checkedAt: number;
  fingerprints: Map<string, string>;
  services: Map<string, IndexedService>;
  /** Tools by slot, a tool's slot, and the number of its name in {@link names} by slot. */
  tools: IndexedTool[];
  slotOf: Map<string, number>;
  nameOf: Int32Array;
  /** Lexeme → slots of the tools whose document holds it (ascending), and those holding it in the name (weight A). */
  postings: Map<string, number[]>;
  postingsA: Map<string, number[]>;
  /** Every lexeme, sorted (prefix look-ups). */
  lexemes: string[];
  /** Distinct tool name strings (`ttrgm`) by trigram, and the slots of each. */
  names: TrigramIndex;
  nameSlots: number[][];
}
