#!/usr/bin/env node
// `npm start`: run src/main.ts as plain JavaScript bundled by esbuild (the one tsx itself uses, with
// the project's tsconfig) into one CommonJS file, `dist/main.cjs`, rebuilt when any file under
// src/, tsconfig.json or the installed packages changed since the last build, and run by
// `scripts/bundle-loader.mjs` with V8's code cache (compiled code of the previous start, kept in
// `dist/main.cjs.cache`).
// Issue 18: running the sources through the tsx loader cost ~40 % of the start-up time and ~65 MiB
// of RSS (its hooks run in a second V8 isolate); one file per source still made Node resolve, read
// and link ~1,800 modules (src and node_modules); an ES module bundle was parsed and compiled again
// at every start (Node 20 has no compile cache for ES modules), and V8's code cache needs a script.
// Packages that read their own files at run time (PGlite's WebAssembly, swagger-ui's assets, pino's
// transport workers, BullMQ's scripts, …) stay outside the bundle (EXTERNAL) and load from
// node_modules with require() (their CommonJS builds). `dist/` sits beside `src/` (same depth),
// non-TypeScript files are copied with the same layout, and each source's
// `import.meta.url`/`import.meta.dirname`/`import.meta.resolve` is rewritten to what its own file
// would have had in dist/, so paths the code computes from its own location (console/dist,
// package.json, the migrations) stay right.
// If dist/ cannot be written (a read-only install), the sources run through tsx as before.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const src = path.join(root, 'src');
const dist = path.join(root, 'dist');
const stampFile = path.join(dist, '.build-stamp');

/** Every file under `dir` (relative paths), recursively. */
function files(dir, rel = '') {
  const out = [];
  for (const e of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
    const p = path.join(rel, e.name);
    if (e.isDirectory()) out.push(...files(dir, p));
    else if (e.isFile()) out.push(p);
  }
  return out;
}

/**
 * Packages left outside the bundle, loaded from node_modules with require() (each has a CommonJS
 * build; `engines` asks for Node >= 20.19, whose require() also loads ES modules): packages that
 * read files beside their own modules at run time (`__dirname`, `import.meta.url`), have optional
 * native parts, are large and only loaded on demand, or share a dependency with one that is
 * (ioredis with BullMQ). Every other package the server imports is bundled: before adding a
 * dependency that reads its own files, add it here (a bundled `import.meta.url` is empty).
 */
const EXTERNAL = [
  // CommonJS packages outside the bundle since the ES module build, whose split chunks gave one
  // imported with import() only a `default` export (the CommonJS bundle could take them in).
  '@apidevtools/swagger-parser',
  '@fastify/cookie',
  '@zxcvbn-ts/language-common',
  'tar',
  'undici',
  'yaml',
  // Read files beside their own modules, or optional native parts:
  '@electric-sql/pglite',
  '@electric-sql/pglite-pgvector',
  '@energetic-ai/*',
  '@cedar-policy/cedar-wasm', // reads cedar_wasm_bg.wasm beside its module
  // Patch modules as they load (require-in-the-middle) and are loaded only when tracing is on.
  '@opentelemetry/*',
  // Also required by @fastify/swagger-ui from node_modules: bundled, it (with glob, send, mime)
  // was loaded twice at every start.
  '@fastify/static',
  '@fastify/swagger',
  '@fastify/swagger-ui',
  'bullmq',
  'esbuild',
  'ioredis',
  'pg',
  'pg-native',
  'pino',
  'thread-stream',
  'tsx',
];

/** Size and mtime of `file`, or '-' when it does not exist. */
function statKey(file) {
  const st = fs.statSync(file, { throwIfNoEntry: false });
  return st ? `${st.size}:${st.mtimeMs}` : '-';
}

/**
 * What the build depends on: each source file with its size and mtime, tsconfig.json, the
 * installed packages (npm rewrites node_modules/.package-lock.json on every install), this script
 * (how it builds) and the esbuild version.
 */
function stampOf(sources, esbuildVersion) {
  const entries = sources.map((f) => `${f}:${statKey(path.join(src, f))}`);
  const packages = statKey(path.join(root, 'node_modules', '.package-lock.json'));
  return JSON.stringify({
    script: statKey(fileURLToPath(import.meta.url)),
    esbuild: esbuildVersion,
    tsconfig: statKey(path.join(root, 'tsconfig.json')),
    packages,
    entries,
  });
}

