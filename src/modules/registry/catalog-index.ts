/**
 * Catalog reads for the search module's in-process tool index (`search/tool-index.ts`): per-service
 * change fingerprints, the searchable rows of chosen services (their stored full-text documents as
 * text, and the trigram strings exactly as the SQL ranking computes them), and the `english`
 * normalisation of query words. Every service and tool, whatever its status: visibility is decided
 * per query, and again in SQL when the page is read ({@link catalogToolPage}).
 */
import { sql } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { execRows } from '../../db/client.js';
import { idList } from './catalog-sql.js';

/**
 * A fingerprint per service (id → text, with its tool count) that changes with any write to the service or its tools:
 * the service's `updated_at`, status and owner, its tool count, and the sum and maximum of its tools' `updated_at` (a
 * sum, so that a write committed late with an older timestamp still changes it).
 */
export async function catalogFingerprints(
  ctx: AppContext,
): Promise<Map<string, { fingerprint: string; tools: number }>> {
  const rows = await execRows<{ id: string; f: string; n: number | string }>(
    ctx.db,
    sql`select s.id, concat_ws('/', s.updated_at, s.status, s.owner_id, count(t.id), sum(extract(epoch from t.updated_at)), max(t.updated_at)) as f, count(t.id) as n
        from services s left join tools t on t.service_id = s.id group by s.id`,
  );
  return new Map(rows.map((r) => [r.id, { fingerprint: r.f, tools: Number(r.n) }]));
}

/** A service as the tool index holds it. */
export interface IndexServiceRow {
  id: string;
  name: string;
  status: string;
  owner_id: string;
  category: string | null;
  tags: string[];
  /** `lower(name || ' ' || display_name)`: what fuzzy service matching compares. */
  strgm: string;
  /** `search_doc` as text. */
  doc: string;
}

/** A tool as the tool index holds it. */
export interface IndexToolRow {
  id: string;
  service_id: string;
  /** `lower(name)`. */
  lname: string;
  /** The name's words, lower-cased (`TOOL_TRGM`): what fuzzy name matching compares. */
  ttrgm: string;
  /** `search_doc` as text. */
  doc: string;
}

/** The services with these ids (those still there) and all their tools. */
export async function catalogIndexRows(
  ctx: AppContext,
  serviceIds: string[],
): Promise<{ services: IndexServiceRow[]; tools: IndexToolRow[] }> {
  if (!serviceIds.length) return { services: [], tools: [] };
  // A list of parameters, not a subquery: the planner then uses the service-id indexes (with the
  // jsonb subquery PGlite scanned every tool for each page: 56 ms at 10k tools).
  const ids = sql`(${sql.join(
    serviceIds.map((id) => sql`${id}`),
    sql`, `,
  )})`;
  const [services, tools] = await Promise.all([
    execRows<Omit<IndexServiceRow, 'strgm'> & { display_name: string }>(
      ctx.db,
      sql`select s.id, s.name, s.display_name, s.status, s.owner_id, s.category, s.tags, s.search_doc::text as doc from services s where s.id in ${ids}`,
    ),
    execRows<Omit<IndexToolRow, 'lname' | 'ttrgm'> & { name: string }>(
      ctx.db,
      sql`select t.id, t.service_id, t.name, t.search_doc::text as doc from tools t where t.service_id in ${ids}`,
    ),
  ]);
  // The trigram strings as `SERVICE_TRGM` / `TOOL_TRGM` compute them, here rather than by the
  // database's regular expressions (most of a 10k-tool build's time on PGlite).
  return {
    services: services.map(({ display_name, ...s }) => ({
      ...s,
      tags: s.tags ?? [],
      strgm: `${s.name} ${display_name}`.toLowerCase(),
    })),
    tools: tools.map(({ name, ...t }) => ({ ...t, lname: name.toLowerCase(), ttrgm: nameWords(name).toLowerCase() })),
  };
}

/** A tool name's words as `TOOL_NAME_WORDS_SQL` splits them: camelCase apart, `_` and `-` runs to a space. */
export function nameWords(name: string): string {
  return name.replace(/([a-z0-9])([A-Z])/g, '$1 $2').replace(/[_-]+/g, ' ');
}

/**
 * Each word as the `english` configuration normalises it in a query: its lexemes (one for a word of
 * letters and digits; none for a stop word).
 */
export async function normalizeWords(ctx: AppContext, words: string[]): Promise<Map<string, string[]>> {
  if (!words.length) return new Map();
  const rows = await execRows<{ w: string; lex: string[] | string | null }>(
    ctx.db,
    sql`select w, tsvector_to_array(to_tsvector('english'::regconfig, w)) as lex from ${idList(words)} as x(w)`,
  );
  return new Map(rows.map((r) => [r.w, Array.isArray(r.lex) ? r.lex : parseTextArray(r.lex)]));
}

/** A PostgreSQL text[] literal (`{a,b}`) as PGlite may return it for arrays of an unknown type. */
function parseTextArray(v: string | null): string[] {
  if (!v || v === '{}') return [];
  return v
    .replace(/^\{|\}$/g, '')
    .split(',')
    .map((s) => s.replace(/^"|"$/g, ''));
}
