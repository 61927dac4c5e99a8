/**
 * The embedded data directory (`DATA_DIR/pglite`): its exclusive lock, the sizing of PGlite's
 * shared buffers, and its first open.
 *
 * First open: PGlite's `initdb` and the migrations of a fresh directory take seconds and
 * grow its WebAssembly memory to ~750 MiB, which never shrinks. So a fresh directory is never
 * initialised by the server itself:
 * - it is a copy of a *prepared directory* (initdb + every migration, nothing else: the migrations
 *   create no random or per-installation rows — keys and secrets are made at first start-up), kept
 *   in a cache (`PGLITE_TEMPLATE_DIR`, default `node_modules/.cache/agent-platform`) under a key
 *   that hashes the PGlite and pgvector versions and every migration file, so a changed migration
 *   or engine never reuses an old one. Copying a closed cluster's files is a sound copy of it
 *   (PostgreSQL docs §25.2, file-system level backup with the server shut down).
 * - `npm install` / `npm ci` build it (package.json `postinstall`, scripts/postinstall.mjs →
 *   {@link prepareTemplates}; the image builds it in its own step), so a machine's first start
 *   copies it like any later first open: initdb alone is seconds of CPU (its post-bootstrap SQL,
 *   not the migrations), more than a start may take.
 * - when no prepared directory exists yet (install scripts skipped, the cache removed, a migration
 *   or engine changed since the install), a short-lived helper process (`node -e`, plain
 *   JavaScript) builds it (initdb + migrations); its exit returns that memory to the system. The
 *   helper starts as early as `main.ts` can start it, so it runs on the second core while the main
 *   thread loads the application's modules.
 * If any of this fails, the app's own open initialises the directory as before (slower, not wrong).
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Config } from '../config.js';
import { lockDataDir } from './data-dir-lock.js';

export { DataDirLockedError, lockDataDir } from './data-dir-lock.js';

/** Where the SQL migrations live (`src/db/migrations`, journal in `meta/`). */
export const MIGRATIONS_DIR = path.join(import.meta.dirname, 'migrations');

/**
 * `shared_buffers` for an embedded PGlite whose served database holds `dataBytes` bytes (the `auto`
 * default of `PGLITE_SHARED_BUFFERS`): 1.25 × the data, so the whole database stays cached (a
 * 100k-memory store is ~480 MB, its HNSW index ~200 MB — with fewer buffers than that, full-text
 * reads evict index pages and search slows 2–4×, bench/memory.ts), at least `floorMb` (a small or
 * new database: PGlite commits its buffers in WebAssembly memory, so they are idle RSS) and at most
 * 1GB or a quarter of `totalMemBytes`. Sized once at start-up: a grown database gets more after a
 * restart.
 * @param floorMb the least size, MB: {@link DATA_DIR_BUFFERS_FLOOR_MB} for a data directory, {@link MEMORY_BUFFERS_FLOOR_MB} in memory
 * @returns a PostgreSQL size in MB, e.g. `"600MB"`
 */
export function pgliteSharedBuffersFor(
  dataBytes: number,
  totalMemBytes: number,
  floorMb = MEMORY_BUFFERS_FLOOR_MB,
): string {
  const MB = 1024 * 1024;
  const cap = Math.max(floorMb, Math.min(1024, Math.floor(totalMemBytes / 4 / MB)));
  return `${Math.min(cap, Math.max(floorMb, Math.ceil((dataBytes * 1.25) / MB)))}MB`;
}

/**
 * Least `shared_buffers` of an embedded data directory, MB: a new one serves ~10 MB, whose pages the
 * operating system's cache also holds (PGlite reads real files); 16MB instead of 32MB is ~30 MiB
 * less idle RSS (docs/adr/0274-startup-buffers-16-pglite-shared-buffers-auto-sizes.md).
 */
export const DATA_DIR_BUFFERS_FLOOR_MB = 16;

