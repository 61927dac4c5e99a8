/**
 * Catalog queries of the registry: the read-only search and lookup functions that the search and
 * analytics modules call (they never read registry tables themselves).
 *
 * Visibility everywhere: a service (and its tools) is visible to an account when it is
 * `published` or owned by that account.
 *
 * Full-text: PostgreSQL `tsvector` documents built from the tool (name split on `_`, `-` and
 * camelCase: weight A; description: B) and from its service (name and display name: C; category
 * and description: D), stored in generated columns and GIN-indexed (migration `search_documents`),
 * so ranking thousands of candidates reads them instead of parsing text again.
 * Fuzzy matching: pg_trgm `word_similarity` on tool and service names when the extension is
 * installed (checked once per database), so "wether" still finds `get_weather`; without it,
 * prefix and substring matching only ({@link catalogCapabilities}).
 */
import { sql, type SQL } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { execRows } from '../../db/client.js';
import { iso } from '../../http/ids.js';
import {
  RANK_WEIGHTS,
  SERVICE_DOC,
  SERVICE_TRGM,
  TOOL_NAME_DOC,
  TOOL_SERVICE_COLUMNS,
  TOOL_TRGM,
  catalogCapabilities,
  escapeLike,
  queryTerms,
  round,
  serviceCoreOf,
  type CatalogServiceCore,
  tagOverlap,
  toolServiceOf,
  tsquerySource,
  visible,
  withSearchSettings,
} from './catalog-sql.js';

// The lookups are re-exported so callers keep one entry point (`registry/catalog.js`).
export * from './catalog-lookups.js';
export * from './catalog-suggest.js';
export { catalogCapabilities, FUZZY_THRESHOLD, queryTerms, type CatalogCapabilities } from './catalog-sql.js';
export { catalogGeneration } from './executable.js';

/** The `to_tsquery` source of one term group: `('typed':* | 'correction' | …)`. */
function groupSource(g: TermGroup, label = ''): string {
  return `(${g.words.map((w, i) => `'${w.replace(/[^\p{L}\p{N}]/gu, '')}'${i === 0 && g.prefix ? `:*${label}` : label ? `:${label}` : ''}`).join(' | ')})`;
}

/** Default groups of plain query terms: weight 1 each, the last one also a prefix. */
function defaultGroups(terms: string[]): TermGroup[] {
  return terms.map((t, i) => ({ words: [t], prefix: i === terms.length - 1, weight: 1 }));
}

// ------------------------------------------------------------------ tool search

/** Input of {@link searchCatalogTools}. */
export interface CatalogToolQuery {
  /** Free text; absent → browse (filters only, ranked by popularity). */
  q?: string;
  /** Exact category of the service. */
  category?: string;
  /** A tag the service carries (case-insensitive). */
  tag?: string;
  /** Service id (`svc_…`) or name. */
  service?: string;
  limit: number;
  offset: number;
  /** Usage per tool id (e.g. calls over the last 30 days), blended into the score. */
  popularity?: ReadonlyMap<string, number>;
  /** Require every term (default) or any term. */
  mode?: 'all' | 'any';
  /**
   * Full-text terms, each with the words it may match (the typed word first, then its typo
   * corrections) and its weight in the relevance sum (e.g. inverse document frequency). Absent:
   * one group per query term, weight 1, the last one also as a prefix.
   */
  groups?: TermGroup[];
}

/** One query term for full-text matching: a document matches it when it contains any of `words`. */
export interface TermGroup {
  /** Lower-cased words (letters and digits); the first is the typed one. */
  words: string[];
  /** The first word also matches as a prefix (search-as-you-type, last term). */
  prefix: boolean;
  /** Weight of this term in the relevance (> 0). */
  weight: number;
}

