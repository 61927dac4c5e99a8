/**
 * Autocomplete over the catalog: prefix completions among the service names, tool names, tags and
 * categories visible to an account (visibility as in `catalog.ts`: published or owned).
 */
import { sql } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { execRows } from '../../db/client.js';
import { TOOL_TRGM, escapeLike, visible } from './catalog-sql.js';

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
export async function suggestCatalog(
  ctx: AppContext,
  accountId: string | null,
  prefix: string,
  limit: number,
): Promise<CatalogSuggestion[]> {
  const p = prefix.trim().toLowerCase().slice(0, 100);
  if (!p) return [];
  const starts = `${escapeLike(p)}%`;
  const word = `% ${escapeLike(p)}%`;
  const vis = visible(accountId);
  const rows = await execRows<{
    type: CatalogSuggestion['type'];
    text: string;
    display: string | null;
    id: string | null;
    n: number | string;
    is_leading: boolean;
  }>(
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
