/**
 * The in-process candidate stage of tool search (latency): every service and tool's
 * stored full-text document (`search_doc`, PostgreSQL's own lexemes, positions and weights) and
 * trigram name string, held per application and kept in step with the catalog, so a search ranks
 * its candidates without the database; SQL then reads only the page's tools, under the caller's
 * visibility ({@link catalogToolPage}).
 *
 * Same ranking as the SQL one (`searchCatalogTools` with term groups): the same candidates,
 * pre-scores and cuts, `ts_rank` and pg_trgm `word_similarity` computed as PostgreSQL does
 * (`lib/pg-text.ts`), query words normalised by the database's `english` configuration (cached).
 * See {@link rankFromIndex}.
 *
 * Freshness: each service has a fingerprint of its and its tools' `updated_at` and tool count
 * ({@link catalogFingerprints}); a refresh re-reads only the services whose fingerprint changed
 * (and drops deleted ones). After this instance's registry writes ({@link catalogGeneration}) a
 * search waits for that refresh (at most {@link INDEX_WAIT_MS}, else it is answered by SQL); on
 * PostgreSQL other instances' writes are picked up by a background check every `CACHE_TTL_MS`
 * (none on PGlite, whose data directory one process owns: the check's statement, ~0.1 s at 10k
 * tools, would hold this thread's searches behind it), so there
 * a search may miss a tool published elsewhere, or rank it by its old text, for that long plus a
 * refresh; a tool hidden or deleted meanwhile is left out by the page's SQL, never shown.
 * The first search starts the first build (not start-up: every process, workers and CLI included,
 * would read the whole catalog); until it is done searches go to SQL.
 */
import type { AppContext } from '../../context.js';
import {
  catalogFingerprints,
  catalogIndexRows,
  normalizeWords,
  type IndexServiceRow,
  type IndexToolRow,
} from '../registry/catalog-index.js';
import { catalogGeneration, type RankedCandidate } from '../registry/catalog.js';
import { parseTsvector, TrigramIndex, trigramText, weightALexemes } from '../../lib/pg-text.js';
import { refreshOnce } from './refresh.js';
import { searchStateOf, type IndexedService, type IndexedTool, type ToolIndex } from './state.js';

export type { IndexedService, IndexedTool, ToolIndex };

/**
 * How long a search waits for the index to catch up with this instance's registry write (ms); then
 * SQL answers it. A service's change is refreshed well within it; a large change (thousands of
 * tools: seconds) is not worth waiting for (same bound as the vocabulary's `VOCABULARY_WAIT_MS`).
 */
export const INDEX_WAIT_MS = 250;
/**
 * Tools read per statement while refreshing (whole services, at least one per statement; the event
 * loop turns between statements: PGlite runs on this thread, one statement at a time, so a search
 * waits for at most one page).
 */
export const INDEX_PAGE = 250;
/** Normalised query words kept per application. */
export const LEXEME_CACHE = 20_000;

function serviceOf(r: IndexServiceRow, intern: (s: string) => string): IndexedService {
  return {
    id: r.id,
    name: r.name,
    status: r.status,
    ownerId: r.owner_id,
    category: r.category,
    tags: r.tags.map((t) => t.toLowerCase()),
    strgm: r.strgm,
    strgmTrigrams: trigramText(r.strgm),
    doc: parseTsvector(r.doc ?? '', intern),
    tools: [],
  };
}

function toolOf(r: IndexToolRow, service: IndexedService, intern: (s: string) => string): IndexedTool {
  const doc = parseTsvector(r.doc ?? '', intern);
  return { id: r.id, service, lname: r.lname, ttrgm: r.ttrgm, doc, nameLexemes: weightALexemes(doc) };
}

function push(map: Map<string, number[]>, key: string, slot: number): void {
  const list = map.get(key);
  if (list) list.push(slot);
  else map.set(key, [slot]);
}

/**
 * The derived look-up structures over `services` (pure JavaScript: tens of ms at 10k tools). Entries
 * are shared with the previous index and never changed, so a search still ranking with it is safe.
 */
function derive(
  generation: number,
  checkedAt: number,
  fingerprints: Map<string, string>,
  services: Map<string, IndexedService>,
): ToolIndex {
  const tools: IndexedTool[] = [];
  for (const s of services.values()) tools.push(...s.tools);
  const slotOf = new Map<string, number>();
  const nameOf = new Int32Array(tools.length);
  const postings = new Map<string, number[]>();
  const postingsA = new Map<string, number[]>();
  const names = new TrigramIndex();
  const nameSlots: number[][] = [];
  const nameNo = new Map<string, number>();
  tools.forEach((t, slot) => {
    slotOf.set(t.id, slot);
    t.doc.lex.forEach((lex, i) => {
      push(postings, lex, slot);
      if (t.doc.pos[i].some((p) => (p & 3) === 3)) push(postingsA, lex, slot);
    });
    let n = nameNo.get(t.ttrgm);
    if (n === undefined) {
      n = names.add(t.ttrgm);
      nameNo.set(t.ttrgm, n);
      nameSlots.push([]);
    }
    nameOf[slot] = n;
    nameSlots[n].push(slot);
  });
  return {
    generation,
    checkedAt,
    fingerprints,
    services,
    tools,
    slotOf,
    nameOf,
    postings,
    postingsA,
    lexemes: [...postings.keys()].sort(),
    names,
    nameSlots,
  };
}

