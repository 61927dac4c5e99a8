/**
 * The memory search's statements on the embedded engine as named prepared statements: PGlite's own
 * `query` sends every statement unnamed, so PostgreSQL parses, analyses and plans it again on every
 * call (db/pglite-prepared.ts). A search runs two statements — the query's terms with their
 * document frequencies (store.ts `queryTerms`) and the page's rows by id (search-in-process.ts) —
 * whose texts differ only by their parameters (and by the caller's filters, a handful of shapes), so
 * each distinct text is prepared once per PGlite instance under its own name and later runs are
 * Bind + Execute. The rows are the same as through drizzle (same parsers), so the answers are too.
 *
 * Elsewhere — PostgreSQL, a transaction handle, more distinct texts than {@link MAX_STATEMENTS} —
 * the statement runs as before (`execRows`).
 */
import type { SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import { execRows, type Db, type Tx } from '../../db/client.js';
import { isPGlite, PGliteNamedStatement } from '../../db/pglite-prepared.js';
import { traceStatement } from '../../telemetry/db.js';

const dialect = new PgDialect();

/** Most distinct statement texts prepared per PGlite instance (the filters' shapes; beyond it, unnamed). */
export const MAX_STATEMENTS = 64;

/** Statements prepared per PGlite client, by text. */
const byClient = new WeakMap<object, Map<string, PGliteNamedStatement<unknown>>>();

/**
 * The rows of `query` on `db`: as a named prepared statement of the PGlite instance behind `db`
 * (prepared on the first run of its text), else through `execRows`. Rows are shaped as `execRows`
 * returns them on PGlite (timestamps as PostgreSQL's text, jsonb parsed).
 * @throws the database error (a DrizzleQueryError with it as `cause` on the prepared path)
 */
export async function memoryRows<T = Record<string, unknown>>(db: Db | Tx, query: SQL): Promise<T[]> {
  const client = (db as unknown as { $client?: unknown }).$client;
  if (!isPGlite(client)) return execRows<T>(db, query);
  const { sql: text, params } = dialect.sqlToQuery(query);
  let statements = byClient.get(client);
  if (!statements) byClient.set(client, (statements = new Map()));
  let statement = statements.get(text);
  if (!statement) {
    if (statements.size >= MAX_STATEMENTS) return execRows<T>(db, query);
    statement = new PGliteNamedStatement(client, `memory_search_${statements.size + 1}`, text);
    statements.set(text, statement);
  }
  const s = statement as PGliteNamedStatement<T>;
  return traceStatement(text, () => s.run(params));
}
