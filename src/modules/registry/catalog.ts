/**
 * Catalog queries of the registry: the read-only search and lookup functions that the search and
 * analytics modules call (they never read registry tables themselves).
 *
 * Visibility everywhere: a service (and its tools) is visible to an account when it is
 * `published` or owned by that account.
 *
 * Full-text: PostgreSQL `tsvector` documents built from the tool (name split on `_`, `-` and
 * camelCase: weight A; description: B) and from its service (name and display name: C; category
 * and description: D). Both are expression-indexed (GIN, migration `search_indexes`), so the
 * expressions below must stay byte-for-byte equal to the indexed ones.
 * Fuzzy matching: pg_trgm `word_similarity` on tool and service names when the extension is
 * installed (checked once per database), so "wether" still finds `get_weather`; without it,
 * prefix and substring matching only ({@link catalogCapabilities}).
 */
import { sql, type SQL } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { execRows, type Database, type Db, type Tx } from '../../db/client.js';

// ------------------------------------------------------------------ capabilities

/** What the database offers to search. */
export interface CatalogCapabilities {
  /** pg_trgm is installed and fuzzy matching is enabled (`SEARCH_FUZZY`). */
  fuzzy: boolean;
}

const trgmByDatabase = new WeakMap<Database, Promise<boolean>>();

/** Detect pg_trgm (`pg_extension`) once per database; honours `SEARCH_FUZZY=off`. */
export async function catalogCapabilities(ctx: AppContext): Promise<CatalogCapabilities> {
  if (ctx.config.search.fuzzy === 'off') return { fuzzy: false };
  let p = trgmByDatabase.get(ctx.database);
  if (!p) {
    p = execRows(ctx.db, sql`select 1 from pg_extension where extname = 'pg_trgm'`).then(
      (r) => r.length > 0,
      () => false,
    );
    trgmByDatabase.set(ctx.database, p);
  }
  return { fuzzy: await p };
}

// ------------------------------------------------------------------ shared SQL (keep equal to migration `search_indexes`)

/** Tool name as words: `getWeather`/`get_weather`/`get-weather` → `get Weather`/`get weather`. */
const TOOL_NAME_WORDS_SQL = `regexp_replace(regexp_replace(t.name, '([a-z0-9])([A-Z])', '\\1 \\2', 'g'), '[_-]+', ' ', 'g')`;
const TOOL_NAME_WORDS = sql.raw(TOOL_NAME_WORDS_SQL);
/** Full-text document of a tool (indexed: `tools_search_idx`). */
const TOOL_DOC = sql.raw(
  `(setweight(to_tsvector('english'::regconfig, regexp_replace(regexp_replace(t.name, '([a-z0-9])([A-Z])', '\\1 \\2', 'g'), '[_-]+', ' ', 'g')), 'A') || setweight(to_tsvector('english'::regconfig, t.description), 'B'))`,
);
/** Full-text document of a service (indexed: `services_search_idx`). */
const SERVICE_DOC = sql.raw(
  `(setweight(to_tsvector('english'::regconfig, (s.name || ' ') || s.display_name), 'C') || setweight(to_tsvector('english'::regconfig, (coalesce(s.category, '') || ' ') || s.description), 'D'))`,
);
/** Lower-cased words of a tool name for trigram matching (indexed: `tools_name_trgm_idx`). */
const TOOL_TRGM = sql.raw(`lower(regexp_replace(regexp_replace(t.name, '([a-z0-9])([A-Z])', '\\1 \\2', 'g'), '[_-]+', ' ', 'g'))`);
/** Lower-cased service name and display name for trigram matching (indexed: `services_name_trgm_idx`). */
const SERVICE_TRGM = sql.raw(`lower((s.name || ' ') || s.display_name)`);
/** ts_rank weights {D, C, B, A}: tool name > tool description > service name > service text. */
const RANK_WEIGHTS = sql.raw(`'{0.05, 0.15, 0.4, 1.0}'::float4[]`);

/** `word_similarity` needed for a fuzzy name match (pg_trgm's default 0.6 misses one-letter typos in short words). */
export const FUZZY_THRESHOLD = 0.45;

