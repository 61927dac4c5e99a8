/**
 * Tool search (`GET /search/tools`, the MCP face's `search_tools`, the broker): full-text relevance
 * with typo corrections and term weights ({@link planQuery}) blended with popularity, fused with the
 * semantic arm (sentence vectors, `semantic.ts`) by weighted reciprocal rank when it is on. The
 * full-text ranking runs over the in-process tool index (`tool-index.ts`, `tool-rank.ts`) when it can
 * answer, else in SQL (`searchCatalogTools`); both give the same hits.
 */
import type { Static } from 'typebox';
import type { AppContext } from '../../context.js';
import { accountOf, type Principal } from '../../http/auth.js';
import { AppError } from '../../http/errors.js';
import { decodeCursor, encodeCursor } from '../../http/pagination.js';
import {
  catalogCapabilities,
  catalogToolPage,
  getCatalogTools,
  popularityScorer,
  queryTerms,
  searchCatalogTools,
  type CatalogToolHit,
  type CatalogToolQuery,
} from '../registry/catalog.js';
import { topTools } from '../sessions/usage.js';
import { highlightFields } from './highlight.js';
import { planQuery } from './query.js';
import type { ToolHitSchema, ToolSearchQuery } from './schemas.js';
import { fuseRanks, nearestTools, SEMANTIC_K } from './semantic.js';
import { searchStateOf, type PopularityTable } from './state.js';
import { currentToolIndex, lexemesOf } from './tool-index.js';
import { rankFromIndex } from './tool-rank.js';

/** Deepest result reachable by paging (Algolia's default `paginationLimitedTo`). */
export const MAX_OFFSET = 1000;

const DAY_MS = 86_400_000;

/** UTC day (`YYYY-MM-DD`) `days` days before `now` (0 = today). */
export function dayBefore(now: Date, days: number): string {
  return new Date(now.getTime() - days * DAY_MS).toISOString().slice(0, 10);
}

/** Whole days a window covers (`24h` → 1: today and yesterday are counted). */
export function windowDays(window: '24h' | '7d' | '30d' | '90d'): number {
  return { '24h': 1, '7d': 7, '30d': 30, '90d': 90 }[window];
}

// ------------------------------------------------------------------ popularity

/**
 * Calls per tool over the last `SEARCH_POPULARITY_DAYS` days (all users; top 1000 tools), from the
 * usage counters; cached in-process for `SEARCH_POPULARITY_CACHE_MS`.
 */
export async function toolPopularity(ctx: AppContext): Promise<PopularityTable> {
  const ttl = ctx.config.search.popularityCacheMs;
  const state = searchStateOf(ctx);
  const cached = state.popularity;
  if (cached && ttl > 0) {
    const table = await cached.catch(() => null);
    if (table && Date.now() - table.at < ttl) return table;
  }
  const fresh = topTools(ctx, { since: dayBefore(new Date(), ctx.config.search.popularityDays), limit: 1000 }).then(
    (rows) => ({
      at: Date.now(),
      rows: rows.map((r) => ({ tool_id: r.tool_id, service_id: r.service_id, calls: r.calls })),
      byTool: new Map(rows.map((r) => [r.tool_id, r.calls])),
    }),
  );
  state.popularity = fresh;
  fresh.catch(() => {
    if (state.popularity === fresh) state.popularity = undefined;
  });
  return fresh;
}

// ------------------------------------------------------------------ /search/tools

/** One tool hit as the API shows it ({@link ToolHitSchema}; `match: semantic` when found by the semantic arm alone). */
export type ToolHitView = Static<typeof ToolHitSchema>;

/** A ranked tool before it is shown: a full-text hit, or a tool found by the semantic arm alone. */
type RankedTool = Omit<CatalogToolHit, 'match' | 'tool'> & {
  tool: Omit<CatalogToolHit['tool'], 'created_at'>;
  match: ToolHitView['match'];
};

/**
 * Ranks (from 0) within which copies of a tool — the same name and the same first description
 * line (summary) in another service, e.g. a mirrored or re-published API — come after the distinct
 * tools (Algolia's `distinct`, as a demotion: no copy is hidden).
 */
export const DISTINCT_DEPTH = 50;

/** `hits` with every tool whose name and summary an earlier hit has moved after the others, order kept otherwise. */
export function distinctFirst<T extends { tool: { name: string; description: string } }>(hits: T[]): T[] {
  const seen = new Set<string>();
  const first: T[] = [];
  const copies: T[] = [];
  for (const h of hits) {
    const key = `${h.tool.name.toLowerCase()}\n${h.tool.description.trim().split('\n')[0].trim().toLowerCase()}`;
    (seen.has(key) ? copies : first).push(h);
    seen.add(key);
  }
  return [...first, ...copies];
}

