/**
 * The SQL shared by the registry's catalog queries: database capabilities (pg_trgm), the stored
 * full-text documents (migration 0021) and trigram expressions (byte-for-byte equal to the indexed
 * ones of migration `search_indexes`),
 * visibility and query-term helpers. See `catalog.ts` for the model.
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

export const trgmByDatabase = new WeakMap<Database, Promise<boolean>>();

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

// ------------------------------------------------------------------ shared SQL (keep equal to migrations `search_indexes` and `search_documents`)

/** Tool name as words: `getWeather`/`get_weather`/`get-weather` → `get Weather`/`get weather`. */
export const TOOL_NAME_WORDS_SQL = `regexp_replace(regexp_replace(t.name, '([a-z0-9])([A-Z])', '\\1 \\2', 'g'), '[_-]+', ' ', 'g')`;
/**
 * Full-text document of a tool: name words (weight A) and description (B), stored in the generated
 * column `tools.search_doc` (migration 0021, indexed: `tools_search_idx`).
 */
export const TOOL_DOC = sql.raw('t.search_doc');
/** The name part of {@link TOOL_DOC} (its weight-A lexemes): the tool name's words, stemmed. */
export const TOOL_NAME_DOC = sql.raw(`ts_filter(t.search_doc, '{a}')`);
/**
 * Full-text document of a service: name and display name (C), category and description (D),
 * stored in `services.search_doc` (migration 0021, indexed: `services_search_idx`).
 */
export const SERVICE_DOC = sql.raw('s.search_doc');
/** Lower-cased words of a tool name for trigram matching (indexed: `tools_name_trgm_idx`). */
export const TOOL_TRGM = sql.raw(
  `lower(regexp_replace(regexp_replace(t.name, '([a-z0-9])([A-Z])', '\\1 \\2', 'g'), '[_-]+', ' ', 'g'))`,
);
/** Lower-cased service name and display name for trigram matching (indexed: `services_name_trgm_idx`). */
export const SERVICE_TRGM = sql.raw(`lower((s.name || ' ') || s.display_name)`);
/** ts_rank weights {D, C, B, A}: tool name > tool description > service name > service text. */
export const RANK_WEIGHTS = sql.raw(`'{0.05, 0.15, 0.4, 1.0}'::float4[]`);

/** `word_similarity` needed for a fuzzy name match (pg_trgm's default 0.6 misses one-letter typos in short words). */
export const FUZZY_THRESHOLD = 0.45;

export function visible(accountId: string | null): SQL {
  return accountId ? sql`(s.status = 'published' or s.owner_id = ${accountId})` : sql`s.status = 'published'`;
}

/** Query terms: lower-cased runs of letters/digits, at most 8. */
export function queryTerms(q: string): string[] {
  return (q.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).slice(0, 8).map((t) => t.slice(0, 64));
}

/** A `to_tsquery` source: all terms (AND) or any (OR); the last term also matches as a prefix (search-as-you-type). */
export function tsquerySource(terms: string[], op: '&' | '|'): string {
  return terms.map((t, i) => `'${t}'${i === terms.length - 1 ? ':*' : ''}`).join(` ${op} `);
}

/** A text[] literal of query terms (letters and digits only, so no quoting issue). */
export function termsArray(terms: string[]): string {
  return `{${terms.map((t) => `"${t}"`).join(',')}}`;
}

/** True when one of the service's tags equals a term (case-insensitive): one array overlap per row. */
export function tagOverlap(terms: string[]): SQL {
  return sql`(lower(s.tags::text))::text[] && ${termsArray(terms)}::text[]`;
}

export function escapeLike(s: string): string {
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
export const SEARCH_SETTINGS = sql.raw(
  `set_config('jit', 'off', true), set_config('enable_seqscan', 'off', true), set_config('join_collapse_limit', '1', true)`,
);

export async function withSearchSettings<T>(
  ctx: AppContext,
  fuzzy: boolean,
  fn: (tx: Db | Tx) => Promise<T>,
): Promise<T> {
  return ctx.db.transaction(async (tx) => {
    await tx.execute(
      fuzzy
        ? sql`select ${SEARCH_SETTINGS}, set_config('pg_trgm.word_similarity_threshold', ${String(FUZZY_THRESHOLD)}, true)`
        : sql`select ${SEARCH_SETTINGS}`,
    );
    return fn(tx);
  });
}

export function round(n: number): number {
  return Number.isFinite(n) ? Math.round(n * 1e6) / 1e6 : 0;
}

/** Service columns of a tool row joined to its service (`t` join `s`), read back by {@link toolServiceOf}. */
export const TOOL_SERVICE_COLUMNS = sql`s.id as service_id, s.name as service_name, s.display_name, s.category, s.tags, s.status as service_status`;

/** The service of a tool row selected with {@link TOOL_SERVICE_COLUMNS}. */
export function toolServiceOf(r: Record<string, unknown>): Omit<CatalogServiceCore, 'description'> {
  const { description: _description, ...service } = serviceCoreOf({
    ...r,
    id: r.service_id,
    name: r.service_name,
    description: '',
    status: r.service_status,
  });
  return service;
}

/** The identifying and classifying fields every catalog answer about a service carries. */
export interface CatalogServiceCore {
  id: string;
  name: string;
  display_name: string;
  description: string;
  category: string | null;
  tags: string[];
  status: string;
}

/** The identifying and classifying columns of a raw service row, typed (shared by every service answer). */
export function serviceCoreOf(r: Record<string, unknown>): CatalogServiceCore {
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

export function idList(ids: string[]): SQL {
  return sql`(select jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb))`;
}
