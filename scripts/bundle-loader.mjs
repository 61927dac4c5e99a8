// Runs the server bundle `dist/main.cjs` (scripts/start.mjs builds it) as a CommonJS module whose
// compiled code comes from V8's code cache when there is one: `dist/main.cjs.cache`, written by the
// first start of a build once the app is warm (so it holds what start-up and the first requests
// compiled, not only the top level). Node 20 has no compile cache of its own (module.enableCompileCache
// is Node 22), and parsing and compiling the bundle was ~15 % of a later open's main thread (issue 18).
// V8 checks the cache against the source and its own flags and rejects one that does not match:
// the start then compiles as without a cache and writes a new one. A read-only dist/ (the image's
// /app) just runs without a cache.
// Stack traces name the TypeScript sources: source-map-support, loaded on the first stack trace
// formatted, maps their frames through `dist/main.cjs.map` (Node's own source maps do not cover
// code compiled by `vm`, and reading the maps at every start cost ~40 ms).
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

/**
 * Map stack traces through `<file>.map` with source-map-support, loaded on the first stack trace
 * that is formatted (most starts format none: requiring it, with its `source-map`, cost 6–9 ms of
 * every start). Only the bundle has a map: other files are not read looking for one.
 * @param {string} file absolute path of the bundle
 */
function mapStackTraces(file) {
  const mapFile = `${file}.map`;
  const install = () => {
    Error.prepareStackTrace = undefined; // no recursion if the install itself fails
    createRequire(import.meta.url)('source-map-support').install({
      environment: 'node',
      handleUncaughtExceptions: false,
      overrideRetrieveSourceMap: true,
      retrieveSourceMap: (source) => (source === file && fs.existsSync(mapFile) ? { url: mapFile, map: fs.readFileSync(mapFile, 'utf8') } : null),
    });
  };
  Error.prepareStackTrace = (error, frames) => {
    try {
      install();
    } catch {
      /* unmapped traces, as V8 formats them */
    }
    return Error.prepareStackTrace ? Error.prepareStackTrace(error, frames) : `${error}\n${frames.map((f) => `    at ${f}`).join('\n')}`;
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
          process.stderr.write(`start: the code cache was not written (${err.message}); the next start compiles the bundle again\n`);
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
