/**
 * Named prepared statements for hot raw SQL: a statement written with drizzle's `sql`
 * template and `sql.placeholder(name)` for its parameters, compiled to text once, and run by name.
 * On PostgreSQL (node-postgres) each pooled connection parses and plans it once and later runs only
 * bind + execute (no per-call parse/plan, no per-call query building in this process); on PGlite it
 * is parsed once per instance under its name too and each run is one Bind + Execute
 * (pglite-prepared.ts: PGlite's own `query` parses and plans every statement again).
 * Statement names must be unique per app (node-postgres refuses one name for two texts).
 */
import { fillPlaceholders, type SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import type { Db } from './client.js';
import { traceStatement } from '../telemetry/db.js';
import { isPGlite, PGliteNamedStatement } from './pglite-prepared.js';

const dialect = new PgDialect();

/** A prepared raw statement: `run(values)` fills the placeholders by name and returns the rows. */
export interface PreparedRaw<T> {
  /** The database handle it runs on. */
  db: Db;
  /** Run with `values` for the statement's placeholders. @throws the database error */
  run(values: Record<string, unknown>): Promise<T[]>;
}

/** Statements prepared so far, per database handle and name (a handle is one pool or PGlite instance). */
const preparedByDb = new WeakMap<Db, Map<string, PreparedRaw<unknown>>>();

/**
 * Statement `name` on `db`, prepared from `build()` on first use and the same object afterwards (so
 * callers keep no cache of their own; a context copied with another database gets its own).
 */
export function prepareRaw<T = Record<string, unknown>>(db: Db, name: string, build: () => SQL): PreparedRaw<T> {
  let byName = preparedByDb.get(db);
  if (!byName) preparedByDb.set(db, (byName = new Map()));
  const known = byName.get(name);
  if (known) return known as PreparedRaw<T>;
  const query = dialect.sqlToQuery(build());
  const client = (db as unknown as { $client?: unknown }).$client;
  let created: PreparedRaw<T>;
  if (isPGlite(client)) {
    const statement = new PGliteNamedStatement<T>(client, name, query.sql);
    // Spans per statement on PGlite (PostgreSQL: the `pg` instrumentation traces `execute`).
    created = {
      db,
      run: (values) => traceStatement(query.sql, () => statement.run(fillPlaceholders(query.params, values))),
    };
  } else {
    const prepared = db._.session.prepareQuery(query, undefined, name, false);
    created = { db, run: async (values) => ((await prepared.execute(values)) as unknown as { rows: T[] }).rows };
  }
  byName.set(name, created as PreparedRaw<unknown>);
  return created;
}