/**
 * esbuild plugin: in each file under src/, `import.meta.url` and `import.meta.dirname` become the
 * URL and directory that file would have in dist/ (as if transpiled one file per source), computed
 * from the bundle's own location at run time (`__dirname`), so the install can move;
 * `import.meta.resolve(specifier)` becomes the file URL `require.resolve` gives (the packages'
 * CommonJS entries, which the bundle loads).
 */
const sourceLocation = {
  name: 'source-location',
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, async (args) => {
      if (!args.path.startsWith(src + path.sep)) return undefined;
      const rel = path.relative(src, args.path).split(path.sep).join('/');
      const dir = path.posix.dirname(rel);
      const text = (await fs.promises.readFile(args.path, 'utf8'))
        .replace(
          /\bimport\.meta\.dirname\b/g,
          dir === '.' ? '__dirname' : `__startPath.join(__dirname, ${JSON.stringify(dir)})`,
        )
        .replace(
          /\bimport\.meta\.url\b/g,
          `__startUrl.pathToFileURL(__startPath.join(__dirname, ${JSON.stringify(rel.replace(/\.ts$/, '.js'))})).href`,
        )
        .replace(/\bimport\.meta\.resolve\(/g, '__startResolve(');
      if (/\bimport\.meta\b/.test(text))
        throw new Error(
          `${rel}: import.meta beyond url, dirname and resolve() has no equivalent in the CommonJS bundle`,
        );
      return { contents: text, loader: 'ts' };
    });
  },
};

/**
 * {@link bundleInto} dist/, then stop esbuild's service: it is a child process (~290 MiB RSS after
 * this build) that would otherwise live as long as the server (a later esbuild call starts a new one).
 */
async function build(esbuild, sources, stamp) {
  try {
    await bundleInto(esbuild, sources, stamp);
  } finally {
    await esbuild.stop();
  }
}

/** Bundle src/main.ts into a fresh directory, copy the non-TypeScript sources, and swap it in for dist/ (a reader never sees half a build). */
async function bundleInto(esbuild, sources, stamp) {
  const tmp = `${dist}.tmp-${process.pid}`;
  const old = `${dist}.old-${process.pid}`;
  fs.rmSync(tmp, { recursive: true, force: true });
  await esbuild.build({
    entryPoints: { main: path.join(src, 'main.ts') },
    bundle: true,
    // One CommonJS script, which V8 can cache compiled (scripts/bundle-loader.mjs). What is
    // imported lazily (the OIDC provider, MCP, …) stays lazy: esbuild wraps such a module in an
    // init function run on first import, and its require() of external packages runs then.
    outfile: path.join(tmp, 'main.cjs'),
    format: 'cjs',
    // import() becomes require() (external packages load their CommonJS builds): Node 20 gives
    // code from V8's code cache no dynamic import() callback (ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING).
    supported: { 'dynamic-import': false },
    platform: 'node',
    target: `node${process.versions.node}`,
    tsconfig: path.join(root, 'tsconfig.json'),
    external: EXTERNAL,
    plugins: [sourceLocation],
    banner: {
      js: "const __startPath = require('node:path'); const __startUrl = require('node:url'); const __startResolve = (s) => __startUrl.pathToFileURL(require.resolve(s)).href;",
    },
    // Stack traces name the TypeScript sources through the map (bundle-loader.mjs installs the
    // mapping lazily); without the sources in it the map is a third of the size.
    sourcemap: true,
    sourcesContent: false,
    // Without comments and indentation: V8 keeps the loaded script's source in its heap, as
    // two-byte text when one character is beyond Latin-1 (a "—" in a comment is enough), which
    // was ~8 MiB of an idle server's heap for the two largest files; stack traces still name the
    // sources through the map.
    minifyWhitespace: true,
    logLevel: 'silent',
  });
  // esbuild escapes what it can; a character beyond Latin-1 left in a raw template or a regular
  // expression doubles the size of the whole file's source in V8's heap (see minifyWhitespace).
  const wide = /[^\x00-\xff]/.exec(fs.readFileSync(path.join(tmp, 'main.cjs'), 'utf8'));
  if (wide)
    process.stderr.write(
      `start: main.cjs holds ${JSON.stringify(wide[0])} (beyond Latin-1): V8 keeps its source as two-byte text\n`,
    );
  for (const f of sources.filter((f) => !f.endsWith('.ts'))) {
    fs.mkdirSync(path.dirname(path.join(tmp, f)), { recursive: true });
    fs.copyFileSync(path.join(src, f), path.join(tmp, f));
  }
  fs.writeFileSync(path.join(tmp, '.build-stamp'), stamp);
  try {
    try {
      fs.renameSync(dist, old);
    } catch {
      /* no dist/ yet, or another start moved it first */
    }
    fs.renameSync(tmp, dist);
  } catch (err) {
    // Another start swapped in the same build between our two renames: use it.
    if (readStamp() !== stamp) throw err;
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
    fs.rmSync(old, { recursive: true, force: true });
  }
}

