// Runs the server bundle `dist/main.cjs` (scripts/start.mjs builds it) as a CommonJS module whose
// compiled code comes from V8's code cache when there is one: `dist/main.cjs.cache`, written by the
// first start of a build once the app is warm (so it holds what start-up and the first requests
// compiled, not only the top level). Node 20 has no compile cache of its own (module.enableCompileCache
// is Node 22), and parsing and compiling the bundle was ~15 % of a later open's main thread (issue 18).
// V8 checks the cache against the source and its own flags and rejects one that does not match:
// the start then compiles as without a cache and writes a new one. A read-only dist/ (the image's
// /app) just runs without a cache.
// Stack traces name the TypeScript sources: on the first stack trace formatted, `dist/main.cjs.map`
// is read and decoded with @jridgewell/trace-mapping, and each frame in the bundle gets its source
// position (Node's own source maps do not cover code compiled by `vm`, and reading the map at every
// start cost ~40 ms).
import fs from 'node:fs';
import Module, { createRequire } from 'node:module';
import path from 'node:path';
import vm from 'node:vm';

/**
 * What the loader tells the app (read by src/main.ts through `Symbol.for('agent-platform.start')`):
 * `codeCache` — `used`, `rejected` (V8 refused it: other flags or source), `none` (no cache yet);
 * `saveCodeCache()` — write the cache when this start had no usable one (a no-op otherwise, and
 * after the first call); never throws (a failure to write is reported on stderr, except a
 * read-only dist/).
 * @typedef {{ codeCache: 'used' | 'rejected' | 'none', saveCodeCache(): void }} StartInfo
 */

/** How long a decoded map is kept after the last trace that used it, ms (it holds ~50 MiB for this bundle's). */
const MAP_KEPT_MS = 60_000;

/**
 * Map the stack traces of `file` (the bundle) to the sources through `<file>.map`, read and decoded
 * with @jridgewell/trace-mapping when a trace first needs it (most starts format none), and let go
 * {@link MAP_KEPT_MS} after the last trace that used it (decoded, this bundle's map holds ~50 MiB;
 * errors come in bursts). Each frame is V8's own text with the bundle's `file:line:column` replaced
 * by the source's, so every other part of a frame (`async`, `new`, method names, eval origins)
 * reads as V8 writes it; frames of other files, and positions the map does not cover, are left as
 * they are. Issue 18: source-map-support (with `source-map` 0.6) took 0.45–0.53 s here, and ~1.3 s
 * on a slower day, to decode this map at the first error logged; trace-mapping takes 0.12–0.18 s.
 * @param {string} file absolute path of the bundle
 * @param {number} [keptMs] how long the decoded map outlives its last use, ms
 */
export function mapStackTraces(file, keptMs = MAP_KEPT_MS) {
  /** @type {((line: number, column: number) => string | null) | null} */
  let locate = null;
  let release = null;
  const load = () => {
    try {
      const { TraceMap, originalPositionFor } = createRequire(import.meta.url)('@jridgewell/trace-mapping');
      const mapFile = `${file}.map`;
      const map = new TraceMap(fs.readFileSync(mapFile, 'utf8'), mapFile);
      return (line, column) => {
        const p = originalPositionFor(map, { line, column: column - 1 });
        return p.source === null || p.line === null ? null : `${p.source}:${p.line}:${p.column + 1}`;
      };
    } catch {
      return () => null; // no map (or an unreadable one): traces as V8 writes them
    }
  };
  let used = false;
  const mapped = (line, column) => {
    used = true;
    return (locate ??= load())(line, column);
  };
  const frame = (site) => {
    const text = String(site);
    if (site.getFileName() !== file) return text;
    const line = site.getLineNumber();
    const column = site.getColumnNumber();
    const at = `${file}:${line}:${column}`;
    const i = text.lastIndexOf(at);
    const source = i < 0 ? null : mapped(line, column);
    return source === null ? text : text.slice(0, i) + source + text.slice(i + at.length);
  };
  Error.prepareStackTrace = (error, sites) => {
    let head;
    try {
      head = Error.prototype.toString.call(error);
    } catch {
      head = '<error>';
    }
    used = false;
    const text = head + sites.map((site) => `\n    at ${frame(site)}`).join('');
    if (used) {
      // Kept while traces keep coming: one timer per trace that used the map, not per frame.
      clearTimeout(release);
      release = setTimeout(() => (locate = null), keptMs);
      release.unref();
    }
    return text;
  };
}

/**
 * Load and run `file` (a CommonJS bundle) with the code cache beside it (`<file>.cache`).
 * @param {string} file absolute path of the bundle
 * @returns {StartInfo} also published as `globalThis[Symbol.for('agent-platform.start')]`
 */
export function runBundle(file) {
  mapStackTraces(file);

  const cacheFile = `${file}.cache`;
  let cachedData;
  try {
    cachedData = fs.readFileSync(cacheFile);
  } catch {
    cachedData = undefined;
  }
  const script = new vm.Script(Module.wrap(fs.readFileSync(file, 'utf8')), { filename: file, cachedData });
  const codeCache = !cachedData ? 'none' : script.cachedDataRejected ? 'rejected' : 'used';
  let saved = codeCache === 'used';
  /** @type {StartInfo} */
  const info = {
    codeCache,
    saveCodeCache() {
      if (saved) return;
      saved = true;
      const tmp = `${cacheFile}.tmp-${process.pid}`;
      try {
        fs.writeFileSync(tmp, script.createCachedData());
        fs.renameSync(tmp, cacheFile);
      } catch (err) {
        fs.rmSync(tmp, { force: true });
        // A read-only install (the image's /app) runs without a cache, silently; anything else is said once.
        if (!['EACCES', 'EPERM', 'EROFS'].includes(err.code)) {
          process.stderr.write(
            `start: the code cache was not written (${err.message}); the next start compiles the bundle again\n`,
          );
        }
      }
    },
  };
  globalThis[Symbol.for('agent-platform.start')] = info;

  const mod = new Module(file, null);
  mod.filename = file;
  script.runInThisContext()(mod.exports, createRequire(file), mod, file, path.dirname(file));
  mod.loaded = true;
  return info;
}