/** One ranked tool. */
export interface CatalogToolHit {
  tool: { id: string; name: string; description: string; method: string; status: string; created_at: string };
  service: {
    id: string;
    name: string;
    display_name: string;
    category: string | null;
    tags: string[];
    status: string;
    owned: boolean;
  };
  /** Final score: text relevance × (1 + 0.5 × popularity); popularity alone when browsing. */
  score: number;
  /** Text relevance: ts_rank over the weighted documents + fuzzy name similarity + exact-name bonus. */
  text_score: number;
  /** Calls in the popularity window and their normalised log score (0..1). */
  calls: number;
  popularity: number;
  /** How the tool matched: full text, fuzzy (trigram) or substring only, or `filter` when browsing. */
  match: 'text' | 'fuzzy' | 'substring' | 'filter';
}

/** Candidates ranked by text relevance before popularity re-ranks them (and the deepest page). */
export const MAX_CANDIDATES = 1000;
/**
 * Text matches that get the full relevance per page window: the best by pre-score (term groups in
 * the stored documents), in steps of this many as the requested page goes deeper.
 */
export const PRESCORED = 300;
/**
 * Fuzzy (trigram) name matches that get the full relevance, the most similar names first, in steps
 * of this many as the requested page goes deeper (`found` still counts them all).
 */
export const PRESCORED_NAMES = 100;
/** Tools considered when browsing without `q` (newest first), re-ranked by popularity. */
export const MAX_BROWSE = 5000;

/**
 * Ranked tools visible to `accountId` (null: published only), in two short queries:
 *  1. candidates and their text relevance — from the indexed full-text documents of tools and of
 *     their services, trigram name similarity (pg_trgm) or, without it, name substrings; at most
 *     {@link MAX_CANDIDATES} by relevance ({@link MAX_BROWSE} newest when browsing); `found`
 *     counts every match;
 *  2. details of the requested page, after blending popularity in (text × (1 + 0.5 × pop), where
 *     pop = ln(1 + calls) / ln(1 + max calls)).
 */
