/**
 * Embedded-database sizing: `PGLITE_SHARED_BUFFERS=auto` (the default) follows the data directory,
 * within 32MB and min(1GB, a quarter of the machine's memory).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { withDatabase } from '../../helpers/database.js';
import { sql } from 'drizzle-orm';
import {
  type Db,
  directoryBytes,
  execRows,
  pgliteSharedBuffersFor,
  servedDatabaseBytes,
} from '../../../src/db/client.js';
import { MIGRATIONS_DIR, openDataDir, preparedKey } from '../../../src/db/data-dir.js';

const MB = 1024 * 1024;
const GB = 1024 * MB;

describe('PGlite shared buffers', () => {
  it('sizes to 1.25 × the data, from 32MB up to 1GB or a quarter of the memory', () => {
    expect(pgliteSharedBuffersFor(0, 24 * GB)).toBe('32MB');
    expect(pgliteSharedBuffersFor(10 * MB, 24 * GB)).toBe('32MB');
    expect(pgliteSharedBuffersFor(478 * MB, 24 * GB)).toBe('598MB'); // a 100k-memory store
    expect(pgliteSharedBuffersFor(5 * GB, 24 * GB)).toBe('1024MB');
    expect(pgliteSharedBuffersFor(478 * MB, 2 * GB)).toBe('512MB'); // a quarter of 2 GiB
    expect(pgliteSharedBuffersFor(478 * MB, 64 * MB)).toBe('32MB'); // never below the floor
    // a data directory's floor is 16MB
    expect(pgliteSharedBuffersFor(9 * MB, 24 * GB, 16)).toBe('16MB');
    expect(pgliteSharedBuffersFor(20 * MB, 24 * GB, 16)).toBe('25MB');
    expect(pgliteSharedBuffersFor(478 * MB, 64 * MB, 16)).toBe('16MB');
  });

  it('sizes from the served database, not the templates (base/1, base/4)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-served-'));
    try {
      for (const [oid, bytes] of [
        ['1', 7 * MB],
        ['4', 7 * MB],
        ['5', 3 * MB],
        ['16384', MB],
      ] as const) {
        fs.mkdirSync(path.join(dir, 'base', oid), { recursive: true });
        fs.writeFileSync(path.join(dir, 'base', oid, '1259'), Buffer.alloc(bytes));
      }
      expect(servedDatabaseBytes(dir)).toBe(4 * MB);
      expect(servedDatabaseBytes(path.join(dir, 'missing'))).toBe(0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('counts the bytes of every file below the data directory', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-size-'));
    try {
      fs.mkdirSync(path.join(dir, 'base', '5'), { recursive: true });
      fs.writeFileSync(path.join(dir, 'PG_VERSION'), '17\n');
      fs.writeFileSync(path.join(dir, 'base', '5', '1259'), Buffer.alloc(8192));
      fs.writeFileSync(path.join(dir, 'base', '5', '1259_fsm'), Buffer.alloc(24576));
      expect(directoryBytes(dir)).toBe(3 + 8192 + 24576);
      expect(directoryBytes(path.join(dir, 'missing'))).toBe(0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('accepts auto (the default) or a PostgreSQL size, and refuses anything else', () => {
    expect(loadConfig({ NODE_ENV: 'test' }).pgliteSharedBuffers).toBe('auto');
    expect(loadConfig({ NODE_ENV: 'test', PGLITE_SHARED_BUFFERS: '640MB' }).pgliteSharedBuffers).toBe('640MB');
    expect(() => loadConfig({ NODE_ENV: 'test', PGLITE_SHARED_BUFFERS: 'lots' })).toThrow(/PGLITE_SHARED_BUFFERS/);
  });
  it('starts an on-disk PGlite with the size auto chose (a new database: 16MB) or the one configured', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-buffers-'));
    try {
      for (const [setting, expected] of [
        ['auto', '16MB'],
        ['48MB', '48MB'],
      ]) {
        const [row] = await withDatabase(
          { DATA_DIR: dir, PGLITE_SHARED_BUFFERS: setting, PGLITE_TEMPLATE_DIR: path.join(dir, 'templates') },
          (db) => execRows<{ shared_buffers: string }>(db, sql`show shared_buffers`),
        );
        expect(row.shared_buffers).toBe(expected);
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
    // Three PGlite boots (the fresh directory's helper process, then two opens) on a shared machine.
  }, 120_000);
});

describe('first open of a fresh data directory', () => {
  it('is initialised and migrated by a helper process before this process opens it', async () => {
    const dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ap-first-open-')), 'pglite');
    const warnings: string[] = [];
    try {
      const unlock = await openDataDir(
        dir,
        () => '32MB',
        (msg) => warnings.push(msg),
      );
      // No PGlite has run in this process yet: the cluster and the migrations are the helper's work.
      expect(warnings).toEqual([]);
      expect(fs.existsSync(path.join(dir, 'PG_VERSION'))).toBe(true);
      await unlock();
      const journal = JSON.parse(fs.readFileSync(path.join(MIGRATIONS_DIR, 'meta', '_journal.json'), 'utf8')) as {
        entries: unknown[];
      };
      const [row] = await withDatabase({ DATA_DIR: path.dirname(dir) }, (db) =>
        execRows<{ n: number }>(db, sql`select count(*)::int as n from drizzle.__drizzle_migrations`),
      );
      expect(row.n).toBe(journal.entries.length);
    } finally {
      fs.rmSync(path.dirname(dir), { recursive: true, force: true });
    }
  }, 120_000);
});

describe('first open from a prepared data directory', () => {
  it('builds the prepared directory once, copies it into each fresh data directory, and keys it by the migrations', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-prepared-'));
    const templates = path.join(root, 'templates');
    const warnings: string[] = [];
    try {
      const key = preparedKey();
      expect(key).toMatch(/^[0-9a-f]{16}$/);
      // A changed migration is another key.
      const migrations = path.join(root, 'migrations');
      fs.cpSync(MIGRATIONS_DIR, migrations, { recursive: true });
      fs.appendFileSync(path.join(migrations, '0001_identity.sql'), '\n-- changed\n');
      expect(preparedKey(migrations)).not.toBe(key);

      for (const name of ['a', 'b']) {
        const dir = path.join(root, name, 'pglite');
        const unlock = await openDataDir(
          dir,
          () => '32MB',
          (msg) => warnings.push(msg),
          templates,
        );
        await unlock();
        expect(fs.existsSync(path.join(dir, 'PG_VERSION'))).toBe(true);
      }
      expect(warnings).toEqual([]);
      // One prepared directory, no temporary leftovers.
      expect(fs.readdirSync(templates)).toEqual([`pglite-${key}`]);
      expect(fs.readdirSync(path.join(root, 'b')).sort()).toEqual(['pglite']);
      // Every file of the template, with its mode and size (copied by cp in a child process, or fs.cp).
      const tree = (dir: string) =>
        (fs.readdirSync(dir, { recursive: true }) as string[]).sort().map((f) => {
          const st = fs.statSync(path.join(dir, f));
          return `${f} ${st.mode.toString(8)} ${st.isDirectory() ? '-' : st.size}`;
        });
      expect(tree(path.join(root, 'a', 'pglite'))).toEqual(tree(path.join(templates, `pglite-${key}`)));
      // Private: each data directory is its owner's alone (0700); nothing in the template that every
      // fresh directory copies can be changed by group or others (PGlite creates most files 0666).
      for (const name of ['a', 'b']) expect(fs.statSync(path.join(root, name, 'pglite')).mode & 0o777).toBe(0o700);
      const template = path.join(templates, `pglite-${key}`);
      const writable = ['', ...(fs.readdirSync(template, { recursive: true }) as string[])].filter(
        (f) => fs.statSync(path.join(template, f)).mode & 0o022,
      );
      expect(writable).toEqual([]);
      // Without a cp to run, the same copy is made in-process.
      const pathVar = process.env.PATH;
      try {
        process.env.PATH = '';
        const unlock = await openDataDir(
          path.join(root, 'c', 'pglite'),
          () => '32MB',
          (msg) => warnings.push(msg),
          templates,
        );
        await unlock();
      } finally {
        process.env.PATH = pathVar;
      }
      expect(warnings).toEqual([]);
      expect(tree(path.join(root, 'c', 'pglite'))).toEqual(tree(path.join(templates, `pglite-${key}`)));

      // The copy is a whole, migrated cluster that opens like any other and is not the template.
      const journal = JSON.parse(fs.readFileSync(path.join(MIGRATIONS_DIR, 'meta', '_journal.json'), 'utf8')) as {
        entries: unknown[];
      };
      const [row] = await withDatabase(
        { DATA_DIR: path.join(root, 'b'), PGLITE_TEMPLATE_DIR: templates },
        async (db) => {
          await db.execute(sql`create table only_in_b (x int)`);
          return execRows<{ n: number }>(db, sql`select count(*)::int as n from drizzle.__drizzle_migrations`);
        },
      );
      expect(row.n).toBe(journal.entries.length);
      const rows = await withDatabase({ DATA_DIR: path.join(root, 'a'), PGLITE_TEMPLATE_DIR: templates }, (db) =>
        execRows(db, sql`select 1 from pg_class where relname = 'only_in_b'`),
      );
      expect(rows).toEqual([]);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  }, 180_000);

  it('replaces a damaged prepared directory (no PG_VERSION) instead of initialising every fresh directory in place', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-prepared-'));
    const templates = path.join(root, 'templates');
    const warnings: string[] = [];
    try {
      const prepared = path.join(templates, `pglite-${preparedKey()}`);
      fs.mkdirSync(path.join(prepared, 'base'), { recursive: true });
      fs.writeFileSync(path.join(prepared, 'left-over'), '');
      const dir = path.join(root, 'data', 'pglite');
      const unlock = await openDataDir(
        dir,
        () => '32MB',
        (msg) => warnings.push(msg),
        templates,
      );
      await unlock();
      expect(warnings).toEqual([]);
      expect(fs.existsSync(path.join(prepared, 'PG_VERSION'))).toBe(true);
      expect(fs.existsSync(path.join(prepared, 'left-over'))).toBe(false);
      expect(fs.readdirSync(templates)).toEqual([path.basename(prepared)]);
      expect(fs.existsSync(path.join(dir, 'PG_VERSION'))).toBe(true);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  }, 180_000);

  it('initialises in place when the directory is not empty or the cache cannot be written', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-prepared-'));
    const warnings: string[] = [];
    try {
      const blocked = path.join(root, 'not-a-dir');
      fs.writeFileSync(blocked, '');
      const dir = path.join(root, 'data', 'pglite');
      const unlock = await openDataDir(
        dir,
        () => '32MB',
        (msg) => warnings.push(msg),
        path.join(blocked, 'templates'),
      );
      await unlock();
      expect(fs.existsSync(path.join(dir, 'PG_VERSION'))).toBe(true);
      expect(warnings).toEqual([expect.stringMatching(/^no prepared data directory/)]);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  }, 180_000);
});

describe('a migration merged out of order', () => {
  it('is applied on the next open although a newer one already ran (drizzle alone skips it)', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-skipped-migration-'));
    const journal = JSON.parse(fs.readFileSync(path.join(MIGRATIONS_DIR, 'meta', '_journal.json'), 'utf8')) as {
      entries: { tag: string; when: number }[];
    };
    const when = journal.entries.find((e) => e.tag === '0050_tool_definition_pins')!.when;
    const inspect = (db: Db) =>
      execRows<{ pins: boolean; logged: number }>(
        db,
        sql`select to_regclass('public.tool_pins') is not null as pins,
          (select count(*)::int from drizzle.__drizzle_migrations where created_at = ${when}) as logged`,
      ).then((rows) => rows[0]);
    try {
      // A database that ran 0051 before 0050 existed: no tool_pins, no log row for 0050.
      const before = await withDatabase({ DATA_DIR: root }, async (db) => {
        await db.execute(sql`drop table tool_pins`);
        await db.execute(sql`delete from drizzle.__drizzle_migrations where created_at = ${when}`);
        return inspect(db);
      });
      expect(before).toEqual({ pins: false, logged: 0 });
      expect(await withDatabase({ DATA_DIR: root }, inspect)).toEqual({ pins: true, logged: 1 });
      // Applied once: the next open finds the log whole and changes nothing.
      expect(await withDatabase({ DATA_DIR: root }, inspect)).toEqual({ pins: true, logged: 1 });
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  }, 120_000);
});