function toolHitView(h: RankedTool, terms: string[], fuzzy: boolean): ToolHitView {
  return {
    id: h.tool.id,
    name: h.tool.name,
    description: h.tool.description,
    method: h.tool.method,
    status: h.tool.status,
    service: h.service,
    score: h.score,
    text_score: h.text_score,
    popularity: { calls: h.calls, score: h.popularity },
    match: h.match,
    highlights: highlightFields(
      [
        ['name', h.tool.name],
        ['description', h.tool.description],
        ['service.display_name', h.service.display_name],
      ],
      terms,
      { fuzzy, maxLength: 200 },
    ),
  };
}

function offsetOf(cursor: string | undefined): number {
  const raw = decodeCursor(cursor);
  if (raw === undefined) return 0;
  const m = /^o:(\d{1,5})$/.exec(raw);
  if (!m || Number(m[1]) > MAX_OFFSET) {
    throw new AppError('validation_failed', 'cursor is malformed', {
      errors: [{ in: 'query', pointer: '/cursor', message: 'malformed cursor' }],
    });
  }
  return Number(m[1]);
}

/** Input of {@link searchTools}: the `GET /search/tools` query ({@link ToolSearchQuery}). */
export type ToolSearchInput = Static<typeof ToolSearchQuery>;

/**
 * Tools of published services and of the caller's own services, ranked: full-text relevance
 * (tool name > description > service name > service text) plus fuzzy name similarity, blended with
 * popularity; without `q`, filters only, most popular first. When no tool matches every term, or
 * the query is a question ("which …", "did …", "who …", "how many …") or holds a phrasal verb
 * ("turn off"), tools matching any term, its synonyms or what the question asks for are returned
 * (`relaxed`). With the semantic arm on (`SEARCH_SEMANTIC`) and a
 * `q`, the full-text ranking (at least {@link SEMANTIC_K} deep) and the {@link SEMANTIC_K} nearest
 * tools by sentence vector (visible ones, same filters) are fused by weighted reciprocal rank
 * (`score` is then the fused score; `text_score` stays the full-text one, 0 for `semantic` hits).
 * In the first {@link DISTINCT_DEPTH} ranks, copies of a tool come after the distinct tools
 * ({@link distinctFirst}).
 * @throws AppError validation_failed (malformed cursor)
 */
export async function searchTools(ctx: AppContext, principal: Principal, input: ToolSearchInput) {
  const started = performance.now();
  const limit = input.limit ?? 20;
  const offset = offsetOf(input.cursor);
  const q = (input.q ?? '').trim();
  const account = accountOf(principal);
  const semantic = q && ctx.config.search.semantic ? semanticHits(ctx, account, q, input) : null;
  const plan = ctx.config.search.queryRewrite
    ? await planQuery(ctx, q)
    : { groups: undefined, expanded: undefined, dropped: [], corrected: {}, question: false };
  const terms = [...queryTerms(q), ...Object.values(plan.corrected).flat()];
  const popularity = (await toolPopularity(ctx)).byTool;
  // The full-text ranking from the top when the page lies in the re-ordered head (copies after
  // distinct tools) or is fused: deep enough for the page, the head and the fusion.
  const windowed = !!q && (semantic !== null || offset < DISTINCT_DEPTH);
  const [from, size] = windowed
    ? [0, Math.max(offset + limit, DISTINCT_DEPTH, semantic ? SEMANTIC_K : 0)]
    : [offset, limit];
  const base = {
    q,
    category: input.category,
    tag: input.tag,
    service: input.service,
    limit: Math.min(size, MAX_OFFSET - from) || 1,
    offset: from,
    popularity,
    groups: plan.groups,
  };
  // Relax to any term, the words' synonyms and the question's words added (`plan.expanded`): a
  // question (on every page), or when no tool has every term in its text (name-similarity hits
  // alone don't count; first page).
  const relaxed = !!plan.groups && plan.groups.length > 1 && plan.question;
  let res = await rankedTools(ctx, account, relaxed ? { ...base, mode: 'any', groups: plan.expanded } : base);
  const relax =
    !relaxed &&
    (plan.groups
      ? plan.groups.length > 1 && offset === 0 && !res.hits.some((h) => h.match === 'text')
      : res.found === 0 && terms.length > 1);
  if (relax) res = await rankedTools(ctx, account, { ...base, mode: 'any', groups: plan.expanded });
  let ranked: RankedTool[] = res.hits;
  let found = res.found;
  if (semantic) {
    const near = await semantic;
    const lexical = new Set(ranked.map((h) => h.tool.id));
    const fused = fuseRanks([
      { ids: ranked.map((h) => h.tool.id), weight: 1 },
      { ids: near.map((t) => t.id), weight: ctx.config.search.semanticWeight },
    ]);
    const popularityOf = popularityScorer(popularity);
    const extra = near
      .filter((t) => !lexical.has(t.id))
      .map((t): RankedTool => {
        const { calls, p: raw } = popularityOf(t.id);
        const p = Math.round(raw * 1e4) / 1e4;
        return {
          tool: t,
          service: { ...t.service, owned: t.service.owner_id === account },
          score: 0,
          text_score: 0,
          calls,
          popularity: p,
          match: 'semantic',
        };
      });
    found += extra.length;
    const order = new Map([...ranked, ...extra].map((h, i) => [h.tool.id, i]));
    ranked = [...ranked, ...extra]
      .map((h) => ({ ...h, score: Math.round((fused.get(h.tool.id) ?? 0) * 1e6) / 1e6 }))
      .sort((a, b) => b.score - a.score || order.get(a.tool.id)! - order.get(b.tool.id)!);
  }
  if (windowed)
    ranked = [...distinctFirst(ranked.slice(0, DISTINCT_DEPTH)), ...ranked.slice(DISTINCT_DEPTH)].slice(
      offset,
      offset + limit,
    );
  const hits = ranked.map((h) => toolHitView(h, terms, res.fuzzy));
  const next = offset + hits.length;
  return {
    data: hits,
    next_cursor: hits.length === limit && next < Math.min(found, MAX_OFFSET) ? encodeCursor(`o:${next}`) : null,
    query: q,
    found,
    fuzzy: res.fuzzy,
    relaxed: relaxed || relax,
    corrected: plan.corrected,
    ignored: plan.dropped,
    took_ms: Math.round(performance.now() - started),
  };
}

