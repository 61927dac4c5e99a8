/**
 * One-time OAuth 2.0 `state` values (RFC 6749 §10.12, CSRF protection of the redirect), shared by the
 * two flows in which the platform is an OAuth client: sign-in at an external identity provider
 * (identity's login flow) and a user's connection to an upstream API (connections). Each flow keeps
 * its own table; a row stores the SHA-256 of the state (never the value), `consumed_at` and
 * `expires_at`.
 */
import { and, eq, isNull } from 'drizzle-orm';
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core';
import type { Db } from '../db/client.js';
import { AppError, type ErrorCode } from './errors.js';
import { hashSecret } from './ids.js';

/** A table of one-time states: the three columns this helper reads and writes. */
type StateTable = PgTable & { stateHash: PgColumn; consumedAt: PgColumn; expiresAt: PgColumn };

/**
 * Consume `state` once: mark its row consumed in one UPDATE (a concurrent second callback with the
 * same state finds nothing) and return the row.
 * @param refusal the problem `code` of the flow and the `restart` hint appended to its detail.
 * @throws AppError `refusal.code` when the state is unknown, already used or expired.
 */
export async function consumeState<T extends StateTable>(
  db: Db,
  table: T,
  state: string,
  refusal: { code: ErrorCode; restart: string },
): Promise<T['$inferSelect']> {
  const [row] = (await db
    .update(table)
    .set({ consumedAt: new Date() } as never)
    .where(and(eq(table.stateHash, hashSecret(state)), isNull(table.consumedAt)))
    .returning()) as Array<T['$inferSelect'] & { expiresAt: Date }>;
  if (!row) throw new AppError(refusal.code, `state is unknown or was already used; ${refusal.restart}`);
  if (row.expiresAt.getTime() <= Date.now())
    throw new AppError(refusal.code, `state has expired (10 minutes); ${refusal.restart}`);
  return row;
}