function visible(accountId: string | null): SQL {
  return accountId ? sql`(s.status = 'published' or s.owner_id = ${accountId})` : sql`s.status = 'published'`;
}

/** Query terms: lower-cased runs of letters/digits, at most 8. */
export function queryTerms(q: string): string[] {
  return (q.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).slice(0, 8).map((t) => t.slice(0, 64));
}

/** A `to_tsquery` source: all terms (AND) or any (OR); the last term also matches as a prefix (search-as-you-type). */
function tsquerySource(terms: string[], op: '&' | '|'): string {
  return terms.map((t, i) => `'${t}'${i === terms.length - 1 ? ':*' : ''}`).join(` ${op} `);
}

/** The `to_tsquery` source of one term group: `('typed':* | 'correction' | …)`. */
function groupSource(g: TermGroup): string {
  return `(${g.words.map((w, i) => `'${w.replace(/[^\p{L}\p{N}]/gu, '')}'${i === 0 && g.prefix ? ':*' : ''}`).join(' | ')})`;
}

/** Default groups of plain query terms: weight 1 each, the last one also a prefix. */
function defaultGroups(terms: string[]): TermGroup[] {
  return terms.map((t, i) => ({ words: [t], prefix: i === terms.length - 1, weight: 1 }));
}

/** A text[] literal of query terms (letters and digits only, so no quoting issue). */
function termsArray(terms: string[]): string {
  return `{${terms.map((t) => `"${t}"`).join(',')}}`;
}

/** True when one of the service's tags equals a term (case-insensitive): one array overlap per row. */
function tagOverlap(terms: string[]): SQL {
  return sql`(lower(s.tags::text))::text[] && ${termsArray(terms)}::text[]`;
}

