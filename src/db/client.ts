/**
 * Database connection: embedded PGlite (default) or PostgreSQL (`DATABASE_URL`), behind one
 * drizzle `Db` type and one SQL dialect. See DESIGN.md §2–3.
 */
import path from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import { sql, type SQL } from 'drizzle-orm';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import type { Config } from '../config.js';
import { MIGRATIONS_DIR, openEmbeddedDataDir, sharedBuffersOf } from './data-dir.js';
import { openPGliteThread } from './pglite-thread.js';
import { pgliteWasmModule } from './pglite-wasm.js';
import { instrumentPGlite } from '../telemetry/db.js';
import * as schema from './schema/index.js';

export {
  DataDirLockedError,
  directoryBytes,
  lockDataDir,
  openEmbeddedDataDir,
  pgliteSharedBuffersFor,
  servedDatabaseBytes,
} from './data-dir.js';

export type Schema = typeof schema;
/** The drizzle database handle every service receives. Works identically on PGlite and pg. */
export type Db = PgDatabase<PgQueryResultHKT, Schema>;
/** A transaction handle (same query API as {@link Db}). */
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];

/** An open database plus facts about the engine. */
export interface Database {
  db: Db;
  /**
   * Handle for the high-volume writes of the execution path (quota counts, execution records and
   * usage counters, automatic memories). On PostgreSQL its connections commit with
   * `synchronous_commit = off`: a commit returns before its WAL is flushed to disk, so a crash of
   * the database server (not of this process) can lose the last few hundred ms of such writes
   * (at most 3 × `wal_writer_delay`), never half of one; visibility and locking are unchanged, so
   * counting stays exact under concurrency (PostgreSQL docs §28.4 "Asynchronous Commit").
   * On PGlite it is {@link db}.
   */
  hotDb: Db;
  engine: 'pglite' | 'postgres';
  /** True when the pgvector extension is installed (set by {@link migrateDatabase}). */
  hasVector: boolean;
  /** Round-trip check used by `/readyz`. @throws when the database is unreachable. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Advisory lock key that serialises migrations across instances ("agentplt" as int). */
const MIGRATION_LOCK_KEY = 0x61676e74;

/**
 * Open the database selected by `config` (PGlite under `dataDir/pglite`, in memory, or pg).
 * `opening`: the data directory's open already started by {@link openEmbeddedDataDir} (main.ts).
 */
export async function openDatabase(config: Config, opening?: Promise<() => Promise<void>>): Promise<Database> {
  if (config.databaseUrl) {
    const { default: pg } = await import('pg');
    const { drizzle } = await import('drizzle-orm/node-postgres');
    const pool = new pg.Pool({ connectionString: config.databaseUrl, max: 10 });
    pool.on('error', () => {
      /* idle client errors are reported by the next query */
    });
    const db = drizzle({ client: pool, schema }) as unknown as Db;
    const hotPool = new pg.Pool({ connectionString: config.databaseUrl, max: 5, options: '-c synchronous_commit=off' });
    hotPool.on('error', () => {
      /* idle client errors are reported by the next query */
    });
    const database: Database = {
      db,
      hotDb: drizzle({ client: hotPool, schema }) as unknown as Db,
      engine: 'postgres',
      hasVector: false,
      async ping() {
        await pool.query('select 1');
      },
      async close() {
        await Promise.all([pool.end(), hotPool.end()]);
      },
    };
    await migrateDatabase(database, async (fn) => {
      const client = await pool.connect();
      try {
        await client.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
        try {
          const { migrate } = await import('drizzle-orm/node-postgres/migrator');
          await fn(drizzle({ client, schema }), migrate as never);
        } finally {
          await client.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
        }
      } finally {
        client.release();
      }
    });
    return database;
  }

  const dataDir = config.databaseInMemory ? undefined : path.join(config.dataDir, 'pglite');
  const dirOpening = opening ?? openEmbeddedDataDir(config);
  // On disk, PGlite runs on its own thread (db/pglite-thread.ts) unless PGLITE_THREAD=off; in memory
  // (tests and benchmarks build many databases per process) it runs on this one.
  const [{ drizzle }, client] = await Promise.all([
    import('drizzle-orm/pglite'),
    dataDir && config.pgliteThread
      ? // The thread starts now; the directory opens in it once locked and initialised here.
        openPGliteThread(
          dirOpening!.then(() => ({
            dataDir,
            postgresqlconf: [`shared_buffers = ${sharedBuffersOf(config, dataDir)}`],
          })),
        )
      : openInProcess(config, dataDir, dirOpening),
  ]);
  // Resolved by now (both opens waited for it): the lock's release.
  const unlock = await dirOpening;
  // A span per statement while tracing is on (PostgreSQL has the `pg` instrumentation instead).
  instrumentPGlite(client);
  const db = drizzle({ client: client as PGlite, schema }) as unknown as Db;
  const database: Database = {
    db,
    hotDb: db,
    engine: 'pglite',
    hasVector: false,
    async ping() {
      await client.query('select 1');
    },
    async close() {
      try {
        await client.close();
      } finally {
        await unlock?.();
      }
    },
  };
  await migrateDatabase(database, async (fn) => {
    const { migrate } = await import('drizzle-orm/pglite/migrator');
    await fn(db, migrate as never);
  });
  if (!dataDir && !memoryTemplate) {
    // Taken before the app writes anything (keys and secrets are made later, at start-up), so the
    // copies share only the schema — as the on-disk prepared directory (data-dir.ts) does.
    memoryTemplate = (client as PGlite).dumpDataDir('none');
    await memoryTemplate.catch(() => undefined);
  }
  return database;
}

/**
 * PGlite on this thread, with the vector and pg_trgm extensions: the data directory `dirOpening`
 * opens (`dataDir`), or an in-memory database started from {@link memoryTemplate} when there is one.
 */
async function openInProcess(
  config: Config,
  dataDir: string | undefined,
  dirOpening: Promise<() => Promise<void>> | undefined,
): Promise<PGlite> {
  // One event-loop wait for the three modules, not three in a row.
  const [{ PGlite }, { vector }, { pg_trgm }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('@electric-sql/pglite-pgvector'),
    import('@electric-sql/pglite/contrib/pg_trgm'),
  ]);
  await dirOpening;
  const sharedBuffers = sharedBuffersOf(config, dataDir);
  // An in-memory database after the process's first starts as a copy of that one's migrated state.
  const template = dataDir ? undefined : await memoryTemplate?.catch(() => undefined);
  const wasmModule = await pgliteWasmModule();
  const client = await PGlite.create(dataDir ?? 'memory://', {
    extensions: { vector, pg_trgm },
    ...(wasmModule ? { pgliteWasmModule: wasmModule } : {}),
    // PGlite keeps shared buffers inside its WebAssembly memory: the PostgreSQL default (128MB) is
    // most of an idle embedded server's RSS, so a small database gets 16MB (32MB in memory; pgliteSharedBuffersFor).
    postgresqlconf: [`shared_buffers = ${sharedBuffers}`],
    ...(template ? { loadDataDir: template } : {}),
  });
  return client;
}

