/**
 * Cursor pagination on time-sortable ids (DESIGN.md §5). Ids sort by creation time, so a
 * list ordered by `id desc` is newest-first and the cursor is the last id returned, encoded
 * opaquely (base64url) so clients do not depend on its shape.
 */
import { and, asc, desc, gt, lt, type AnyColumn, type SQL } from 'drizzle-orm';
import type { PgTable } from 'drizzle-orm/pg-core';
import type { Db } from '../db/client.js';
import { AppError } from './errors.js';

/** A page of results in the platform's list envelope. */
export interface Page<T> {
  data: T[];
  next_cursor: string | null;
}

/** Decode a `cursor` query value into the key to continue after (an id, or another printable key). @throws AppError validation_failed */
export function decodeCursor(cursor: string | undefined): string | undefined {
  if (cursor === undefined) return undefined;
  const id = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!/^[\x20-\x7e]{1,300}$/.test(id)) {
    throw new AppError('validation_failed', 'cursor is malformed', {
      errors: [{ in: 'query', pointer: '/cursor', message: 'malformed cursor' }],
    });
  }
  return id;
}

/** Encode the continuation key of the last row. */
export function encodeCursor(key: string): string {
  return Buffer.from(key, 'utf8').toString('base64url');
}

/**
 * Build a page from `rows` fetched with `limit + 1`: the extra row only signals that more exist.
 * `keyOf` gives the continuation key of a row (default: its `id`).
 */
export function toPage<R, T>(
  rows: R[],
  limit: number,
  map: (r: R) => T,
  keyOf: (r: R) => string = (r) => (r as { id: string }).id,
): Page<T> {
  const more = rows.length > limit;
  const slice = more ? rows.slice(0, limit) : rows;
  return { data: slice.map(map), next_cursor: more ? encodeCursor(keyOf(slice[slice.length - 1])) : null };
}

/** The pieces of one keyset-paginated query (see {@link keyset}). */
export interface Keyset {
  /** Rows asked for: `limit`, 1..100 as the route's schema allows. */
  limit: number;
  /** `limit + 1`: the extra row only tells {@link toPage} that more exist. */
  take: number;
  /** Condition "after the cursor" (undefined on the first page): put it in the query's `and(…)`. */
  after: SQL | undefined;
  /** The ORDER BY of the key column. */
  orderBy: SQL;
}

/**
 * Keyset pagination over `column` (DESIGN.md §5: newest first on time-sortable ids by default):
 * `q.cursor` decoded into the "after" condition, the order, and `limit + 1` rows to fetch.
 * Finish with `toPage(rows, page.limit, view, keyOf)` (keyOf must read the same column).
 * @throws AppError validation_failed for a malformed cursor
 */
export function keyset(
  q: { limit?: number; cursor?: string },
  column: AnyColumn,
  opts: { order?: 'desc' | 'asc'; defaultLimit?: number } = {},
): Keyset {
  const limit = q.limit ?? opts.defaultLimit ?? 20;
  const key = decodeCursor(q.cursor);
  const ascending = opts.order === 'asc';
  return {
    limit,
    take: limit + 1,
    after: key === undefined ? undefined : ascending ? gt(column, key) : lt(column, key),
    orderBy: ascending ? asc(column) : desc(column),
  };
}

/**
 * One keyset page of the rows of `table` that match every condition of `where` (undefined entries
 * are skipped, so optional filters read `q.x ? eq(col, q.x) : undefined`), paginated on the column
 * `key` (a property of the table; default `id`) newest first: one query of `limit + 1` rows, answered
 * as the list envelope of the raw rows (map them with {@link mapPage}).
 * @throws AppError validation_failed for a malformed cursor
 */
export async function selectPage<T extends PgTable>(
  db: Db,
  table: T,
  q: { limit?: number; cursor?: string },
  where: Array<SQL | undefined>,
  key?: keyof T['$inferSelect'] & string,
): Promise<Page<T['$inferSelect']>> {
  const k: string = key ?? 'id';
  const page = keyset(q, (table as unknown as Record<string, AnyColumn>)[k]);
  const rows = (await db
    .select()
    .from(table as PgTable)
    .where(and(...where, page.after))
    .orderBy(page.orderBy)
    .limit(page.take)) as Array<T['$inferSelect']>;
  return toPage(
    rows,
    page.limit,
    (r) => r,
    (r) => String((r as Record<string, unknown>)[k]),
  );
}

/** The same page with every item mapped by `map` (the cursor is kept). */
export function mapPage<R, T>(page: Page<R>, map: (r: R) => T): Page<T> {
  return { data: page.data.map(map), next_cursor: page.next_cursor };
}
