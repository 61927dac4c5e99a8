/**
 * PGlite's WebAssembly module (`pglite.wasm`, ~9 MB), compiled once per process and started as
 * early as possible (the embedded start).
 *
 * `PGlite.create` reads and compiles `pglite.wasm` itself, but only once `openDatabase` runs,
 * after `db/client.ts` and its imports (drizzle, the schema) have loaded — ~0.8 s into a later open
 * on a 2-core machine, with the main thread busy loading the app's modules until then. V8 compiles
 * WebAssembly on background threads (`WebAssembly.compile`), so `main.ts` starts the compile
 * right after the configuration parsed and it runs beside the module loading; `openDatabase` hands
 * the result to PGlite (`pgliteWasmModule`, a public option since PGlite 0.3).
 */
import fs from 'node:fs/promises';

let compiled: Promise<WebAssembly.Module | undefined> | undefined;

/** `pglite.wasm` of the installed `@electric-sql/pglite` (beside its entry module). */
function pgliteWasmFile(): URL {
  return new URL('./pglite.wasm', import.meta.resolve('@electric-sql/pglite'));
}

/**
 * The compiled `pglite.wasm` of the installed `@electric-sql/pglite` (beside its entry module),
 * memoised for the process. Never rejects: resolves to undefined when the file cannot be read or
 * compiled, and PGlite then loads its module itself as it always did.
 */
export function pgliteWasmModule(): Promise<WebAssembly.Module | undefined> {
  compiled ??= (async () => {
    try {
      return await WebAssembly.compile(await fs.readFile(pgliteWasmFile()));
    } catch {
      return undefined;
    }
  })();
  return compiled;
}
