/**
 * scripts/bundle-loader.mjs (what `npm start` runs the server bundle with): the first start of a
 * build writes V8's code cache when asked, later starts compile from it, a cache V8 refuses is
 * replaced, a read-only directory runs without one, and stack traces name the TypeScript sources
 * through the bundle's map. Each start is a child process (the loader installs a global stack
 * trace hook).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '..', '..', '..');
const LOADER = path.join(ROOT, 'scripts', 'bundle-loader.mjs');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-bundle-'));
const bundle = path.join(dir, 'main.cjs');

/** Run the bundle through the loader in a fresh process, asking it `saves` times to write the cache. */
function spawnStart(saves: number) {
  const program = `
    import { runBundle } from ${JSON.stringify(LOADER)};
    const info = runBundle(${JSON.stringify(bundle)});
    for (let i = 0; i < ${saves}; i++) info.saveCodeCache();
    const asyncStack = await globalThis.bundleAsyncStack();
    process.stdout.write(JSON.stringify({ codeCache: info.codeCache, stack: globalThis.bundleStack(), asyncStack, answer: globalThis.bundleAnswer }));`;
  return spawnSync(process.execPath, ['--input-type=module', '-e', program], { encoding: 'utf8' });
}

/** {@link spawnStart} that must succeed silently; `save` asks once for the cache. */
function start(save: boolean): { codeCache: string; stack: string; asyncStack: string; answer: number } {
  const r = spawnStart(save ? 1 : 0);
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  return JSON.parse(r.stdout) as { codeCache: string; stack: string; asyncStack: string; answer: number };
}

beforeAll(async () => {
  // A small TypeScript program bundled as start.mjs bundles src/main.ts: CommonJS, external map.
  const source = path.join(dir, 'src', 'program.ts');
  fs.mkdirSync(path.dirname(source));
  fs.writeFileSync(
    source,
    [
      'function thrower(): never {',
      "  throw new Error('from the source');",
      '}',
      'const g = globalThis as Record<string, unknown>;',
      'g.bundleAnswer = [1, 2, 3].reduce((a, b) => a + b, 36);',
      'g.bundleStack = (): string => {',
      '  try {',
      '    thrower();',
      '  } catch (err) {',
      '    return (err as Error).stack ?? "";',
      '  }',
      '};',
      'class Widget {',
      '  async spin(): Promise<never> {',
      '    await new Promise((r) => setImmediate(r));',
      "    throw new TypeError('async and a method');",
      '  }',
      '}',
      'g.bundleAsyncStack = async (): Promise<string> => {',
      '  try {',
      '    await new Widget().spin();',
      '  } catch (err) {',
      '    return (err as Error).stack ?? "";',
      '  }',
      '  return "";',
      '};',
      '',
    ].join('\n'),
  );
  const requireEsbuild = createRequire(createRequire(path.join(ROOT, 'package.json')).resolve('tsx/package.json'));
  const esbuild = requireEsbuild('esbuild') as typeof import('esbuild');
  await esbuild.build({
    entryPoints: [source],
    bundle: true,
    outfile: bundle,
    format: 'cjs',
    platform: 'node',
    sourcemap: true,
    sourcesContent: false,
    logLevel: 'silent',
  });
  await esbuild.stop();
});
afterAll(() => {
  fs.chmodSync(dir, 0o700);
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('bundle-loader: V8 code cache and source-mapped stacks', () => {
  it('runs without a cache, writes one when asked, and later starts compile from it', () => {
    const first = start(true);
    expect(first).toMatchObject({ codeCache: 'none', answer: 42 });
    expect(fs.statSync(`${bundle}.cache`).size).toBeGreaterThan(0);
    const later = start(true);
    expect(later).toMatchObject({ codeCache: 'used', answer: 42 });
    // Not rewritten when it was used.
    const written = fs.statSync(`${bundle}.cache`).mtimeMs;
    start(true);
    expect(fs.statSync(`${bundle}.cache`).mtimeMs).toBe(written);
    expect(fs.readdirSync(dir).filter((f) => f.includes('.tmp-'))).toEqual([]);
  });

  it('replaces a cache V8 refuses', () => {
    fs.writeFileSync(`${bundle}.cache`, Buffer.alloc(4096, 7));
    expect(start(true).codeCache).toBe('rejected');
    expect(start(false).codeCache).toBe('used');
  });

  it('names the TypeScript source and line in stack traces', () => {
    const { stack, asyncStack } = start(false);
    expect(stack).toMatch(/^Error: from the source\n\s+at thrower \(.*src[/\\]program\.ts:2:9\)/);
    expect(stack).not.toMatch(/main\.cjs/);
    // V8's own text around the position: the method's class, `async`, frames of other files.
    expect(asyncStack).toMatch(
      /^TypeError: async and a method\n\s+at Widget\.spin \(.*src[/\\]program\.ts:16:11\)\n\s+at async g\.bundleAsyncStack \(.*src[/\\]program\.ts:21:5\)/,
    );
    expect(asyncStack).not.toMatch(/main\.cjs/);
  });

  it('leaves the bundle positions as V8 writes them when the map is missing', () => {
    fs.renameSync(`${bundle}.map`, `${bundle}.map.away`);
    try {
      const { stack } = start(false);
      expect(stack).toMatch(/^Error: from the source\n\s+at thrower \(.*main\.cjs:\d+:\d+\)/);
    } finally {
      fs.renameSync(`${bundle}.map.away`, `${bundle}.map`);
    }
  });

  it('says once on stderr when the cache cannot be written, and the start still runs', () => {
    // A directory where the cache file goes: reading it fails (no cache), renaming onto it fails.
    fs.rmSync(`${bundle}.cache`, { force: true });
    fs.mkdirSync(`${bundle}.cache`);
    fs.writeFileSync(path.join(`${bundle}.cache`, 'x'), '');
    try {
      const r = spawnStart(2);
      expect(r.status).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ codeCache: 'none', answer: 42 });
      expect(r.stderr).toMatch(
        /^start: the code cache was not written \(.+\); the next start compiles the bundle again\n$/,
      );
      expect(fs.readdirSync(dir).filter((f) => f.includes('.tmp-'))).toEqual([]);
    } finally {
      fs.rmSync(`${bundle}.cache`, { recursive: true, force: true });
    }
  });

  // Root writes into a read-only directory anyway, so this runs only as another user.
  it.skipIf(process.getuid?.() === 0)('runs without a cache, silently, when its directory is read-only', () => {
    fs.rmSync(`${bundle}.cache`, { force: true });
    fs.chmodSync(dir, 0o500);
    try {
      expect(start(true)).toMatchObject({ codeCache: 'none', answer: 42 });
      expect(fs.existsSync(`${bundle}.cache`)).toBe(false);
    } finally {
      fs.chmodSync(dir, 0o700);
    }
  });
});
