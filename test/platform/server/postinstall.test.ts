/**
 * `npm install`'s hook (package.json `postinstall` → scripts/postinstall.mjs): it builds the
 * prepared embedded data directory a machine's first start then only copies (and dist/ and the
 * web console), does nothing without sources (the image's `npm ci`), and never fails an install
 * (`--strict`, the image build, does).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { withDatabase } from '../../helpers/database.js';
import { execRows } from '../../../src/db/client.js';
import { MIGRATIONS_DIR, openDataDir, preparedKey } from '../../../src/db/data-dir.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..', '..');
const HOOK = path.join(ROOT, 'scripts', 'postinstall.mjs');

/** The hook `script` as npm runs it (in the package's directory), with `env` over a minimal environment. */
function runHook(env: Record<string, string>, args: string[] = [], script = HOOK) {
  const r = spawnSync(process.execPath, [script, ...args], {
    cwd: path.resolve(path.dirname(script), '..'),
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    encoding: 'utf8',
    timeout: 170_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('npm install prepares the first start (postinstall)', () => {
  it('builds the prepared data directory of the current migrations, which a fresh data directory then copies', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-postinstall-'));
    const templates = path.join(root, 'templates');
    try {
      const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
        scripts: Record<string, string>;
      };
      expect(pkg.scripts.postinstall).toBe('node scripts/postinstall.mjs');
      const first = runHook({ PGLITE_TEMPLATE_DIR: templates });
      expect(first.stderr).toBe('');
      expect(first.code).toBe(0);
      const prepared = path.join(templates, `pglite-${preparedKey()}`);
      expect(first.stdout).toContain(
        `prepared dist/, console/dist, packages/sdk and packages/cli, the embedded database template ${prepared}`,
      );
      // The web console too, which the first npm start would otherwise build before the server starts.
      const ensure = (await import(path.join(ROOT, 'scripts', 'ensure-console.mjs'))) as {
        consoleStale: () => boolean;
      };
      expect(ensure.consoleStale()).toBe(false);
      expect(fs.readdirSync(templates)).toEqual([path.basename(prepared)]);
      const built = fs.statSync(path.join(prepared, 'PG_VERSION')).ino;

      // A second install keeps it; a fresh data directory copies it (no warning: no initdb of its own).
      expect(runHook({ PGLITE_TEMPLATE_DIR: templates }).code).toBe(0);
      const warnings: string[] = [];
      const unlock = await openDataDir(
        path.join(root, 'data', 'pglite'),
        () => '16MB',
        (msg) => warnings.push(msg),
        templates,
      );
      await unlock();
      expect(warnings).toEqual([]);
      expect(fs.readdirSync(templates)).toEqual([path.basename(prepared)]);
      expect(fs.statSync(path.join(prepared, 'PG_VERSION')).ino).toBe(built);

      // What the install built holds every migration.
      const journal = JSON.parse(fs.readFileSync(path.join(MIGRATIONS_DIR, 'meta', '_journal.json'), 'utf8')) as {
        entries: unknown[];
      };
      const [row] = await withDatabase({ DATA_DIR: path.join(root, 'data'), PGLITE_TEMPLATE_DIR: templates }, (db) =>
        execRows<{ n: number }>(db, sql`select count(*)::int as n from drizzle.__drizzle_migrations`),
      );
      expect(row.n).toBe(journal.entries.length);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  }, 180_000);

  it('does nothing, and succeeds, before the sources are there (the image runs npm ci first)', () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-postinstall-'));
    try {
      const script = path.join(root, 'app', 'scripts', 'postinstall.mjs');
      fs.mkdirSync(path.dirname(script), { recursive: true });
      fs.copyFileSync(HOOK, script);
      const r = runHook({ PGLITE_TEMPLATE_DIR: path.join(root, 'templates') }, ['--strict'], script);
      expect(r).toMatchObject({ code: 0, stderr: '' });
      expect(r.stdout).toMatch(/nothing to prepare/);
      expect(fs.readdirSync(root)).toEqual(['app']);
      expect(fs.readdirSync(path.join(root, 'app')).sort()).toEqual(['scripts']);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it('never fails the install when the cache cannot be written (the first start builds it); --strict fails; PGLITE_TEMPLATE_DIR=off skips it', () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-postinstall-'));
    try {
      const blocked = path.join(root, 'not-a-dir');
      fs.writeFileSync(blocked, '');
      const lenient = runHook({ PGLITE_TEMPLATE_DIR: path.join(blocked, 'templates') });
      expect(lenient.code).toBe(0);
      expect(lenient.stderr).toMatch(
        /^postinstall: could not prepare the embedded database \(.*\); a fresh start builds it/,
      );
      expect(lenient.stdout).toMatch(
        /^postinstall: prepared dist\/, console\/dist, packages\/sdk and packages\/cli in /,
      );
      const strict = runHook({ PGLITE_TEMPLATE_DIR: path.join(blocked, 'templates') }, ['--strict']);
      expect(strict.code).toBe(1);

      const off = runHook({ PGLITE_TEMPLATE_DIR: 'off' }, ['--strict']);
      expect(off).toMatchObject({ code: 0, stderr: '' });
      expect(off.stdout).toMatch(/^postinstall: prepared dist\/, console\/dist, packages\/sdk and packages\/cli in /);
      expect(fs.readdirSync(root)).toEqual(['not-a-dir']);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  }, 120_000);
});
