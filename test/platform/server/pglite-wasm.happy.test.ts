/**
 * PGlite's WebAssembly is compiled once per process, started by main.ts before the app's modules
 * load (`db/pglite-wasm.ts`, issue 18), and PGlite boots from that module.
 */
import { PGlite } from '@electric-sql/pglite';
import { describe, expect, it } from 'vitest';
import { pgliteWasmModule } from '../../../src/db/pglite-wasm.js';

describe('precompiled PGlite WebAssembly', () => {
  it('is compiled once per process', async () => {
    const first = pgliteWasmModule();
    expect(pgliteWasmModule()).toBe(first);
    const mod = await first;
    expect(mod).toBeInstanceOf(WebAssembly.Module);
    // The PostgreSQL build's own entry points, not some other module.
    expect(WebAssembly.Module.exports(mod!).map((e) => e.name)).toEqual(
      expect.arrayContaining(['pgl_startPGlite', 'PostgresMainLoopOnce']),
    );
  });

  it('boots a PGlite database that answers queries', async () => {
    const mod = await pgliteWasmModule();
    const db = await PGlite.create('memory://', { pgliteWasmModule: mod });
    try {
      const { rows } = await db.query<{ n: number }>('select 40 + 2 as n');
      expect(rows).toEqual([{ n: 42 }]);
    } finally {
      await db.close();
    }
  });
});