/** `ids` in pages of whole services holding about {@link INDEX_PAGE} tools (a service's tool count is in its fingerprint). */
function pages(ids: string[], fingerprints: Map<string, { tools: number }>): string[][] {
  const out: string[][] = [];
  let page: string[] = [];
  let tools = 0;
  for (const id of ids) {
    const n = fingerprints.get(id)?.tools ?? 0;
    if (page.length && tools + n > INDEX_PAGE) {
      out.push(page);
      page = [];
      tools = 0;
    }
    page.push(id);
    tools += n;
  }
  if (page.length) out.push(page);
  return out;
}

/**
 * Bring the index up to date unless that is under way: read the fingerprints, re-read the changed
 * services (in pages of {@link INDEX_PAGE}), drop the deleted ones, rebuild the look-ups; again if
 * this instance changed the registry meanwhile. Failures are logged; the previous index stays.
 */
export function refreshToolIndex(ctx: AppContext): Promise<void> {
  const state = searchStateOf(ctx);
  return refreshOnce(ctx, 'toolIndexRefresh', 'search tool index refresh failed', async (generation, checkedAt) => {
    const fingerprints = await catalogFingerprints(ctx);
    const prev = state.toolIndex;
    const changed = [...fingerprints]
      .filter(([id, fp]) => prev?.fingerprints.get(id) !== fp.fingerprint)
      .map(([id]) => id);
    const removed = prev ? [...prev.services.keys()].filter((id) => !fingerprints.has(id)) : [];
    if (prev && !changed.length && !removed.length) {
      prev.generation = generation;
      prev.checkedAt = checkedAt;
    } else {
      const services = new Map(prev?.services);
      for (const id of [...removed, ...changed]) services.delete(id);
      const words = new Map<string, string>();
      const intern = (s: string) => words.get(s) ?? (words.set(s, s), s);
      for (const page of pages(changed, fingerprints)) {
        const rows = await catalogIndexRows(ctx, page);
        for (const r of rows.services) services.set(r.id, serviceOf(r, intern));
        for (const r of rows.tools) {
          const s = services.get(r.service_id);
          if (s) s.tools.push(toolOf(r, s, intern));
        }
        for (const r of rows.services) services.get(r.id)!.tools.sort((a, b) => (a.id < b.id ? -1 : 1));
        await new Promise((resolve) => setImmediate(resolve));
      }
      state.toolIndex = derive(
        generation,
        checkedAt,
        new Map([...fingerprints].map(([id, fp]) => [id, fp.fingerprint])),
        services,
      );
    }
  });
}

/**
 * The index to rank with, or null (then SQL ranks): current with this instance's writes (waiting
 * for a refresh at most {@link INDEX_WAIT_MS}); checked for other instances' writes in the
 * background every `CACHE_TTL_MS` (PostgreSQL). Null before the first build has finished.
 */
export async function currentToolIndex(ctx: AppContext): Promise<ToolIndex | null> {
  const state = searchStateOf(ctx);
  const idx = state.toolIndex;
  if (idx && idx.generation === catalogGeneration(ctx)) {
    // Other instances write only to PostgreSQL (a PGlite data directory belongs to one process).
    if (
      ctx.database.engine === 'postgres' &&
      Date.now() - idx.checkedAt >= ctx.config.cacheTtlMs &&
      !state.toolIndexRefresh
    )
      void refreshToolIndex(ctx);
    return idx;
  }
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    refreshToolIndex(ctx),
    new Promise<void>((resolve) => (timer = setTimeout(resolve, INDEX_WAIT_MS))),
  ]);
  clearTimeout(timer);
  const now = state.toolIndex;
  return now && now.generation === catalogGeneration(ctx) ? now : null;
}

/**
 * Each word's lexemes under the `english` configuration, from the application's cache or one
 * statement for the words not in it.
 */
export async function lexemesOf(ctx: AppContext, words: string[]): Promise<Map<string, string[]>> {
  const state = searchStateOf(ctx);
  const cache = (state.lexemes ??= new Map());
  const missing = [...new Set(words)].filter((w) => !cache.has(w));
  if (missing.length) {
    const found = await normalizeWords(ctx, missing);
    if (cache.size + missing.length > LEXEME_CACHE) cache.clear();
    for (const w of missing) cache.set(w, found.get(w) ?? []);
  }
  return new Map(words.map((w) => [w, cache.get(w)!]));
}

export type { RankedCandidate };
