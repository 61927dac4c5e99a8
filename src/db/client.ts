/**
 * Database connection: embedded PGlite (default) or PostgreSQL (`DATABASE_URL`), behind one
 * drizzle `Db` type and one SQL dialect. See DESIGN.md §2–3.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql, type SQL } from 'drizzle-orm';
import lockfile from 'proper-lockfile';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import type { Config } from '../config.js';
import * as schema from './schema/index.js';

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

/**
 * `shared_buffers` for an embedded PGlite whose databases (`base/` of its data directory; not the
 * WAL, which is never read through the buffers) hold `dataBytes` bytes (the `auto` default of
 * `PGLITE_SHARED_BUFFERS`): 1.25 × the data, so the whole database stays cached (a
 * 100k-memory store is ~480 MB, its HNSW index ~200 MB — with fewer buffers than that, full-text
 * reads evict index pages and search slows 2–4×, bench/memory.ts), at least 32MB (a small or new
 * database: PGlite commits its buffers in WebAssembly memory, so they are idle RSS) and at most
 * 1GB or a quarter of `totalMemBytes`. Sized once at start-up: a grown database gets more after a
 * restart.
 * @returns a PostgreSQL size in MB, e.g. `"600MB"`
 */
export function pgliteSharedBuffersFor(dataBytes: number, totalMemBytes: number): string {
  const MB = 1024 * 1024;
  const cap = Math.max(32, Math.min(1024, Math.floor(totalMemBytes / 4 / MB)));
  return `${Math.min(cap, Math.max(32, Math.ceil((dataBytes * 1.25) / MB)))}MB`;
}

/** Total size in bytes of the regular files under `dir` (recursively; 0 when it does not exist). */
export function directoryBytes(dir: string): number {
  let total = 0;
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) total += directoryBytes(p);
    else if (e.isFile()) total += fs.statSync(p, { throwIfNoEntry: false })?.size ?? 0;
  }
  return total;
}

const MIGRATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');
/** Advisory lock key that serialises migrations across instances ("agentplt" as int). */
const MIGRATION_LOCK_KEY = 0x61676e74;

/** Open the database selected by `config` (PGlite under `dataDir/pglite`, in memory, or pg). */
export async function openDatabase(config: Config): Promise<Database> {
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

  const { PGlite } = await import('@electric-sql/pglite');
  const { vector } = await import('@electric-sql/pglite-pgvector');
  const { pg_trgm } = await import('@electric-sql/pglite/contrib/pg_trgm');
  const { drizzle } = await import('drizzle-orm/pglite');
  let dataDir: string | undefined;
  let unlock: (() => Promise<void>) | undefined;
  if (!config.databaseInMemory) {
    dataDir = path.join(config.dataDir, 'pglite');
    fs.mkdirSync(dataDir, { recursive: true });
    unlock = await lockDataDir(dataDir);
  }
  const sharedBuffers =
    config.pgliteSharedBuffers === 'auto' ? pgliteSharedBuffersFor(dataDir ? directoryBytes(path.join(dataDir, 'base')) : 0, os.totalmem()) : config.pgliteSharedBuffers;
  const client = await PGlite.create(dataDir ?? 'memory://', {
    extensions: { vector, pg_trgm },
    // PGlite keeps shared buffers inside its WebAssembly memory: the PostgreSQL default (128MB) is
    // most of an idle embedded server's RSS, so a small database gets 32MB (pgliteSharedBuffersFor).
    postgresqlconf: [`shared_buffers = ${sharedBuffers}`],
  });
  const db = drizzle({ client, schema }) as unknown as Db;
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
  return database;
}

/** The embedded data directory is held by another process (a running server or CLI). */
export class DataDirLockedError extends Error {
  constructor(readonly dataDir: string) {
    super(
      `the embedded database ${dataDir} is in use by another process (a running server or CLI): ` +
        'stop it first, or change roles through the running server (PUT /admin/users/{id}/roles)',
    );
    this.name = 'DataDirLockedError';
  }
}

/**
 * Take the exclusive lock of an embedded data directory (`proper-lockfile`: an atomic `mkdir` of
 * `<dir>.lock`, refreshed every 5 s and taken over when a crashed holder left it 30 s stale), so
 * two processes never write one PGlite store (PGlite has no multi-process locking of its own).
 * @returns the release function (also run at process exit)
 * @throws DataDirLockedError when another live process holds it
 */
export async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  try {
    return await lockfile.lock(dataDir, {
      stale: 30_000,
      update: 5_000,
      realpath: false,
      onCompromised: (err) => {
        // Another process took the lock over (ours went stale: the event loop was blocked > 30 s).
        process.emitWarning(`embedded data directory lock lost: ${err.message}`);
      },
    });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ELOCKED') throw new DataDirLockedError(dataDir);
    throw err;
  }
}

type Migrate = (db: unknown, cfg: { migrationsFolder: string }) => Promise<void>;

/** Apply pending migrations (generated SQL in `src/db/migrations`) under the engine's lock. */
async function migrateDatabase(
  database: Database,
  withLock: (fn: (db: unknown, migrate: Migrate) => Promise<void>) => Promise<void>,
): Promise<void> {
  await withLock(async (db, migrate) => {
    await migrate(db, { migrationsFolder: MIGRATIONS_DIR });
  });
  const rows = await execRows(database.db, sql`select 1 from pg_extension where extname = 'vector'`);
  database.hasVector = rows.length > 0;
}

/** Run raw SQL and return its rows (normalises the PGlite and node-postgres result shapes). */
export async function execRows<T = Record<string, unknown>>(db: Db | Tx, query: SQL): Promise<T[]> {
  const res = (await db.execute(query)) as unknown as { rows: T[] };
  return res.rows;
}