export async function searchCatalogTools(
  ctx: AppContext,
  accountId: string | null,
  input: CatalogToolQuery,
): Promise<{ hits: CatalogToolHit[]; found: number; fuzzy: boolean }> {
  const { fuzzy } = await catalogCapabilities(ctx);
  const raw = (input.q ?? '').trim().toLowerCase().slice(0, 200);
  const terms = queryTerms(raw);
  const groups = (input.groups ?? defaultGroups(terms)).filter((g) => g.words.length > 0);
  const tsq = groups.length ? groups.map((g) => groupSource(g)).join(input.mode === 'any' ? ' | ' : ' & ') : null;
  const like = raw ? `%${escapeLike(raw)}%` : null;
  const filters = toolFilters(accountId, input);

  // Relevance of a full-text hit: the weighted mean of each term group's ts_rank (a document that
  // matches more, rarer terms in stronger fields ranks higher: BM25F's shape without length norms).
  const weightSum = groups.reduce((n, g) => n + g.weight, 0) || 1;
  // Without groups (SEARCH_QUERY_REWRITE=off) the ranking stays as it was: one ts_rank of the whole
  // query, full trigram similarity, no name coverage.
  const legacy = !input.groups;
  const q = (i: number, label = '') => sql.raw(`qq.q${i}${label}`);
  const weighted = (term: (i: number) => SQL) =>
    sql.join(
      groups.map((g, i) => sql`${sql.raw(String(g.weight))}::float8 * ${term(i)}`),
      sql` + `,
    );
  const fts =
    legacy && tsq
      ? sql`(case when c.txt then ts_rank(${RANK_WEIGHTS}, c.doc, qq.query) else 0 end)`
      : tsq
        ? sql`(case when c.txt then (${weighted((i) => sql`ts_rank(${RANK_WEIGHTS}, c.doc, ${q(i)})`)}) / ${weightSum}::float8 else 0 end)`
        : sql`0::float4`;
  const fuzzyScore = fuzzy
    ? sql`greatest(word_similarity(${raw}, c.ttrgm), 0.6 * word_similarity(${raw}, c.strgm))`
    : sql`(case when c.ttrgm like ${like} or lower(c.name) like ${like} then 0.5 when c.strgm like ${like} then 0.3 else 0 end)`;
  // Name coverage (Algolia's "words" and "exact" criteria on the name): the weighted share of the
  // query's terms found in the tool name × how much of the name they cover, so `issues_create`
  // beats `orgs_create_issue_type` for "create issue".
  const inName = (i: number) => sql`(c.nv @@ ${q(i)})::int`;
  const nameCoverage =
    tsq && !legacy
      ? sql`(${weighted(inName)}) / ${weightSum}::float8
          * (0.5 + 0.5 * least(1, (${sql.join(
            groups.map((_, i) => inName(i)),
            sql` + `,
          )})::float8 / greatest(length(c.nv), 1)))`
      : sql`0`;
  const bonus = sql`(case when lower(c.name) = ${raw} or c.ttrgm = ${raw} then 0.5 else 0 end) + (case when c.stag then 0.1 else 0 end) + 0.6 * ${nameCoverage}`;

  // Two phases, so the cost does not grow with the number of matches (a plain question matches
  // thousands of tools once relaxed to any word):
  //  1. candidates: the visible services once (a few hundred rows: their text, tag and fuzzy-name
  //     matches), then the tools whose own document matches, or whose service matched (indexed);
  //     each gets a cheap pre-score from the stored document — the weighted term groups it holds
  //     in its name (weight A) and anywhere, plus its service's share — and only the best
  //     `prescored` go on, with the `prescoredNames` most similar fuzzy (trigram) name matches
  //     (all name matches without pg_trgm); `found` counts them all;
  //  2. the full relevance of those (ts_rank per term group, trigram similarity, name coverage),
  //     the best MAX_CANDIDATES kept.
  const prescored = PRESCORED * Math.ceil((input.offset + input.limit) / PRESCORED);
  const prescoredNames = PRESCORED_NAMES * Math.ceil((input.offset + input.limit) / PRESCORED_NAMES);
  const preTool =
    tsq && !legacy
      ? sql`(${weighted((i) => sql`(case when t.search_doc @@ ${q(i)} then 0.4 + 0.6 * (t.search_doc @@ ${q(i, 'a')})::int else 0 end)`)})`
      : tsq
        ? sql`(0.6 * (t.search_doc @@ qq.querya)::int + 0.4 * (t.search_doc @@ qq.query)::int) * ${weightSum}::float8`
        : sql`0`;
  const preService =
    tsq && !legacy
      ? sql`(${weighted((i) => sql`(s.search_doc @@ ${q(i)})::int`)})`
      : tsq
        ? sql`(s.search_doc @@ qq.query)::int * ${weightSum}::float8`
        : sql`0`;
  // Fuzzy name matches of services and tools come from the trigram indexes (word_similarity costs
  // ~10 µs a call: it is computed only for the few hundred scored rows).
  const fuzzyServices = fuzzy
    ? sql`select s.id from services s where ${raw} <% ${SERVICE_TRGM}`
    : sql`select s.id from services s where ${SERVICE_TRGM} like ${like}`;
  // A service's match brings in all its tools: for the full query (every term group, in its
  // text), a tag equal to a query word, or a fuzzy name. Relaxed to any word, only the full-query
  // text match does (a word as common as a tag every service carries would bring in the catalog).
  const anyMode = input.mode === 'any';
  const serviceMatch = [
    ...(tsq ? [sql`s.search_doc @@ qq.queryall`] : []),
    ...(terms.length && !anyMode ? [tagOverlap(terms)] : []),
    sql`s.id in (select id from fz)`,
  ];
  const textCandidates = tsq
    ? sql`t.search_doc @@ qq.query or t.service_id = any(array(select id from vs where matched))`
    : sql`t.service_id = any(array(select id from vs where matched))`;
  const nameCandidates = fuzzy
    ? sql`${raw} <% ${TOOL_TRGM}`
    : sql`(${TOOL_TRGM} like ${like} or lower(t.name) like ${like})`;
  const queryColumns = sql.join(
    [
      sql`${tsQueryOf(tsq)} as query`,
      sql`${tsQueryOf(tsq && groups.map((g) => groupSource(g)).join(' & '))} as queryall`,
      sql`${tsq ? sql`to_tsquery('english'::regconfig, ${groups.map((g) => groupSource(g, 'A')).join(input.mode === 'any' ? ' | ' : ' & ')})` : sql`null::tsquery`} as querya`,
      ...groups.flatMap((g, i) => [
        sql`to_tsquery('english'::regconfig, ${groupSource(g)}) as ${sql.raw(`q${i}`)}`,
        sql`to_tsquery('english'::regconfig, ${groupSource(g, 'A')}) as ${sql.raw(`q${i}a`)}`,
      ]),
    ],
    sql`, `,
  );

  const query = raw
    ? sql`with qq as materialized (select ${queryColumns}),
              fz as materialized (${fuzzyServices}),
              vs as materialized (
                select s.id, ${terms.length ? tagOverlap(terms) : sql`false`} as stag,
                       (${sql.join(serviceMatch, sql` or `)}) as matched, ${tsq ? sql`s.search_doc @@ qq.query` : sql`false`} as stxt,
                       ${preService} as spre
                from services s, qq where ${sql.join(filters, sql` and `)}),
              tm as materialized (select t.id, t.service_id, ${preTool} as pt from tools t, qq where ${textCandidates}),
              pre as materialized (
                select tm.id, tm.service_id, vs.stag, vs.stxt, tm.pt + 0.4 * vs.spre + (case when vs.stag then 0.1 else 0 end) as pre
                from tm join vs on vs.id = tm.service_id),
              nm as materialized (select t.id, t.service_id${fuzzy ? sql`, ${TOOL_TRGM} as n` : sql``} from tools t where ${nameCandidates}),
              named as materialized (select nm.id, nm.service_id, vs.stag, vs.stxt${fuzzy ? sql`, word_similarity(${raw}, nm.n) as ws` : sql``} from nm join vs on vs.id = nm.service_id),
              cand as (select id, service_id, stag, stxt from (select id, service_id, stag, stxt from pre order by pre desc, id desc limit ${prescored}::int) best
                       union select id, service_id, stag, stxt from ${fuzzy ? sql`(select * from named order by ws desc, id desc limit ${prescoredNames}::int) nb` : sql`named`}),
              c as materialized (
                select t.id, t.name, t.search_doc || s.search_doc as doc, ${TOOL_NAME_DOC} as nv, ${TOOL_TRGM} as ttrgm, ${SERVICE_TRGM} as strgm, cand.stag,
                       ${tsq ? sql`(t.search_doc @@ qq.query or cand.stxt)` : sql`false`} as txt
                from cand join tools t on t.id = cand.id join services s on s.id = cand.service_id, qq)
              select id, fts, fz, bonus, (select count(*) from (select id from pre union select id from named) a) as found
              from (select c.id, ${fts} as fts, ${fuzzyScore} as fz, ${bonus} as bonus from c, qq) x
              order by fts + fz + bonus desc, id desc
              limit ${MAX_CANDIDATES}::int`
    : sql`select t.id, 0 as fts, 0 as fz, 0 as bonus, count(*) over () as found
              from tools t join services s on s.id = t.service_id
              where ${sql.join(filters, sql` and `)}
              order by t.id desc limit ${MAX_BROWSE}::int`;
  const ranked = await withSearchSettings(ctx, fuzzy && !!raw, (tx) =>
    execRows<RankedCandidate & { found: string | number }>(tx, query),
  );
  return catalogToolPage(ctx, accountId, input, {
    ranked,
    found: ranked.length ? Number(ranked[0].found) : 0,
    fuzzy,
    legacy,
  });
}

