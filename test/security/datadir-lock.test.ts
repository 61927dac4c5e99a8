/**
 * The embedded data directory's lock judges its holder by liveness, not by age: a holder killed
 * with SIGKILL leaves a lock that the next process takes over at once (it used to block every
 * start for 30 s: "in use by another process"), while a live holder blocks however old its lock
 * looks. A pid now used by another process (another start time) counts as dead. Holders are real
 * processes (`node`), killed for real.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DataDirLockedError, lockDataDir } from '../../src/db/data-dir-lock.js';
import { ROOT } from '../helpers/server-process.js';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-lock-sec-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
let n = 0;
const freshDir = () => path.join(root, `d${n++}`);

const HOLDER = `
import { lockDataDir } from ${JSON.stringify(path.join(ROOT, 'src/db/data-dir-lock.ts'))};
await lockDataDir(process.argv[1]);
process.stdout.write('locked\\n');
setInterval(() => {}, 1000);
`;

/** A separate process that takes the lock of `dir` and holds it until killed. */
async function holder(dir: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', HOLDER, dir], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => d.toString().includes('locked') && resolve());
    child.once('exit', (code) => reject(new Error(`holder exited ${code}: ${err}`)));
  });
  return child;
}

const killed = (c: ChildProcess) =>
  new Promise<void>((resolve) =>
    c.exitCode !== null || c.signalCode !== null ? resolve() : c.once('exit', () => resolve()),
  );

describe('data directory lock: liveness, not age', () => {
  it('a live holder blocks, even when its lock looks an hour old; after kill -9 the lock is taken at once', async () => {
    const dir = freshDir();
    const child = await holder(dir);
    try {
      await expect(lockDataDir(dir)).rejects.toBeInstanceOf(DataDirLockedError);
      const hourAgo = new Date(Date.now() - 3_600_000);
      fs.utimesSync(`${dir}.lock`, hourAgo, hourAgo);
      await expect(lockDataDir(dir)).rejects.toBeInstanceOf(DataDirLockedError);
    } finally {
      child.kill('SIGKILL');
      await killed(child);
    }
    expect(fs.existsSync(`${dir}.lock`)).toBe(true); // left behind by the killed holder
    const t0 = performance.now();
    const release = await lockDataDir(dir);
    expect(performance.now() - t0).toBeLessThan(5_000);
    const owner = JSON.parse(fs.readFileSync(`${dir}.lock-owner.json`, 'utf8'));
    expect(owner.pid).toBe(process.pid);
    await release();
    expect(fs.existsSync(`${dir}.lock`)).toBe(false);
    expect(fs.existsSync(`${dir}.lock-owner.json`)).toBe(false);
  }, 60_000);

  it('a recorded pid that now belongs to a process started at another time is a dead holder', async () => {
    const dir = freshDir();
    fs.mkdirSync(`${dir}.lock`, { recursive: true });
    // This very process's pid, but another start time: the pid was reused.
    fs.writeFileSync(
      `${dir}.lock-owner.json`,
      JSON.stringify({ pid: process.pid, start: '1', boot: null, host: os.hostname() }),
    );
    const release = await lockDataDir(dir);
    await release();
  });

  it('a lock without an owner record (holder cannot be judged) blocks until it is 30 s stale', async () => {
    const dir = freshDir();
    fs.mkdirSync(`${dir}.lock`, { recursive: true });
    await expect(lockDataDir(dir)).rejects.toBeInstanceOf(DataDirLockedError);
    const old = new Date(Date.now() - 31_000);
    fs.utimesSync(`${dir}.lock`, old, old);
    const release = await lockDataDir(dir);
    await release();
  });

  it('two processes racing for a dead holder’s lock: exactly one wins', async () => {
    const dir = freshDir();
    const first = await holder(dir);
    first.kill('SIGKILL');
    await killed(first);
    const racers = await Promise.allSettled([holder(dir), holder(dir)]);
    const won = racers.filter((r) => r.status === 'fulfilled');
    try {
      expect(won).toHaveLength(1);
      expect(String((racers.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason)).toMatch(
        /in use by another process/,
      );
    } finally {
      for (const r of won) (r as PromiseFulfilledResult<ChildProcess>).value.kill('SIGKILL');
    }
  }, 60_000);
});
