/**
 * Named prepared statements for hot raw SQL (issue 18): a statement written with drizzle's `sql`
 * template and `sql.placeholder(name)` for its parameters, compiled to text once, and run by name.
 * On PostgreSQL (node-postgres) each pooled connection parses and plans it once and later runs only
 * bind + execute (no per-call parse/plan, no per-call query building in this process); on PGlite the
 * name is ignored and the text is sent as is (the engine has no plan cache to gain from).
 * Statement names must be unique per app (node-postgres refuses one name for two texts).
 */
import type { SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import type { Db } from './client.js';

const dialect = new PgDialect();

/** A prepared raw statement: `run(values)` fills the placeholders by name and returns the rows. */
export interface PreparedRaw<T> {
  /** The database handle it runs on. */
  db: Db;
  /** Run with `values` for the statement's placeholders. @throws the database error */
  run(values: Record<string, unknown>): Promise<T[]>;
}

/** Prepare `query` (with `sql.placeholder`s) as statement `name` on `db`. */
export function prepareRaw<T = Record<string, unknown>>(db: Db, name: string, query: SQL): PreparedRaw<T> {
  const prepared = db._.session.prepareQuery(dialect.sqlToQuery(query), undefined, name, false);
  return {
    db,
    run: async (values) => ((await prepared.execute(values)) as unknown as { rows: T[] }).rows,
  };
}