/** A candidate with its relevance parts (full text, fuzzy name, bonuses), before popularity. */
export interface RankedCandidate {
  id: string;
  fts: number;
  fz: number;
  bonus: number;
}

/** The SQL filters of a tool search: visible to `accountId`, and the query's category, tag and service. */
function toolFilters(accountId: string | null, input: CatalogToolQuery): SQL[] {
  const filters: SQL[] = [visible(accountId)];
  if (input.category) filters.push(sql`s.category = ${input.category}`);
  if (input.tag) filters.push(sql`exists (select 1 from unnest(s.tags) g where lower(g) = ${input.tag.toLowerCase()})`);
  if (input.service)
    filters.push(input.service.startsWith('svc_') ? sql`s.id = ${input.service}` : sql`s.name = ${input.service}`);
  return filters;
}

/**
 * The requested page of a ranked tool search: popularity blended in (text × (1 + 0.5 × pop)),
 * ordered, cut, and the page's tools read — only those still visible to `accountId` and passing
 * the filters (candidates from the in-process index may be stale: such a hit is left out).
 * `legacy`: the ranking without term groups (the fuzzy score then counts in full).
 */
export async function catalogToolPage(
  ctx: AppContext,
  accountId: string | null,
  input: CatalogToolQuery,
  res: { ranked: RankedCandidate[]; found: number; fuzzy: boolean; legacy: boolean },
): Promise<{ hits: CatalogToolHit[]; found: number; fuzzy: boolean }> {
  const { found, fuzzy, legacy } = res;
  const raw = (input.q ?? '').trim();
  // Blend popularity, order, cut the page.
  const popularityOf = popularityScorer(input.popularity ?? new Map<string, number>());
  const scored = res.ranked.map((r) => {
    // Trigram similarity of the whole query to the name rescues typos and odd spellings; once the
    // words themselves matched, it only breaks ties (it favours names holding the query in order).
    const text = Number(r.fts) + (Number(r.fts) > 0 && !legacy ? 0.25 : 1) * Number(r.fz) + Number(r.bonus);
    const { calls, p } = popularityOf(r.id);
    return { id: r.id, fts: Number(r.fts), fz: Number(r.fz), text, calls, p, score: raw ? text * (1 + 0.5 * p) : p };
  });
  scored.sort((a, b) => b.score - a.score || b.calls - a.calls || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
  const page = scored.slice(input.offset, input.offset + input.limit);
  if (!page.length) return { hits: [], found, fuzzy };

  const details = new Map(
    (
      await execRows<Record<string, unknown>>(
        ctx.db,
        sql`select t.id, t.name, t.description, t.method, t.status, t.created_at,
                   ${TOOL_SERVICE_COLUMNS}, (s.owner_id = ${accountId ?? ''}) as owned
            from tools t join services s on s.id = t.service_id
            where t.id in (${sql.join(
              page.map((p) => sql`${p.id}`),
              sql`, `,
            )}) and ${sql.join(toolFilters(accountId, input), sql` and `)}`,
      )
    ).map((r) => [String(r.id), r]),
  );
  const hits: CatalogToolHit[] = [];
  for (const h of page) {
    const r = details.get(h.id);
    if (!r) continue; // deleted or hidden since it was ranked
    hits.push({
      tool: {
        id: h.id,
        name: String(r.name),
        description: String(r.description),
        method: String(r.method),
        status: String(r.status),
        created_at: iso(r.created_at as Date | string),
      },
      service: { ...toolServiceOf(r), owned: Boolean(r.owned) },
      score: round(h.score),
      text_score: round(h.text),
      calls: h.calls,
      popularity: round(h.p),
      match: !raw ? 'filter' : matchOf(h.fts, h.fz, fuzzy),
    });
  }
  return { hits, found, fuzzy };
}

/** How a hit matched, from its full-text and fuzzy (or substring) scores. */
function matchOf(fts: number, fz: number, fuzzy: boolean): 'text' | 'fuzzy' | 'substring' {
  return fts > 0 ? 'text' : fuzzy && fz > 0 ? 'fuzzy' : fz > 0 ? 'substring' : 'text';
}

/** The `qq` query: the parsed tsquery source, or a null tsquery when there are no terms. */
function tsQueryOf(tsq: string | null): SQL {
  return tsq ? sql`to_tsquery('english'::regconfig, ${tsq})` : sql`null::tsquery`;
}

// ------------------------------------------------------------------ service search

/** One ranked service. */
export interface CatalogServiceHit extends CatalogServiceCore {
  owned: boolean;
  tool_count: number;
  score: number;
  match: 'text' | 'fuzzy' | 'substring';
}

/** Services visible to `accountId` matching `q` (full text over names, category, description; tags; fuzzy names). */
export async function searchCatalogServices(
  ctx: AppContext,
  accountId: string | null,
  input: { q: string; limit: number },
): Promise<{ hits: CatalogServiceHit[]; found: number }> {
  const { fuzzy } = await catalogCapabilities(ctx);
  const raw = input.q.trim().toLowerCase().slice(0, 200);
  const terms = queryTerms(raw);
  if (!raw) return { hits: [], found: 0 };
  const tsq = terms.length ? tsquerySource(terms, '&') : null;
  const like = `%${escapeLike(raw)}%`;
  const fts = tsq ? sql`ts_rank(${RANK_WEIGHTS}, ${SERVICE_DOC}, (select query from qq))` : sql`0::float4`;
  const fz = fuzzy
    ? sql`word_similarity(${raw}, ${SERVICE_TRGM})`
    : sql`(case when ${SERVICE_TRGM} like ${like} then 0.5 else 0 end)`;
  const textMatch = tsq ? sql`${SERVICE_DOC} @@ (select query from qq)` : sql`false`;
  const fuzzyMatch = fuzzy ? sql`${raw} <% ${SERVICE_TRGM}` : sql`${SERVICE_TRGM} like ${like}`;
  const tagMatch = terms.length ? tagOverlap(terms) : sql`false`;
  const rows = await withSearchSettings(ctx, fuzzy, (tx) =>
    execRows<Record<string, unknown>>(
      tx,
      sql`with qq as (select ${tsQueryOf(tsq)} as query),
          scored as (
            select s.id, s.name, s.display_name, s.description, s.category, s.tags, s.status, (s.owner_id = ${accountId ?? ''}) as owned,
                   (select count(*) from tools t where t.service_id = s.id) as tool_count,
                   ${fts} * 4 as fts, ${fz} as fz,
                   (case when lower(s.name) = ${raw} or lower(s.display_name) = ${raw} then 0.5 else 0 end) + (case when ${tagMatch} then 0.2 else 0 end) as bonus
            from services s
            where ${visible(accountId)} and (${textMatch} or ${fuzzyMatch} or ${tagMatch})
          )
          select *, fts + fz + bonus as score, count(*) over () as found from scored
          order by score desc, id desc limit ${input.limit}::int`,
    ),
  );
  return {
    found: rows.length ? Number(rows[0].found) : 0,
    hits: rows.map((r) => ({
      ...serviceCoreOf(r),
      owned: Boolean(r.owned),
      tool_count: Number(r.tool_count),
      score: round(Number(r.score)),
      match: matchOf(Number(r.fts), Number(r.fz), fuzzy),
    })),
  };
}

/**
 * Popularity of a tool in [0, 1] from recent call counts (`pop`: tool id → calls): log(1 + calls) /
 * log(1 + the most calls of any tool), so one very popular tool does not flatten the rest.
 */
export function popularityScorer(pop: ReadonlyMap<string, number>): (id: string) => { calls: number; p: number } {
  let maxCalls = 1;
  for (const v of pop.values()) if (v > maxCalls) maxCalls = v;
  const norm = Math.log1p(maxCalls);
  return (id) => {
    const calls = pop.get(id) ?? 0;
    return { calls, p: Math.log1p(calls) / norm };
  };
}