function escapeLike(s: string): string {
  return s.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/**
 * Run `fn` in a transaction with the search settings: the pg_trgm word-similarity threshold used by
 * the indexed `<%` operator; JIT off (compiling costs more than these short queries); sequential
 * scans discouraged — the planner prices the regexp/trigram expressions as cheap and would scan
 * every tool computing them, where the expression indexes answer in well under a millisecond; and
 * joins in written order (candidates → tools → services by primary key), since fresh or PGlite
 * tables (no autovacuum) have no statistics to pick that order from.
 */
const SEARCH_SETTINGS = sql.raw(`set_config('jit', 'off', true), set_config('enable_seqscan', 'off', true), set_config('join_collapse_limit', '1', true)`);

async function withSearchSettings<T>(ctx: AppContext, fuzzy: boolean, fn: (tx: Db | Tx) => Promise<T>): Promise<T> {
  return ctx.db.transaction(async (tx) => {
    await tx.execute(
      fuzzy
        ? sql`select ${SEARCH_SETTINGS}, set_config('pg_trgm.word_similarity_threshold', ${String(FUZZY_THRESHOLD)}, true)`
        : sql`select ${SEARCH_SETTINGS}`,
    );
    return fn(tx);
  });
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
  service: { id: string; name: string; display_name: string; category: string | null; tags: string[]; status: string; owned: boolean };
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
export async function searchCatalogTools(ctx: AppContext, accountId: string | null, input: CatalogToolQuery): Promise<{ hits: CatalogToolHit[]; found: number; fuzzy: boolean }> {
  const { fuzzy } = await catalogCapabilities(ctx);
  const raw = (input.q ?? '').trim().toLowerCase().slice(0, 200);
  const terms = queryTerms(raw);
  const groups = (input.groups ?? defaultGroups(terms)).filter((g) => g.words.length > 0);
  const tsq = groups.length ? groups.map(groupSource).join(input.mode === 'any' ? ' | ' : ' & ') : null;
  const like = raw ? `%${escapeLike(raw)}%` : null;
  const filters: SQL[] = [visible(accountId)];
  if (input.category) filters.push(sql`s.category = ${input.category}`);
  if (input.tag) filters.push(sql`exists (select 1 from unnest(s.tags) g where lower(g) = ${input.tag.toLowerCase()})`);
  if (input.service) filters.push(input.service.startsWith('svc_') ? sql`s.id = ${input.service}` : sql`s.name = ${input.service}`);

  // Candidate ids: each arm can use its own index; `txt` marks full-text hits (only they need ts_rank).
  const arms: SQL[] = [];
  if (raw) {
    if (tsq) {
      arms.push(sql`select t.id, true as txt from tools t where ${TOOL_DOC} @@ (select query from qq)`);
      arms.push(sql`select t.id, true as txt from tools t where t.service_id in (select s.id from services s where ${SERVICE_DOC} @@ (select query from qq))`);
      arms.push(sql`select t.id, false as txt from tools t where t.service_id in (select s.id from services s where ${tagOverlap(terms)})`);
    }
    if (fuzzy) {
      arms.push(sql`select t.id, false as txt from tools t where ${raw} <% ${TOOL_TRGM}`);
      arms.push(sql`select t.id, false as txt from tools t where t.service_id in (select s.id from services s where ${raw} <% ${SERVICE_TRGM})`);
    } else {
      arms.push(sql`select t.id, false as txt from tools t where ${TOOL_TRGM} like ${like} or lower(t.name) like ${like}`);
      arms.push(sql`select t.id, false as txt from tools t where t.service_id in (select s.id from services s where ${SERVICE_TRGM} like ${like})`);
    }
  }
  // Relevance of a full-text hit: the weighted mean of each term group's ts_rank (a document that
  // matches more, rarer terms in stronger fields ranks higher: BM25F's shape without length norms).
  const weightSum = groups.reduce((n, g) => n + g.weight, 0) || 1;
  // Without groups (SEARCH_QUERY_REWRITE=off) the ranking stays as it was: one ts_rank of the whole
  // query, full trigram similarity, no name coverage.
  const legacy = !input.groups;
  const fts = legacy && tsq
    ? sql`(case when c.txt then ts_rank(${RANK_WEIGHTS}, ${TOOL_DOC} || ${SERVICE_DOC}, (select query from qq)) else 0 end)`
    : tsq
    ? sql`(case when c.txt then (select coalesce(sum(u.w * ts_rank(${RANK_WEIGHTS}, d.doc, u.q)), 0) / ${weightSum}::float8
             from (select ${TOOL_DOC} || ${SERVICE_DOC} as doc) d, unnest((select qs from qq), (select ws from qq)) u(q, w)) else 0 end)`
    : sql`0::float4`;
  const fuzzyScore = fuzzy
    ? sql`greatest(word_similarity(${raw}, ${TOOL_TRGM}), 0.6 * word_similarity(${raw}, ${SERVICE_TRGM}))`
    : sql`(case when ${TOOL_TRGM} like ${like} or lower(t.name) like ${like} then 0.5 when ${SERVICE_TRGM} like ${like} then 0.3 else 0 end)`;
  // Name coverage (Algolia's "words" and "exact" criteria on the name): the weighted share of the
  // query's terms found in the tool name × how much of the name they cover, so `issues_create`
  // beats `orgs_create_issue_type` for "create issue".
  const nameCoverage = tsq && !legacy
    ? sql`(select coalesce(sum(u.w) filter (where n.v @@ u.q), 0) / ${weightSum}::float8
              * (0.5 + 0.5 * least(1, count(*) filter (where n.v @@ u.q)::float8 / greatest(max(length(n.v)), 1)))
           from (select to_tsvector('english'::regconfig, ${TOOL_NAME_WORDS}) as v) n, unnest((select qs from qq), (select ws from qq)) u(q, w))`
    : sql`0`;
  const bonus = sql`(case when lower(t.name) = ${raw} or ${TOOL_TRGM} = ${raw} then 0.5 else 0 end)
    + ${terms.length ? sql`(case when ${tagOverlap(terms)} then 0.1 else 0 end)` : sql`0`} + 0.6 * ${nameCoverage}`;

  const query = raw
    ? sql`with qq as (select ${tsQueryOf(tsq)} as query,
                       ${tsq ? sql`array[${sql.join(groups.map((g) => sql`to_tsquery('english'::regconfig, ${groupSource(g)})`), sql`, `)}]` : sql`null::tsquery[]`} as qs,
                       ${`{${groups.map((g) => g.weight).join(',')}}`}::float8[] as ws),
              c as (select id, bool_or(txt) as txt from (${sql.join(arms, sql` union all `)}) a group by id)
              select t.id, ${fts} as fts, ${fuzzyScore} as fz, ${bonus} as bonus, count(*) over () as found
              from c join tools t on t.id = c.id join services s on s.id = t.service_id
              where ${sql.join(filters, sql` and `)}
              order by 2 + 3 + 4 desc, t.id desc
              limit ${MAX_CANDIDATES}::int`
    : sql`select t.id, 0 as fts, 0 as fz, 0 as bonus, count(*) over () as found
              from tools t join services s on s.id = t.service_id
              where ${sql.join(filters, sql` and `)}
              order by t.id desc limit ${MAX_BROWSE}::int`;
  const ranked = await withSearchSettings(ctx, fuzzy && !!raw, (tx) => execRows<{ id: string; fts: number; fz: number; bonus: number; found: string | number }>(tx, query));
  const found = ranked.length ? Number(ranked[0].found) : 0;

  // Blend popularity, order, cut the page.
  const pop = input.popularity ?? new Map<string, number>();
  let maxCalls = 1;
  for (const v of pop.values()) if (v > maxCalls) maxCalls = v;
  const norm = Math.log1p(maxCalls);
  const scored = ranked.map((r) => {
    // Trigram similarity of the whole query to the name rescues typos and odd spellings; once the
    // words themselves matched, it only breaks ties (it favours names holding the query in order).
    const text = Number(r.fts) + (Number(r.fts) > 0 && !legacy ? 0.25 : 1) * Number(r.fz) + Number(r.bonus);
    const calls = pop.get(r.id) ?? 0;
    const p = Math.log1p(calls) / norm;
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
            where t.id in ${idList(page.map((p) => p.id))}`,
      )
    ).map((r) => [String(r.id), r]),
  );
  const hits: CatalogToolHit[] = [];
  for (const h of page) {
    const r = details.get(h.id);
    if (!r) continue; // deleted between the two queries
    hits.push({
      tool: { id: h.id, name: String(r.name), description: String(r.description), method: String(r.method), status: String(r.status), created_at: iso(r.created_at) },
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

/** Service columns of a tool row joined to its service (`t` join `s`), read back by {@link toolServiceOf}. */
const TOOL_SERVICE_COLUMNS = sql`s.id as service_id, s.name as service_name, s.display_name, s.category, s.tags, s.status as service_status`;

/** The service of a tool row selected with {@link TOOL_SERVICE_COLUMNS}. */
function toolServiceOf(r: Record<string, unknown>) {
  return {
    id: String(r.service_id),
    name: String(r.service_name),
    display_name: String(r.display_name),
    category: (r.category as string | null) ?? null,
    tags: (r.tags as string[]) ?? [],
    status: String(r.service_status),
  };
}

function round(n: number): number {
  return Number.isFinite(n) ? Math.round(n * 1e6) / 1e6 : 0;
}

function iso(v: unknown): string {
  return (v instanceof Date ? v : new Date(String(v))).toISOString();
}

// ------------------------------------------------------------------ service search

/** One ranked service. */
export interface CatalogServiceHit {
  id: string;
  name: string;
  display_name: string;
  description: string;
  category: string | null;
  tags: string[];
  status: string;
  owned: boolean;
  tool_count: number;
  score: number;
  match: 'text' | 'fuzzy' | 'substring';
}

/** Services visible to `accountId` matching `q` (full text over names, category, description; tags; fuzzy names). */
export async function searchCatalogServices(ctx: AppContext, accountId: string | null, input: { q: string; limit: number }): Promise<{ hits: CatalogServiceHit[]; found: number }> {
  const { fuzzy } = await catalogCapabilities(ctx);
  const raw = input.q.trim().toLowerCase().slice(0, 200);
  const terms = queryTerms(raw);
  if (!raw) return { hits: [], found: 0 };
  const tsq = terms.length ? tsquerySource(terms, '&') : null;
  const like = `%${escapeLike(raw)}%`;
  const fts = tsq ? sql`ts_rank(${RANK_WEIGHTS}, ${SERVICE_DOC}, (select query from qq))` : sql`0::float4`;
  const fz = fuzzy ? sql`word_similarity(${raw}, ${SERVICE_TRGM})` : sql`(case when ${SERVICE_TRGM} like ${like} then 0.5 else 0 end)`;
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

// ------------------------------------------------------------------ suggestions

/** One autocomplete entry. */
export interface CatalogSuggestion {
  type: 'service' | 'tool' | 'tag' | 'category';
  /** The completion (service name, tool name, tag or category). */
  text: string;
  /** Service display name (services only). */
  display?: string;
  /** Service id (services only). */
  id?: string;
  /** Visible services carrying it (tools: services with a tool of that name). */
  count: number;
  /** True when `text` itself starts with the prefix (else a later word does). */
  leading: boolean;
}

/**
 * Prefix completions among visible service names and display names, tool names (whole name or any
 * word of it), tags and categories; at most `limit` per kind (the caller merges).
 */
export async function suggestCatalog(ctx: AppContext, accountId: string | null, prefix: string, limit: number): Promise<CatalogSuggestion[]> {
  const p = prefix.trim().toLowerCase().slice(0, 100);
  if (!p) return [];
  const starts = `${escapeLike(p)}%`;
  const word = `% ${escapeLike(p)}%`;
  const vis = visible(accountId);
  const rows = await execRows<{ type: CatalogSuggestion['type']; text: string; display: string | null; id: string | null; n: number | string; is_leading: boolean }>(
    ctx.db,
    sql`(select 'service' as type, s.name as text, s.display_name as display, s.id as id, 1 as n,
                (lower(s.name) like ${starts} or lower(s.display_name) like ${starts}) as is_leading
         from services s
         where ${vis} and (lower(s.name) like ${starts} or lower(s.display_name) like ${starts} or lower(s.display_name) like ${word})
         order by is_leading desc, length(s.name), s.name limit ${limit}::int)
        union all
        (select 'tool', t.name, null, null, count(*), bool_or(lower(t.name) like ${starts})
         from tools t join services s on s.id = t.service_id
         where ${vis} and (lower(t.name) like ${starts} or (' ' || ${TOOL_TRGM}) like ${word})
         group by t.name order by bool_or(lower(t.name) like ${starts}) desc, count(*) desc, length(t.name), t.name limit ${limit}::int)
        union all
        (select 'tag', min(g), null, null, count(*), true
         from services s, unnest(s.tags) g
         where ${vis} and lower(g) like ${starts}
         group by lower(g) order by count(*) desc, lower(g) limit ${limit}::int)
        union all
        (select 'category', s.category, null, null, count(*), true
         from services s
         where ${vis} and lower(s.category) like ${starts}
         group by s.category order by count(*) desc, s.category limit ${limit}::int)`,
  );
  return rows.map((r) => ({
    type: r.type,
    text: r.text,
    ...(r.display ? { display: r.display } : {}),
    ...(r.id ? { id: r.id } : {}),
    count: Number(r.n),
    leading: Boolean(r.is_leading),
  }));
}

// ------------------------------------------------------------------ lookups

/** A service as the catalog shows it. */
export interface CatalogService {
  id: string;
  name: string;
  display_name: string;
  description: string;
  category: string | null;
  tags: string[];
  status: string;
  owner_id: string;
  tool_count: number;
  created_at: string;
  published_at: string | null;
}

/** The identifying and classifying columns of a raw service row, typed (shared by every service answer). */
function serviceCoreOf(r: Record<string, unknown>) {
  return {
    id: String(r.id),
    name: String(r.name),
    display_name: String(r.display_name),
    description: String(r.description),
    category: (r.category as string | null) ?? null,
    tags: (r.tags as string[]) ?? [],
    status: String(r.status),
  };
}

function serviceOf(r: Record<string, unknown>): CatalogService {
  return {
    ...serviceCoreOf(r),
    owner_id: String(r.owner_id),
    tool_count: Number(r.tool_count ?? 0),
    created_at: iso(r.created_at),
    published_at: r.published_at ? iso(r.published_at) : null,
  };
}

const SERVICE_COLUMNS = sql`s.id, s.name, s.display_name, s.description, s.category, s.tags, s.status, s.owner_id, s.created_at, s.published_at,
  (select count(*) from tools t where t.service_id = s.id) as tool_count`;

function idList(ids: string[]): SQL {
  return sql`(select jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb))`;
}

/** {@link idList} of ids to leave out (`['']` when there are none). */
function excludedList(ids: string[]): SQL {
  return idList(ids.length ? ids : ['']);
}

/** `and <visible to accountId>`, or nothing for `'*'` (any status). */
function andVisible(accountId: string | null | '*'): SQL {
  return accountId === '*' ? sql`` : sql`and ${visible(accountId)}`;
}

/**
 * Services by id, in any order, restricted to those visible to `accountId` (`published` or owned;
 * `accountId` null → published only; `'*'` → any status, for analytics of already-authorised ids).
 */
export async function getCatalogServices(ctx: AppContext, accountId: string | null | '*', ids: string[]): Promise<CatalogService[]> {
  if (!ids.length) return [];
  const rows = await execRows<Record<string, unknown>>(
    ctx.db,
    sql`select ${SERVICE_COLUMNS} from services s where s.id in ${idList(ids.slice(0, 5000))} ${andVisible(accountId)}`,
  );
  return rows.map(serviceOf);
}

/** A tool with its service, as the catalog shows it. */
export interface CatalogTool {
  id: string;
  name: string;
  description: string;
  method: string;
  status: string;
  service: { id: string; name: string; display_name: string; category: string | null; tags: string[]; status: string; owner_id: string };
}

/** Tools by id with their service, restricted like {@link getCatalogServices}. */
export async function getCatalogTools(ctx: AppContext, accountId: string | null | '*', ids: string[]): Promise<CatalogTool[]> {
  if (!ids.length) return [];
  const rows = await execRows<Record<string, unknown>>(
    ctx.db,
    sql`select t.id, t.name, t.description, t.method, t.status, ${TOOL_SERVICE_COLUMNS}, s.owner_id
        from tools t join services s on s.id = t.service_id
        where t.id in ${idList(ids.slice(0, 5000))} ${andVisible(accountId)}`,
  );
  return rows.map((r) => ({
    id: String(r.id),
    name: String(r.name),
    description: String(r.description),
    method: String(r.method),
    status: String(r.status),
    service: { ...toolServiceOf(r), owner_id: String(r.owner_id) },
  }));
}

/** The services `ownerId` owns (any status), newest first, at most 1000. */
export async function listOwnedCatalogServices(ctx: AppContext, ownerId: string): Promise<CatalogService[]> {
  const rows = await execRows<Record<string, unknown>>(ctx.db, sql`select ${SERVICE_COLUMNS} from services s where s.owner_id = ${ownerId} order by s.id desc limit 1000`);
  return rows.map(serviceOf);
}

/** Ids of published services in `category` (exact), at most 5000. */
export async function publishedServiceIdsIn(ctx: AppContext, category: string): Promise<string[]> {
  const rows = await execRows<{ id: string }>(ctx.db, sql`select s.id from services s where s.status = 'published' and s.category = ${category} order by s.id desc limit 5000`);
  return rows.map((r) => r.id);
}

/** Tools of the given services (id, name, service id), at most 5000. */
export async function listCatalogToolsOf(ctx: AppContext, serviceIds: string[]): Promise<Array<{ id: string; name: string; service_id: string }>> {
  if (!serviceIds.length) return [];
  return execRows<{ id: string; name: string; service_id: string }>(
    ctx.db,
    sql`select t.id, t.name, t.service_id from tools t where t.service_id in ${idList(serviceIds)} order by t.id limit 5000`,
  );
}

/**
 * Published services that share a category or tags with the profile, excluding `excludeIds`, best
 * overlap first: `category_match` (0/1) and `shared_tags` (the profile tags they carry).
 */
export async function similarCatalogServices(
  ctx: AppContext,
  input: { categories: string[]; tags: string[]; excludeIds: string[]; limit: number },
): Promise<Array<CatalogService & { category_match: boolean; shared_tags: string[] }>> {
  if (!input.categories.length && !input.tags.length) return [];
  const cats = JSON.stringify(input.categories.map((c) => c.toLowerCase()));
  const tags = JSON.stringify(input.tags.map((t) => t.toLowerCase()));
  const rows = await execRows<Record<string, unknown>>(
    ctx.db,
    sql`with c as (select jsonb_array_elements_text(${cats}::jsonb) as v), g as (select jsonb_array_elements_text(${tags}::jsonb) as v)
        select * from (
          select ${SERVICE_COLUMNS},
                 coalesce(lower(s.category) in (select v from c), false) as category_match,
                 array(select x from unnest(s.tags) x where lower(x) in (select v from g) order by x) as shared_tags
          from services s
          where s.status = 'published' and s.id not in ${excludedList(input.excludeIds)}
        ) r
        where category_match or cardinality(shared_tags) > 0
        order by (case when category_match then 2 else 0 end) + cardinality(shared_tags) desc, id desc
        limit ${input.limit}::int`,
  );
  return rows.map((r) => ({ ...serviceOf(r), category_match: Boolean(r.category_match), shared_tags: (r.shared_tags as string[]) ?? [] }));
}

/** Newest published services, excluding `excludeIds`. */
export async function newestCatalogServices(ctx: AppContext, input: { excludeIds: string[]; limit: number }): Promise<CatalogService[]> {
  const rows = await execRows<Record<string, unknown>>(
    ctx.db,
    sql`select ${SERVICE_COLUMNS} from services s
        where s.status = 'published' and s.id not in ${excludedList(input.excludeIds)}
        order by s.published_at desc nulls last, s.id desc limit ${input.limit}::int`,
  );
  return rows.map(serviceOf);
}

/** Platform totals: services by status and tools (admin analytics). */
export async function countCatalog(ctx: AppContext): Promise<{ services: { total: number; by_status: Record<string, number> }; tools: number }> {
  const [byStatus, [tools]] = await Promise.all([
    execRows<{ status: string; n: number | string }>(ctx.db, sql`select status, count(*) as n from services group by status`),
    execRows<{ n: number | string }>(ctx.db, sql`select count(*) as n from tools`),
  ]);
  const by: Record<string, number> = { draft: 0, pending_verification: 0, published: 0, rejected: 0, unpublished: 0 };
  let total = 0;
  for (const r of byStatus) {
    by[r.status] = Number(r.n);
    total += Number(r.n);
  }
  return { services: { total, by_status: by }, tools: Number(tools.n) };
}

// ------------------------------------------------------------------ vocabulary (typo tolerance)

/**
 * A cheap fingerprint of the catalog's searchable text: tool and service counts and latest
 * updates. Callers cache derived data (the search vocabulary) until it changes.
 */
export async function catalogVersion(ctx: AppContext): Promise<string> {
  const [r] = await execRows<{ v: string }>(
    ctx.db,
    sql`select concat_ws('/', (select count(*) from tools), (select max(updated_at) from tools), (select count(*) from services), (select max(updated_at) from services)) as v`,
  );
  return r?.v ?? '';
}

/**
 * Words of the published catalog (tool names split into words, tool descriptions, service names,
 * display names, categories, tags and descriptions), lower-cased and unstemmed ('simple' text
 * search configuration), letters only, 3–30 long, with the number of tools whose text has each
 * (`ndoc`), and the number of published tools (`docs`). Only published services contribute, so
 * typo corrections never reveal another account's private words.
 */
export async function catalogVocabulary(ctx: AppContext): Promise<{ docs: number; words: Array<{ word: string; ndoc: number }> }> {
  const doc = `to_tsvector('simple'::regconfig, concat_ws(' ', ${TOOL_NAME_WORDS_SQL}, t.description, replace(s.name, '-', ' '), s.display_name, s.category, array_to_string(s.tags, ' '), s.description))`;
  const published = `from tools t join services s on s.id = t.service_id where s.status = 'published'`;
  const [words, count] = await Promise.all([
    execRows<{ word: string; ndoc: number }>(ctx.db, sql.raw(`select word, ndoc from ts_stat($vocab$select ${doc} ${published}$vocab$) where word ~ '^[a-z]{3,30}$'`)),
    execRows<{ n: number | string }>(ctx.db, sql.raw(`select count(*) as n ${published}`)),
  ]);
  return { docs: Number(count[0]?.n ?? 0), words: words.map((w) => ({ word: w.word, ndoc: Number(w.ndoc) })) };
}
