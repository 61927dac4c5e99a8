/**
 * One writer per embedded store (issue 19 §4): while a server process holds the PGlite data
 * directory, the operator CLI started as a second process refuses with one clear line (exit 1)
 * instead of writing changes the server never sees; after the server stops, the CLI works. Within
 * one process, a second lock of a held directory fails the same way. A server killed with
 * SIGKILL leaves its lock behind, and a restart seconds later takes it over (its holder is dead)
 * while a second server beside a live one is still refused.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DataDirLockedError, lockDataDir } from '../../src/db/client.js';
import { freePort } from '../helpers/net.js';
import { startServerProcess } from '../helpers/server-process.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-lock-'));
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));
const baseEnv = {
  PATH: process.env.PATH!,
  HOME: process.env.HOME ?? '/tmp',
  NODE_ENV: 'test',
  HOST: '127.0.0.1',
  DATA_DIR: dataDir,
  DATABASE_IN_MEMORY: 'off',
};

/** Run the CLI as its own process; resolves with its exit code and output. */
function cli(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/index.ts', ...args], {
    cwd: ROOT,
    env: baseEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stdout, stderr })));
}

describe('embedded data directory lock', () => {
  it('the CLI refuses while a server holds the store, and works once it stopped', async () => {
    const port = await freePort();
    const server = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: ROOT,
      env: { ...baseEnv, PORT: String(port), LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => server.on('exit', resolve));
    let out = '';
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`server not ready: ${out}`)), 300_000);
      server.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('agent platform ready')) clearTimeout(t), resolve();
      });
      void exited.then((code) => reject(new Error(`server exited ${code}: ${out}`)));
    });

    const refused = await cli('users', 'show', 'nobody@example.test');
    expect(refused.code).toBe(1);
    expect(
      refused.stderr
        .trim()
        .split('\n')
        .filter((l) => !l.includes('oidc-provider')),
    ).toEqual([
      expect.stringMatching(/^the embedded database .*pglite is in use by another process \(a running server or CLI\)/),
    ]);

    server.kill('SIGTERM');
    expect(await exited).toBe(0);
    const after = await cli('users', 'show', 'nobody@example.test');
    expect(after).toMatchObject({ code: 1, stderr: expect.stringContaining('no user with email nobody@example.test') });
  }, 420_000);

  it('a second lock of a held directory throws DataDirLockedError; after release it can be taken again', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-lock-unit-'));
    try {
      const release = await lockDataDir(dir);
      await expect(lockDataDir(dir)).rejects.toBeInstanceOf(DataDirLockedError);
      await release();
      const again = await lockDataDir(dir);
      await again();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('after kill -9 a restart within seconds takes the lock; a live holder still blocks a second server', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-lock-kill-'));
    const env = async () => ({ DATA_DIR: dir, DATABASE_IN_MEMORY: 'off', PORT: String(await freePort()) });
    try {
      const first = startServerProcess(await env());
      await first.waitFor(/agent platform ready/, 300_000);
      // A second server beside a live holder: one clear line, exit 1.
      const second = startServerProcess(await env());
      const refused = await second.exited;
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/is in use by another process/);

      first.child.kill('SIGKILL');
      expect((await first.exited).signal).toBe('SIGKILL');
      expect(fs.existsSync(path.join(dir, 'pglite.lock'))).toBe(true); // left behind by the killed holder
      const killedAt = Date.now();
      const third = startServerProcess(await env());
      try {
        await third.waitFor(/agent platform ready/, 300_000);
        // Before the change this start exited 1 until the lock's mtime was 30 s old.
        expect(third.child.exitCode).toBeNull();
        expect(third.lines.join('\n')).not.toMatch(/in use by another process/);
        const res = await fetch(`${third.base}/healthz`);
        expect(res.status).toBe(200);
        console.info(`restart after kill -9 ready in ${Date.now() - killedAt} ms`);
      } finally {
        third.child.kill('SIGTERM');
        expect((await third.exited).code).toBe(0);
      }
      // A clean stop removes the lock and its owner record.
      expect(fs.readdirSync(dir).filter((f) => f.startsWith('pglite.lock'))).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 900_000);
});
