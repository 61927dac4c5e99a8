#!/usr/bin/env node
// `npm start`: run src/main.ts as plain JavaScript transpiled into `dist/` (one file per source
// file, same layout, non-TypeScript files such as the SQL migrations copied), rebuilt when any file
// under src/ (or tsconfig.json) changed since the last build — issue 18: running the sources
// through the tsx loader cost ~40 % of the start-up time and ~65 MiB of RSS (its hooks run in a
// second V8 isolate). The transpiler is the esbuild that tsx itself uses, with the project's
// tsconfig, so the code that runs is what `tsx` would run. `dist/` sits beside `src/` (same depth),
// so paths the code computes from its own location (console/dist, package.json) stay right.
// If dist/ cannot be written (a read-only install), the sources run through tsx as before.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

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

/** What the build depends on: each source file with its size and mtime, tsconfig.json, the esbuild version. */
function stampOf(sources, esbuildVersion) {
  const entries = sources.map((f) => {
    const st = fs.statSync(path.join(src, f));
    return `${f}:${st.size}:${st.mtimeMs}`;
  });
  const tsconfig = fs.statSync(path.join(root, 'tsconfig.json'));
  return JSON.stringify({ esbuild: esbuildVersion, tsconfig: `${tsconfig.size}:${tsconfig.mtimeMs}`, entries });
}

/** Transpile src/ into a fresh directory and swap it in for dist/ (a reader never sees half a build). */
async function build(esbuild, sources, stamp) {
  const tmp = `${dist}.tmp-${process.pid}`;
  const old = `${dist}.old-${process.pid}`;
  fs.rmSync(tmp, { recursive: true, force: true });
  const ts = sources.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'));
  await esbuild.build({
    entryPoints: ts.map((f) => path.join(src, f)),
    outdir: tmp,
    outbase: src,
    format: 'esm',
    platform: 'node',
    target: `node${process.versions.node}`,
    tsconfig: path.join(root, 'tsconfig.json'),
    sourcemap: true,
    logLevel: 'silent',
  });
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

async function main() {
  const sources = files(src);
  const esbuild = createRequire(createRequire(import.meta.url).resolve('tsx/package.json'))('esbuild');
  const stamp = stampOf(sources, esbuild.version);
  if (readStamp() !== stamp) {
    try {
      await build(esbuild, sources, stamp);
    } catch (err) {
      process.stderr.write(`start: could not build dist/ (${err.message.split('\n')[0]}); running the sources through tsx\n`);
      const { register } = await import('tsx/esm/api');
      register();
      await import(pathToFileURL(path.join(src, 'main.ts')).href);
      return;
    }
  }
  // Stack traces name the TypeScript sources, as they did under tsx.
  process.setSourceMapsEnabled(true);
  await import(pathToFileURL(path.join(dist, 'main.js')).href);
}

await main();