/**
 * The first in-memory PGlite database of this process, dumped (`dumpDataDir`, an uncompressed tar,
 * ~40 MB) right after its migrations: later in-memory databases (`DATABASE_IN_MEMORY=on`: tests and
 * benchmarks build many apps per process) start from it with `loadDataDir` instead of running
 * initdb and every migration again — about a quarter of the CPU per open (docs/benchmarks.md). If the newest migration differs (not within one process) {@link migrateDatabase}
 * still applies what is missing.
 */
let memoryTemplate: Promise<Blob | File> | undefined;

type Migrate = (db: unknown, cfg: { migrationsFolder: string }) => Promise<void>;

/**
 * Apply pending migrations (generated SQL in `src/db/migrations`) under the engine's lock — unless
 * the database already holds the newest migration file (same `created_at` and SHA-256 as drizzle
 * records them) and every older one (same `created_at`): then two reads (whether pgvector and the
 * log exist; the log) replace drizzle's two DDL statements and empty transaction, which are most of
 * a later open's migration step on PGlite. A file missing from the log although newer ones ran (merged
 * out of order) is applied after drizzle's migrator ({@link applySkippedMigrations}).
 */
async function migrateDatabase(
  database: Database,
  withLock: (fn: (db: unknown, migrate: Migrate) => Promise<void>) => Promise<void>,
): Promise<void> {
  const { readMigrationFiles } = await import('drizzle-orm/migrator');
  const files = readMigrationFiles({ migrationsFolder: MIGRATIONS_DIR });
  const newest = files.at(-1);
  const state = async () =>
    (
      await execRows<{ vector: boolean; migrated: boolean }>(
        database.db,
        sql`select exists (select 1 from pg_extension where extname = 'vector') as vector,
          to_regclass('drizzle.__drizzle_migrations') is not null as migrated`,
      )
    )[0];
  let { vector, migrated } = await state();
  const log = migrated ? await migrationLog(database.db) : new Map<number, string>();
  const current =
    newest !== undefined && log.get(newest.folderMillis) === newest.hash && files.every((f) => log.has(f.folderMillis));
  if (!current) {
    await withLock(async (db, migrate) => {
      await migrate(db, { migrationsFolder: MIGRATIONS_DIR });
      await applySkippedMigrations(db as Db, files);
    });
    ({ vector } = await state());
  }
  database.hasVector = vector;
}

