/** Revocation of credentials and grants kept for audit (a `revoked_at` column instead of a DELETE). */
import { and, isNull, type SQL } from 'drizzle-orm';
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core';
import type { Db } from './client.js';

/**
 * Set `revoked_at = now()` on the row of `table` that `match` selects, if it is not revoked yet
 * (one UPDATE: two concurrent revocations revoke once).
 * @returns true when a row was revoked; false when none matched or it was already revoked
 *   (callers answer 404 for both, so another account's object is indistinguishable from none).
 */
export async function revokeLive<T extends PgTable & { id: PgColumn; revokedAt: PgColumn }>(
  db: Db,
  table: T,
  match: SQL | undefined,
): Promise<boolean> {
  const rows = await db
    .update(table)
    .set({ revokedAt: new Date() } as never)
    .where(and(match, isNull(table.revokedAt)))
    .returning({ id: table.id });
  return rows.length > 0;
}
