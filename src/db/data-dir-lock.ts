/**
 * The exclusive lock of an embedded data directory: PGlite has no multi-process locking of its
 * own, so two processes must never open one store.
 *
 * The lock is `proper-lockfile`'s (an atomic `mkdir` of `<dir>.lock`, its mtime refreshed every
 * 5 s) plus an owner record beside it, `<dir>.lock-owner.json`: the holder's pid, the start time of
 * that process (field 22 of `/proc/<pid>/stat`, clock ticks since boot), the boot id and the host
 * name. A lock whose holder is known to be dead — no such process, or the pid now belongs to a
 * process started at another time (pid reuse), or the machine rebooted — is taken over at once,
 * so a restart right after `kill -9` or a crash works. A holder that is alive is never taken over,
 * however long its event loop stalls. When the holder cannot be judged (another host sharing the
 * directory, a system without `/proc`, or no owner record: a holder that died between `mkdir` and
 * writing it, or an older version of the platform) the lock is stale once its mtime is 30 s old,
 * as `proper-lockfile` judges it.
 *
 * Every take and takeover runs under a short guard lock (`<dir>.lock-guard.lock`, held for
 * milliseconds), so the lock directory and its owner record always change together and two
 * starting processes cannot both remove a dead holder's lock and both believe they hold it.
 */
import fs from 'node:fs';
import os from 'node:os';
import lockfile from 'proper-lockfile';

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

/** Age (ms) after which a lock whose holder cannot be judged counts as abandoned (5 s refreshes keep a live one younger). */
const STALE_MS = 30_000;

/** Who holds a data directory's lock (`<dir>.lock-owner.json`). */
interface LockOwner {
  pid: number;
  /** Start time of the process, clock ticks since boot (`/proc/<pid>/stat` field 22); null without `/proc`. */
  start: string | null;
  /** `/proc/sys/kernel/random/boot_id`; null without it. */
  boot: string | null;
  host: string;
}

/** Start time of process `pid` (clock ticks since boot, as text); null when unknown (no `/proc`, or no such process). */
function processStart(pid: number): string | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which is in parentheses and may itself hold spaces or ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19] ?? null; // field 22 of the whole line; fields[0] is field 3
  } catch {
    return null;
  }
}

function bootId(): string | null {
  try {
    return fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return null;
  }
}

const ownerFile = (dataDir: string) => `${dataDir}.lock-owner.json`;
const lockDir = (dataDir: string) => `${dataDir}.lock`;

function readOwner(dataDir: string): LockOwner | null {
  try {
    const o = JSON.parse(fs.readFileSync(ownerFile(dataDir), 'utf8')) as Partial<LockOwner>;
    return typeof o.pid === 'number' && typeof o.host === 'string'
      ? { pid: o.pid, start: o.start ?? null, boot: o.boot ?? null, host: o.host }
      : null;
  } catch {
    return null;
  }
}

/** Record this process as the holder (written to a temporary file and renamed: readers see all of it or nothing). */
function writeOwner(dataDir: string): void {
  const owner: LockOwner = { pid: process.pid, start: processStart(process.pid), boot: bootId(), host: os.hostname() };
  const tmp = `${ownerFile(dataDir)}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(owner), { mode: 0o600 });
  fs.renameSync(tmp, ownerFile(dataDir));
}

/**
 * Whether the holder `owner` is known to be dead: on this host (same host name and boot), no
 * process has its pid, or the process with its pid started at another time. False when it is
 * alive or cannot be judged (another host or boot unknown, no `/proc`).
 */
function holderIsDead(owner: LockOwner): boolean {
  if (owner.host !== os.hostname()) return false;
  const boot = bootId();
  if (owner.boot && boot && owner.boot !== boot) return true; // the machine restarted since
  try {
    process.kill(owner.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return true;
    // EPERM: a process with that pid exists (another user's): judge by its start time
  }
  const start = processStart(owner.pid);
  return owner.start !== null && start !== null && start !== owner.start;
}

/** Whether the lock of `dataDir`, held by someone, may be taken over (see the module comment). */
function abandoned(dataDir: string): boolean {
  const owner = readOwner(dataDir);
  if (owner && holderIsDead(owner)) return true;
  if (owner?.host === os.hostname() && owner.start !== null) return false; // alive, and judged so
  const mtime = fs.statSync(lockDir(dataDir), { throwIfNoEntry: false })?.mtimeMs;
  return mtime === undefined || mtime < Date.now() - STALE_MS;
}

/**
 * Take the exclusive lock of an embedded data directory (module comment): a dead holder's lock is
 * taken over at once, a live holder's never.
 * @returns the release function (also run at process exit)
 * @throws DataDirLockedError when another live process (or this one) holds it
 */
export async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  // Held for milliseconds; a guard whose holder died in that window is taken over after 10 s.
  const releaseGuard = await lockfile.lock(`${dataDir}.lock-guard`, {
    stale: 10_000,
    realpath: false,
    retries: { retries: 40, factor: 1, minTimeout: 50, maxTimeout: 500 },
  });
  try {
    const take = () =>
      lockfile.lock(dataDir, {
        // Staleness is judged here (abandoned()), not by proper-lockfile's mtime rule alone: a live holder is never taken over.
        stale: 2 ** 31 - 1,
        update: 5_000,
        realpath: false,
        onCompromised: (err) => {
          // Our lock was removed by another process (it judged us gone: another host, our refreshes stalled > 30 s).
          process.emitWarning(`embedded data directory lock lost: ${err.message}`);
        },
      });
    let release: () => Promise<void>;
    try {
      release = await take();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ELOCKED' || !abandoned(dataDir)) {
        throw (err as NodeJS.ErrnoException).code === 'ELOCKED' ? new DataDirLockedError(dataDir) : err;
      }
      fs.rmSync(ownerFile(dataDir), { force: true });
      fs.rmSync(lockDir(dataDir), { recursive: true, force: true });
      release = await take().catch((e: NodeJS.ErrnoException) => {
        throw e.code === 'ELOCKED' ? new DataDirLockedError(dataDir) : e;
      });
    }
    writeOwner(dataDir);
    return async () => {
      fs.rmSync(ownerFile(dataDir), { force: true });
      await release();
    };
  } finally {
    await releaseGuard();
  }
}