/** A migration file as drizzle reads it: its statements, SHA-256 and journal `when` (ms). */
type MigrationFile = { sql: string[]; hash: string; folderMillis: number };

/** drizzle's migration log: journal time (`created_at`, ms) → SHA-256 of the file applied. */
async function migrationLog(db: Db): Promise<Map<number, string>> {
  const rows = await execRows<{ created_at: string | number; hash: string }>(
    db,
    sql`select created_at, hash from drizzle.__drizzle_migrations`,
  );
  return new Map(rows.map((r) => [Number(r.created_at), r.hash]));
}

/**
 * Apply the migration files whose journal time is missing from the log, oldest first, each in its
 * own transaction with its log row. drizzle's migrator applies only files newer than the newest one
 * applied, so a file merged after a newer one had already run on a database (0050 landed after
 * 0051) would be skipped there for good. Called under the migration lock, after drizzle's migrator.
 */
async function applySkippedMigrations(db: Db, files: MigrationFile[]): Promise<void> {
  const log = await migrationLog(db);
  for (const file of files.filter((f) => !log.has(f.folderMillis))) {
    await db.transaction(async (tx) => {
      for (const statement of file.sql) if (statement.trim()) await tx.execute(sql.raw(statement));
      await tx.execute(
        sql`insert into drizzle.__drizzle_migrations (hash, created_at) values (${file.hash}, ${file.folderMillis})`,
      );
    });
  }
}

/** Run raw SQL and return its rows (normalises the PGlite and node-postgres result shapes). */
export async function execRows<T = Record<string, unknown>>(db: Db | Tx, query: SQL): Promise<T[]> {
  const res = (await db.execute(query)) as unknown as { rows: T[] };
  return res.rows;
}

/**
 * A `timestamptz` column of a raw row ({@link execRows}) as a `Date`: node-postgres parses it,
 * PGlite's raw rows may carry PostgreSQL's text.
 */
export function rawTimestamp(v: Date | string): Date {
  return v instanceof Date ? v : new Date(v);
}

/** A `jsonb` object column of a raw row ({@link execRows}): parsed when it came as text; `{}` for SQL null. */
export function rawJsonObject(v: unknown): Record<string, unknown> {
  return (typeof v === 'string' ? JSON.parse(v) : (v ?? {})) as Record<string, unknown>;
}
