/**
 * The embedded data directory (`DATA_DIR/pglite`): its exclusive lock, the sizing of PGlite's
 * shared buffers, and its first open.
 *
 * First open (issue 18): PGlite's `initdb` and the migrations of a fresh directory grow its
 * WebAssembly memory to ~750 MiB, and WebAssembly memory never shrinks — the process kept that
 * as idle RSS for its whole life. {@link openDataDir} therefore runs the first open (initdb +
 * migrations) in a short-lived helper process (`node -e`, plain JavaScript), whose exit returns
 * that memory to the system; the app then opens the initialised directory like any later open.
 * The helper starts as early as `main.ts` can start it, so it runs on the second core while the
 * main thread loads the application's modules. If the helper fails, the app's own open
 * initialises the directory as before (slower, not wrong).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import lockfile from 'proper-lockfile';

/** Where the SQL migrations live (`src/db/migrations`, journal in `meta/`). */
export const MIGRATIONS_DIR = path.join(import.meta.dirname, 'migrations');

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

/**
 * An embedded data directory, locked (see {@link lockDataDir}) and initialised: a fresh one is
 * initialised and migrated in a helper process first (module comment). `sharedBuffers` as passed to
 * PGlite (`postgresqlconf`). Resolves to the release function of the lock.
 * @throws DataDirLockedError when another live process holds the directory
 */
export async function openDataDir(dataDir: string, sharedBuffers: (dir: string) => string, log?: (msg: string) => void): Promise<() => Promise<void>> {
  fs.mkdirSync(dataDir, { recursive: true });
  const unlock = await lockDataDir(dataDir);
  if (!fs.existsSync(path.join(dataDir, 'PG_VERSION'))) {
    try {
      await initInHelper(dataDir, sharedBuffers(dataDir));
    } catch (err) {
      log?.(`first open in a helper process failed, initialising in this process: ${(err as Error).message}`);
    }
  }
  return unlock;
}

/** The helper process's program (plain JavaScript: it must not depend on the TypeScript loader). */
const INIT_PROGRAM = `
const w = JSON.parse(process.env.AGENT_PLATFORM_INIT);
(async () => {
  const [{ PGlite }, { vector }, { pg_trgm }, { drizzle }, { migrate }] = await Promise.all(w.modules.map((m) => import(m)));
  const client = await PGlite.create(w.dataDir, { extensions: { vector, pg_trgm }, postgresqlconf: ['shared_buffers = ' + w.sharedBuffers] });
  try {
    await migrate(drizzle({ client }), { migrationsFolder: w.migrationsFolder });
  } finally {
    await client.close();
  }
})().then(() => process.exit(0), (e) => { process.stderr.write(String((e && e.message) || e).slice(0, 2000)); process.exit(1); });
`;

/**
 * initdb + migrations of `dataDir` in a short-lived helper process (the memory they grow goes back
 * to the system with it; a worker thread was tried and left ~180 MiB in the parent's allocator).
 * @throws Error with the helper's message when it fails
 */
async function initInHelper(dataDir: string, sharedBuffers: string): Promise<void> {
  const modules = ['@electric-sql/pglite', '@electric-sql/pglite-pgvector', '@electric-sql/pglite/contrib/pg_trgm', 'drizzle-orm/pglite', 'drizzle-orm/pglite/migrator'].map((m) => import.meta.resolve(m));
  const env = { ...process.env, AGENT_PLATFORM_INIT: JSON.stringify({ dataDir, sharedBuffers, migrationsFolder: MIGRATIONS_DIR, modules }) };
  const child = spawn(process.execPath, ['--input-type=commonjs', '-e', INIT_PROGRAM], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => void (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0) throw new Error(stderr.trim() || `the helper process exited with ${code}`);
}