/** Least `shared_buffers` of an in-memory PGlite (tests, benchmarks), MB: its pages have no other home than its memory file system. */
export const MEMORY_BUFFERS_FLOOR_MB = 32;

/**
 * Bytes of the databases PGlite serves under its data directory `dir`: `base/` without the
 * templates (`template1` is OID 1 and `template0` OID 4 since PostgreSQL 15; ~14 MB that are never
 * read while serving).
 */
export function servedDatabaseBytes(dir: string): number {
  const base = path.join(dir, 'base');
  let entries: string[];
  try {
    entries = fs.readdirSync(base);
  } catch {
    return 0;
  }
  return entries
    .filter((oid) => oid !== '1' && oid !== '4')
    .reduce((sum, oid) => sum + directoryBytes(path.join(base, oid)), 0);
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

/** `shared_buffers` for the embedded data directory `dir` (or in-memory PGlite when undefined) under `config`. */
export function sharedBuffersOf(config: Config, dir: string | undefined): string {
  if (config.pgliteSharedBuffers !== 'auto') return config.pgliteSharedBuffers;
  return dir
    ? pgliteSharedBuffersFor(servedDatabaseBytes(dir), os.totalmem(), DATA_DIR_BUFFERS_FLOOR_MB)
    : pgliteSharedBuffersFor(0, os.totalmem(), MEMORY_BUFFERS_FLOOR_MB);
}

/**
 * Start opening the embedded data directory of `config` (lock; a fresh one is copied from a
 * prepared directory or initialised in a helper process), so that `main.ts` can overlap it with
 * loading the app's modules; hand the result to `openDatabase` (db/client.ts). undefined when `config` has no embedded data
 * directory (PostgreSQL or in-memory PGlite). Resolves to the lock's release function.
 * @throws DataDirLockedError (through the promise) when another process holds the directory
 */
export function openEmbeddedDataDir(config: Config): Promise<() => Promise<void>> | undefined {
  if (config.databaseUrl || config.databaseInMemory) return undefined;
  return openDataDir(
    path.join(config.dataDir, 'pglite'),
    (dir) => sharedBuffersOf(config, dir),
    (msg) => process.emitWarning(msg),
    config.pgliteTemplateDir ?? undefined,
  );
}

/** True when the embedded data directory of `config` already holds a cluster (opened before: no copy or initialisation to wait for). */
export function embeddedDataDirInitialised(config: Config): boolean {
  return (
    !config.databaseUrl && !config.databaseInMemory && fs.existsSync(path.join(config.dataDir, 'pglite', 'PG_VERSION'))
  );
}

/**
 * An embedded data directory, locked (see {@link lockDataDir}) and initialised: a fresh (empty)
 * one becomes a copy of the prepared directory in `templates` (built first by a helper process
 * when missing), or — without `templates`, or when that fails — is initialised and migrated in
 * place by a helper process (module comment). `sharedBuffers` as passed to PGlite
 * (`postgresqlconf`). Resolves to the release function of the lock.
 * @throws DataDirLockedError when another live process holds the directory
 */
export async function openDataDir(
  dataDir: string,
  sharedBuffers: (dir: string) => string,
  log?: (msg: string) => void,
  templates?: string,
): Promise<() => Promise<void>> {
  fs.mkdirSync(dataDir, { recursive: true });
  const unlock = await lockDataDir(dataDir);
  await initialise(dataDir, sharedBuffers, log, templates);
  // The owner's alone, as PostgreSQL requires of a data directory (0700): PGlite creates most of
  // its files 0666, so without this any local account could read or change the database.
  try {
    fs.chmodSync(dataDir, 0o700);
  } catch (err) {
    log?.(`could not make ${dataDir} private (mode 0700): ${(err as Error).message}`);
  }
  return unlock;
}

/** Initialise the locked `dataDir` when it holds no cluster yet (see {@link openDataDir}). */
async function initialise(
  dataDir: string,
  sharedBuffers: (dir: string) => string,
  log?: (msg: string) => void,
  templates?: string,
): Promise<void> {
  if (fs.existsSync(path.join(dataDir, 'PG_VERSION'))) return;
  if (templates && fs.readdirSync(dataDir).length === 0) {
    try {
      await copyPrepared(await preparedDir(templates, sharedBuffers(dataDir)), dataDir);
      return;
    } catch (err) {
      log?.(`no prepared data directory (${(err as Error).message}): initialising this one`);
    }
  }
  try {
    await initInHelper(dataDir, sharedBuffers(dataDir));
  } catch (err) {
    log?.(`first open in a helper process failed, initialising in this process: ${(err as Error).message}`);
  }
}

/** Bump when what a prepared directory holds changes other than through the key's inputs (2: no file writable by group or others). */
const PREPARED_FORMAT = 2;

/** Version of the installed package `name` (from its package.json, found above its entry file). */
function packageVersion(name: string): string {
  let dir = path.dirname(new URL(import.meta.resolve(name)).pathname);
  for (;;) {
    const file = path.join(dir, 'package.json');
    if (fs.existsSync(file)) {
      const pkg = JSON.parse(fs.readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === name) return String(pkg.version);
    }
    const up = path.dirname(dir);
    if (up === dir) throw new Error(`package.json of ${name} not found`);
    dir = up;
  }
}

/**
 * Key of the prepared directory the current code would build: 16 hex digits of SHA-256 over
 * {@link PREPARED_FORMAT}, the versions of PGlite and pgvector, the migration journal and every
 * migration file named in it. Any change to one of them is another key (another directory).
 */
export function preparedKey(migrationsDir = MIGRATIONS_DIR): string {
  const hash = createHash('sha256').update(`format ${PREPARED_FORMAT}\n`);
  for (const name of ['@electric-sql/pglite', '@electric-sql/pglite-pgvector'])
    hash.update(`${name} ${packageVersion(name)}\n`);
  const journal = fs.readFileSync(path.join(migrationsDir, 'meta', '_journal.json'));
  hash.update(journal);
  for (const { tag } of (JSON.parse(journal.toString()) as { entries: Array<{ tag: string }> }).entries) {
    hash.update(`\n${tag}\n`).update(fs.readFileSync(path.join(migrationsDir, `${tag}.sql`)));
  }
  return hash.digest('hex').slice(0, 16);
}

/**
 * The prepared directory of the current code (its {@link preparedKey}) under the cache directory
 * `templates`, built when missing — what `npm install` runs (scripts/postinstall.mjs), so that a
 * machine's first start finds it. A no-op when it exists. The PGlite it is built with has a 16MB
 * `shared_buffers` (PGlite rewrites `postgresql.conf` at every open: not a property of the copies).
 * @returns its path
 * @throws Error when it cannot be built (the helper's message) or `templates` is not writable
 */
export function prepareTemplates(templates: string): Promise<string> {
  return preparedDir(templates, `${DATA_DIR_BUFFERS_FLOOR_MB}MB`);
}

/**
 * The prepared directory of the current key under `templates`, built by a helper process when
 * missing: into a temporary directory renamed into place when complete, so a directory under its
 * final name is always whole (a concurrent builder's rename wins, ours is dropped); one under its
 * final name without `PG_VERSION` was damaged since and is replaced. Prepared directories of other
 * keys and stale temporary ones are removed whenever it is used.
 * @returns its path
 * @throws Error when it cannot be built or the cache directory is not writable
 */
async function preparedDir(templates: string, sharedBuffers: string): Promise<string> {
  const name = `pglite-${preparedKey()}`;
  const dir = path.join(templates, name);
  if (fs.existsSync(path.join(dir, 'PG_VERSION'))) {
    pruneTemplates(templates, name);
    return dir;
  }
  // Only a whole directory is ever renamed to this name: one without PG_VERSION was damaged since.
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(templates, { recursive: true });
  const tmp = `${dir}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    await initInHelper(tmp, sharedBuffers);
    denyOthersWrite(tmp);
    try {
      fs.renameSync(tmp, dir);
    } catch (err) {
      if (!fs.existsSync(path.join(dir, 'PG_VERSION'))) throw err;
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  pruneTemplates(templates, name);
  return dir;
}

/**
 * Take write permission away from group and others on every file and directory under `dir`:
 * PGlite creates most of a cluster's files 0666 (968 of 1,177 in a prepared directory), and a
 * prepared directory is copied into every fresh data directory, so another local account must not be
 * able to change it. Readable stays readable (the image's server user reads a root-built cache).
 */
function denyOthersWrite(dir: string): void {
  for (const entry of ['', ...(fs.readdirSync(dir, { recursive: true }) as string[])]) {
    const p = path.join(dir, entry);
    const mode = fs.lstatSync(p).mode & 0o7777;
    if (mode & 0o022) fs.chmodSync(p, mode & ~0o022);
  }
}

/** Remove prepared directories of other keys, and temporary ones of builders that died over an hour ago (best effort). */
function pruneTemplates(templates: string, keep: string): void {
  for (const other of fs.readdirSync(templates)) {
    const p = path.join(templates, other);
    const stale =
      other.startsWith('pglite-') &&
      other !== keep &&
      (!other.includes('.tmp-') || Date.now() - (fs.statSync(p, { throwIfNoEntry: false })?.mtimeMs ?? 0) > 3_600_000);
    if (stale) fs.rmSync(p, { recursive: true, force: true });
  }
}

/**
 * Copy the prepared directory `from` into the empty directory `to` (through a sibling renamed over
 * it, so `to` never holds half a cluster; copy-on-write where the file system supports it).
 */
async function copyPrepared(from: string, to: string): Promise<void> {
  const tmp = `${to}.prepared-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    await copyTree(from, tmp);
    fs.rmdirSync(to);
    fs.renameSync(tmp, to);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/**
 * Copy the directory tree `from` to the new path `to` (modes and times kept, copy-on-write where the
 * file system supports it): GNU `cp` in a child process where it runs, else `fs.promises.cp`. The
 * child's copy loop costs this process no CPU: `fs.promises.cp` of the ~42 MB, ~1,200-file
 * prepared directory took ~1.4 s of this process's CPU during a first open, `cp` ~0.8 s of wall time
 * beside it. A `cp` that is missing or fails (busybox has no `--reflink`) leaves
 * nothing behind and the copy is made in-process.
 * @throws Error when the in-process copy fails
 */
async function copyTree(from: string, to: string): Promise<void> {
  if (process.platform === 'linux') {
    const copied = await new Promise<boolean>((resolve) => {
      const child = spawn('cp', ['-R', '-T', '--preserve=mode,timestamps', '--reflink=auto', from, to], {
        stdio: 'ignore',
      });
      child.once('error', () => resolve(false));
      child.once('exit', (code) => resolve(code === 0));
    });
    if (copied) return;
    fs.rmSync(to, { recursive: true, force: true });
  }
  await fs.promises.cp(from, to, { recursive: true, mode: fs.constants.COPYFILE_FICLONE });
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
  const modules = [
    '@electric-sql/pglite',
    '@electric-sql/pglite-pgvector',
    '@electric-sql/pglite/contrib/pg_trgm',
    'drizzle-orm/pglite',
    'drizzle-orm/pglite/migrator',
  ].map((m) => import.meta.resolve(m));
  const env = {
    ...process.env,
    AGENT_PLATFORM_INIT: JSON.stringify({ dataDir, sharedBuffers, migrationsFolder: MIGRATIONS_DIR, modules }),
  };
  const child = spawn(process.execPath, ['--input-type=commonjs', '-e', INIT_PROGRAM], {
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => void (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0) throw new Error(stderr.trim() || `the helper process exited with ${code}`);
}
