/** Catalog lookups by id, owner, category or similarity, and platform totals (search and analytics modules). */
import { sql, type SQL } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { execRows } from '../../db/client.js';
import { iso } from '../../http/ids.js';
import {
  idList,
  serviceCoreOf,
  TOOL_NAME_WORDS_SQL,
  TOOL_SERVICE_COLUMNS,
  toolServiceOf,
  visible,
  type CatalogServiceCore,
} from './catalog-sql.js';

// ------------------------------------------------------------------ lookups

/** A service as the catalog shows it. */
export interface CatalogService extends CatalogServiceCore {
  owner_id: string;
  tool_count: number;
  created_at: string;
  published_at: string | null;
}

function serviceOf(r: Record<string, unknown>): CatalogService {
  return {
    ...serviceCoreOf(r),
    owner_id: String(r.owner_id),
    tool_count: Number(r.tool_count ?? 0),
    created_at: iso(r.created_at as Date | string),
    published_at: iso(r.published_at as Date | string | null),
  };
}

const SERVICE_COLUMNS = sql`s.id, s.name, s.display_name, s.description, s.category, s.tags, s.status, s.owner_id, s.created_at, s.published_at,
  (select count(*) from tools t where t.service_id = s.id) as tool_count`;

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
export async function getCatalogServices(
  ctx: AppContext,
  accountId: string | null | '*',
  ids: string[],
): Promise<CatalogService[]> {
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
  service: {
    id: string;
    name: string;
    display_name: string;
    category: string | null;
    tags: string[];
    status: string;
    owner_id: string;
  };
}

/** Tools by id with their service, restricted like {@link getCatalogServices}. */
export async function getCatalogTools(
  ctx: AppContext,
  accountId: string | null | '*',
  ids: string[],
): Promise<CatalogTool[]> {
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
  const rows = await execRows<Record<string, unknown>>(
    ctx.db,
    sql`select ${SERVICE_COLUMNS} from services s where s.owner_id = ${ownerId} order by s.id desc limit 1000`,
  );
  return rows.map(serviceOf);
}

/** Ids of published services in `category` (exact), at most 5000. */
export async function publishedServiceIdsIn(ctx: AppContext, category: string): Promise<string[]> {
  const rows = await execRows<{ id: string }>(
    ctx.db,
    sql`select s.id from services s where s.status = 'published' and s.category = ${category} order by s.id desc limit 5000`,
  );
  return rows.map((r) => r.id);
}

/** Tools of the given services (id, name, service id), at most 5000. */
export async function listCatalogToolsOf(
  ctx: AppContext,
  serviceIds: string[],
): Promise<Array<{ id: string; name: string; service_id: string }>> {
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
  return rows.map((r) => ({
    ...serviceOf(r),
    category_match: Boolean(r.category_match),
    shared_tags: (r.shared_tags as string[]) ?? [],
  }));
}

/** Newest published services, excluding `excludeIds`. */
export async function newestCatalogServices(
  ctx: AppContext,
  input: { excludeIds: string[]; limit: number },
): Promise<CatalogService[]> {
  const rows = await execRows<Record<string, unknown>>(
    ctx.db,
    sql`select ${SERVICE_COLUMNS} from services s
        where s.status = 'published' and s.id not in ${excludedList(input.excludeIds)}
        order by s.published_at desc nulls last, s.id desc limit ${input.limit}::int`,
  );
  return rows.map(serviceOf);
}

/** Platform totals: services by status and tools (admin analytics). */
export async function countCatalog(
  ctx: AppContext,
): Promise<{ services: { total: number; by_status: Record<string, number> }; tools: number }> {
  const [byStatus, [tools]] = await Promise.all([
    execRows<{ status: string; n: number | string }>(
      ctx.db,
      sql`select status, count(*) as n from services group by status`,
    ),
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
 * typo corrections never reveal another account's private words. With `page`, only the published
 * tools after `afterId` (id order, at most `limit`): `docs` and `ndoc` count those, `lastId` is the
 * page's last tool (null: no tool left) — so a caller can build the vocabulary in short statements.
 */
export async function catalogVocabulary(
  ctx: AppContext,
  page?: { afterId: string; limit: number },
): Promise<{ docs: number; words: Array<{ word: string; ndoc: number }>; lastId: string | null }> {
  const doc = `to_tsvector('simple'::regconfig, concat_ws(' ', ${TOOL_NAME_WORDS_SQL}, t.description, replace(s.name, '-', ' '), s.display_name, s.category, array_to_string(s.tags, ' '), s.description))`;
  const published = `from tools t join services s on s.id = t.service_id where s.status = 'published'`;
  let range = '';
  let lastId: string | null = null;
  if (page) {
    const [r] = await execRows<{ last: string | null }>(
      ctx.db,
      sql`select max(id) as last from (select t.id from tools t join services s on s.id = t.service_id where s.status = 'published' and t.id > ${page.afterId} order by t.id limit ${page.limit}::int) p`,
    );
    lastId = r?.last ?? null;
    if (!lastId) return { docs: 0, words: [], lastId };
    // Tool ids are generated (`tool_` + a lower-case ULID), so inlining them in ts_stat's query text is safe; checked anyway.
    if (![page.afterId, lastId].every((id) => /^[A-Za-z0-9_-]*$/.test(id))) throw new Error('unexpected tool id');
    range = ` and t.id > '${page.afterId}' and t.id <= '${lastId}'`;
  }
  const [words, count] = await Promise.all([
    execRows<{ word: string; ndoc: number }>(
      ctx.db,
      sql.raw(
        `select word, ndoc from ts_stat($vocab$select ${doc} ${published}${range}$vocab$) where word ~ '^[a-z]{3,30}$'`,
      ),
    ),
    execRows<{ n: number | string }>(ctx.db, sql.raw(`select count(*) as n ${published}${range}`)),
  ]);
  return { docs: Number(count[0]?.n ?? 0), words: words.map((w) => ({ word: w.word, ndoc: Number(w.ndoc) })), lastId };
}

/**
 * Every tool's embeddable text (any status: visibility is checked when a hit is shown), in id
 * order after `afterId`, at most `limit` (≤ 5000): id, name and the first 300 characters of the
 * description. For the search module's tool vectors.
 */
export async function catalogToolTexts(
  ctx: AppContext,
  afterId: string,
  limit: number,
): Promise<Array<{ id: string; name: string; description: string }>> {
  return execRows<{ id: string; name: string; description: string }>(
    ctx.db,
    sql`select t.id, t.name, left(t.description, 300) as description from tools t where t.id > ${afterId} order by t.id limit ${Math.min(limit, 5000)}::int`,
  );
}
