/**
 * Named prepared statements on PGlite: `PGlite.query` sends every statement as an
 * unnamed one — Parse, Describe, Bind, Describe, Execute, Sync, six calls into the WebAssembly
 * backend — so PostgreSQL parses, analyses and plans it on every call, on this process's one
 * thread. For the execution path's statements (a quota count and an execution record with several
 * CTEs) that planning was ~2 ms of CPU each, most of an execution's cost on PGlite. Here a statement
 * is parsed once per PGlite instance under a name (extended query protocol, PostgreSQL docs §55.2.3)
 * and each run is one Bind + Execute + Sync, so the backend keeps its plan (a generic plan after the
 * fifth run, as for any prepared statement; DDL invalidates it as usual).
 *
 * Runs take PGlite's own transaction and query mutexes, as `query` does, so a run never interleaves
 * with another statement's protocol messages nor lands inside another caller's transaction.
 * Parameters are serialised and rows parsed with the instance's serializers and parsers by type OID,
 * as `query` does, with the overrides drizzle's PGlite driver uses (timestamps, dates and intervals
 * stay strings), so a row reads the same as through drizzle.
 */
import { protocol, types, type PGlite } from '@electric-sql/pglite';
import { DrizzleQueryError } from 'drizzle-orm/errors';

const { serialize } = protocol;

/** The parts of a PGlite instance used here (its query and transaction mutexes are internal but stable since 0.2). */
type PGliteClient = PGlite & {
  _checkReady(): Promise<void>;
  _runExclusiveQuery<T>(fn: () => Promise<T>): Promise<T>;
  _runExclusiveTransaction<T>(fn: () => Promise<T>): Promise<T>;
  serializers: Record<number, (x: unknown) => string>;
  parsers: Record<number, (x: string, typeId?: number) => unknown>;
};

/** Parsers drizzle's PGlite driver overrides (values stay as PostgreSQL's text). */
const AS_TEXT = [types.TIMESTAMP, types.TIMESTAMPTZ, types.INTERVAL, types.DATE, 1231, 1115, 1185, 1187, 1182];

/** True when `client` (a drizzle database's `$client`) is a PGlite instance this module can drive. */
export function isPGlite(client: unknown): client is PGlite {
  const c = client as Partial<PGliteClient> | null;
  return (
    !!c &&
    typeof c.execProtocol === 'function' &&
    typeof c._runExclusiveQuery === 'function' &&
    typeof c._runExclusiveTransaction === 'function'
  );
}

/** What a Describe of the named statement told: parameter and result column types. */
interface Described {
  paramTypes: number[];
  fields: Array<{ name: string; dataTypeID: number }>;
}

/**
 * A statement prepared under `name` on a PGlite instance, on first run.
 * `run(params)` takes the positional parameters ($1, $2, …) and returns the rows as objects.
 */
export class PGliteNamedStatement<T> {
  private described: Described | null = null;
  private readonly parsers: Record<number, (x: string, typeId?: number) => unknown>;

  constructor(
    private readonly client: PGlite,
    private readonly name: string,
    private readonly text: string,
  ) {
    const c = client as PGliteClient;
    this.parsers = { ...c.parsers, ...Object.fromEntries(AS_TEXT.map((oid) => [oid, (v: string) => v])) };
  }

  /**
   * Run with positional `params`.
   * @throws DrizzleQueryError with the database error (SQLSTATE in `cause.code`) as its cause, as
   *         drizzle's drivers throw it
   */
  async run(params: unknown[]): Promise<T[]> {
    const c = this.client as PGliteClient;
    await c._checkReady();
    try {
      return await c._runExclusiveTransaction(() => c._runExclusiveQuery(() => this.runExclusive(params)));
    } catch (err) {
      throw new DrizzleQueryError(this.text, params, err as Error);
    }
  }

  private async runExclusive(params: unknown[]): Promise<T[]> {
    const c = this.client as PGliteClient;
    const d = this.described ?? (this.described = await this.prepare());
    const values = params.map((v, i) => {
      if (v === null || v === undefined) return null;
      const ser = c.serializers[d.paramTypes[i]!];
      return ser ? ser(v) : String(v);
    });
    const { messages } = await c.execProtocol(
      Buffer.concat([serialize.bind({ statement: this.name, values }), serialize.execute({}), serialize.sync()]),
    );
    const rows: T[] = [];
    for (const m of messages) {
      if (m.name !== 'dataRow') continue;
      const fields = (m as unknown as { fields: Array<string | null> }).fields;
      const row: Record<string, unknown> = {};
      fields.forEach((v, i) => {
        const f = d.fields[i]!;
        row[f.name] = types.parseType(v as string, f.dataTypeID, this.parsers);
      });
      rows.push(row as T);
    }
    return rows;
  }

  /** Parse the statement under its name and describe it. @throws the database error (nothing is cached then) */
  private async prepare(): Promise<Described> {
    const c = this.client as PGliteClient;
    const { messages } = await c.execProtocol(
      Buffer.concat([
        serialize.parse({ name: this.name, text: this.text, types: [] }),
        serialize.describe({ type: 'S', name: this.name }),
        serialize.sync(),
      ]),
    );
    const params = messages.find((m) => m.name === 'parameterDescription') as unknown as
      | { dataTypeIDs: number[] }
      | undefined;
    const rowDesc = messages.find((m) => m.name === 'rowDescription') as unknown as
      | { fields: Array<{ name: string; dataTypeID: number }> }
      | undefined;
    return {
      paramTypes: params?.dataTypeIDs ?? [],
      fields: rowDesc?.fields.map((f) => ({ name: f.name, dataTypeID: f.dataTypeID })) ?? [],
    };
  }
}