/**
 * The ranked page of a full-text tool search: from the in-process index when it can answer
 * ({@link indexedToolSearch}), else from the registry's SQL ranking (the same answer).
 */
function rankedTools(ctx: AppContext, account: string | null, input: CatalogToolQuery) {
  return indexedToolSearch(ctx, account, input).then((page) => page ?? searchCatalogTools(ctx, account, input));
}

/**
 * {@link searchCatalogTools} over the in-process tool index (`tool-index.ts`, `tool-rank.ts`), SQL
 * reading only the page. Null when the index cannot answer: `SEARCH_INDEX=off`, browsing without
 * `q`, no term groups (`SEARCH_QUERY_REWRITE=off`), the index not built or not caught up with this
 * instance's writes, or a query word the index does not model.
 */
export async function indexedToolSearch(
  ctx: AppContext,
  account: string | null,
  input: CatalogToolQuery,
): Promise<Awaited<ReturnType<typeof searchCatalogTools>> | null> {
  if (!ctx.config.search.index || !input.q?.trim() || !input.groups) return null;
  const idx = await currentToolIndex(ctx);
  if (!idx) return null;
  const { fuzzy } = await catalogCapabilities(ctx);
  const lexemes = await lexemesOf(
    ctx,
    input.groups.flatMap((g) => g.words.map((w) => w.replace(/[^\p{L}\p{N}]/gu, ''))),
  );
  const ranked = rankFromIndex(idx, account, { ...input, groups: input.groups }, fuzzy, lexemes);
  return ranked && catalogToolPage(ctx, account, input, { ...ranked, fuzzy, legacy: false });
}

/**
 * The semantic arm: the nearest tools to `q` that `account` may see and that pass the filters, best
 * first. An encoder failure is logged and yields none (full-text search still answers).
 */
async function semanticHits(ctx: AppContext, account: string | null, q: string, input: ToolSearchInput) {
  try {
    const near = await nearestTools(ctx, q, SEMANTIC_K);
    const tools = new Map(
      (
        await getCatalogTools(
          ctx,
          account,
          near.map((n) => n.id),
        )
      ).map((t) => [t.id, t]),
    );
    const tag = input.tag?.toLowerCase();
    return near
      .map((n) => tools.get(n.id))
      .filter((t) => t !== undefined)
      .filter(
        (t) =>
          (!input.category || t.service.category === input.category) &&
          (!tag || t.service.tags.some((g) => g.toLowerCase() === tag)),
      )
      .filter(
        (t) =>
          !input.service ||
          (input.service.startsWith('svc_') ? t.service.id === input.service : t.service.name === input.service),
      );
  } catch (err) {
    ctx.log.warn({ err: (err as Error).message }, 'semantic tool search failed');
    return [];
  }
}