/** The stamp of the build in dist/, or null. */
function readStamp() {
  try {
    return fs.readFileSync(stampFile, 'utf8');
  } catch {
    return null;
  }
}

/**
 * Start the embedded database's worker thread (src/db/pglite-worker.cjs) now, before the console
 * check, the build check and the bundle's ~0.3 s of reading and compiling, when the environment asks
 * for the default database — an on-disk PGlite on its own thread: no `DATABASE_URL`, not
 * `DATABASE_IN_MEMORY`, `PGLITE_THREAD` not off (src/config.ts). `main.ts` adopts it
 * (`Symbol.for('agent-platform.pglite-worker')`) or ends it when the configuration says otherwise.
 */
function startDatabaseThread() {
  const env = process.env;
  const on = (v) => ['on', 'true', '1', 'yes'].includes(v ?? '');
  const off = (v) => ['off', 'false', '0', 'no'].includes(v ?? '');
  if (env.DATABASE_URL || on(env.DATABASE_IN_MEMORY) || off(env.PGLITE_THREAD) || process.argv.includes('--build'))
    return;
  const file = path.join(src, 'db', 'pglite-worker.cjs');
  if (!fs.existsSync(file)) return;
  globalThis[Symbol.for('agent-platform.pglite-worker')] = new Worker(file);
}

/** `--build`: build dist/ when stale and exit (an image build, before the sources become read-only). */
async function main() {
  startDatabaseThread();
  const buildOnly = process.argv.includes('--build');
  if (!buildOnly && fs.existsSync(path.join(root, 'console', 'package.json'))) {
    // The web console, when console/dist is missing or older than its sources (`npm install` built
    // it). Here rather than in a `prestart` script, a node process of its own: from `npm start` to
    // ready took ~0.7 s longer with it on a 2-core machine (issue 18). No console sources (the
    // image): skipped.
    const { ensureConsole } = await import('./ensure-console.mjs');
    ensureConsole();
  }
  const sources = files(src);
  // The esbuild tsx uses. Its version comes from its package.json: loading esbuild's API (~20 ms
  // of a start on a 2-core machine, issue 18) only when dist/ must be built.
  const requireEsbuild = createRequire(createRequire(import.meta.url).resolve('tsx/package.json'));
  const { version } = JSON.parse(fs.readFileSync(requireEsbuild.resolve('esbuild/package.json'), 'utf8'));
  const stamp = stampOf(sources, version);
  if (buildOnly) {
    if (readStamp() !== stamp) await build(requireEsbuild('esbuild'), sources, stamp);
    return;
  }
  if (readStamp() !== stamp) {
    try {
      await build(requireEsbuild('esbuild'), sources, stamp);
    } catch (err) {
      process.stderr.write(
        `start: could not build dist/ (${err.message.split('\n')[0]}); running the sources through tsx\n`,
      );
      const { register } = await import('tsx/esm/api');
      register();
      await import(pathToFileURL(path.join(src, 'main.ts')).href);
      return;
    }
  }
  const { runBundle } = await import('./bundle-loader.mjs');
  runBundle(path.join(dist, 'main.cjs'));
}

await main();
