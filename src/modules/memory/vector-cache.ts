/**
 * The vector arm of memory search in process, on the embedded engine: each searching
 * user's vectors in one row-major float32 matrix (`dimensions` per memory), scanned exactly: a dense
 * query (the sentence encoder) in one WebAssembly SIMD pass (dense-scan.ts), a sparse one (the local
 * embedder, ~60 non-zero components of 384) over its non-zero components in JavaScript. On PGlite
 * the database runs on this thread in WebAssembly, where the HNSW scan of 10k memories took several
 * times the JavaScript scan, and an exact SQL scan twice that (numbers: bench/memory-profile.ts, docs/adr/0217-memory-vector-arm-in-process-on-pglite-the-vector-arm.md).
 *
 * Only on PGlite: its data directory belongs to this one process, so every write of a memory goes
 * through this module and the cache can follow it (inserts are appended, a delete or a re-embedding
 * drops the user's entry). On PostgreSQL, where other instances write too, search stays in SQL.
 * The cache only proposes candidates: the fusion query joins them back to `memories` under the
 * caller's scope, so a stale entry can cost a slot in the pool, never show a row it should not.
 *
 * Memory: entries are evicted least recently used beyond `MEMORY_VECTOR_CACHE_MB` (default 64 MiB;
 * 10k memories of 384 dimensions = 15 MiB); nothing is held before a user's first search.
 */
import { sql } from 'drizzle-orm';
import { execRows, type Db, type Tx } from '../../db/client.js';
import { dotAt, ScanMatrix } from './dense-scan.js';
import { UserEntries } from './user-entries.js';
import { kindCode } from './kinds.js';

/** One user's vectors. */
interface Entry {
  ids: string[];
  /** Row of each id (a vector given again replaces the row's). */
  rowOf: Map<string, number>;
  agentIds: Array<string | null>;
  /** {@link kindCode} of each row. */
  kinds: number[];
  /** `ids.length` rows of `dimensions` components (capacity may exceed the rows in use). */
  matrix: ScanMatrix;
  /** Set when a write landed while the entry was loading: it is not kept. */
  stale: boolean;
  loading: Promise<Entry> | null;
}

/** A nearest memory: its id and cosine distance (`1 − dot`, vectors are unit length). */
export interface VectorHit {
  id: string;
  distance: number;
}

/** Per-app cache of users' vectors (`ctx.memory.vectors`). */
export class VectorCache extends UserEntries<Entry> {
  constructor(
    readonly dimensions: number,
    maxBytes: number,
  ) {
    super(maxBytes);
  }

  /**
   * The `k` memories of `userId` nearest to the unit vector `q` (optionally only those of `agentId`,
   * and only of the kinds in the `kinds` bit mask, kinds.ts `kindMask`), nearest first, ties by id;
   * loads the user's vectors on first use.
   */
  async nearest(
    db: Db | Tx,
    userId: string,
    q: Float32Array,
    k: number,
    agentId?: string | null,
    kinds = ~0,
  ): Promise<VectorHit[]> {
    const e = await this.entry(db, userId);
    const dims = this.dimensions;
    const n = e.ids.length;
    // sparse query (the local embedder): only its non-zero components
    const nz: number[] = [];
    for (let i = 0; i < dims; i++) if (q[i] !== 0) nz.push(i);
    const sparse = nz.length < dims / 2;
    const bestD: number[] = [];
    const bestI: number[] = [];
    const m = e.matrix.data;
    // dense query (the sentence encoder): every row's dot product in one SIMD scan (dense-scan.ts)
    const scores = sparse ? null : e.matrix.scan(q, n);
    for (let r = 0; r < n; r++) {
      if ((agentId && e.agentIds[r] !== agentId) || !(kinds & (1 << e.kinds[r]))) continue;
      let s = 0;
      if (scores) s = scores[r];
      else {
        const base = r * dims;
        for (let j = 0; j < nz.length; j++) s += m[base + nz[j]] * q[nz[j]];
      }
      const d = 1 - s;
      if (bestD.length === k && d >= bestD[k - 1]) continue;
      let at = bestD.length;
      while (at > 0 && bestD[at - 1] > d) at--;
      bestD.splice(at, 0, d);
      bestI.splice(at, 0, r);
      if (bestD.length > k) {
        bestD.pop();
        bestI.pop();
      }
    }
    const hits = bestI.map((r, i) => ({ id: e.ids[r], distance: bestD[i] }));
    // equal distances: id order, as the SQL arm (`order by d, id`)
    return hits.sort((a, b) => a.distance - b.distance || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /**
   * Cosine distances (`1 − dot`) of `ids` to the unit vector `q` from a loaded entry of `userId`
   * (an id without a vector is absent); null when the user's vectors are not loaded.
   */
  distances(userId: string, q: Float32Array, ids: string[]): Map<string, number> | null {
    const e = this.users.get(userId);
    if (!e || e.loading) return null;
    const dims = this.dimensions;
    const out = new Map<string, number>();
    for (const id of ids) {
      const r = e.rowOf.get(id);
      if (r === undefined) continue;
      out.set(id, 1 - dotAt(e.matrix.data, r * dims, q, dims));
    }
    return out;
  }

  /**
   * Rows given a vector — inserted with one, or embedded later (a back-fill) — appended to loaded
   * users' entries; a row already held gets the new vector. Rows without a vector are skipped.
   */
  added(
    rows: Array<{ id: string; userId: string; agentId: string | null; kind?: string }>,
    vectors: Array<Float32Array | null>,
  ): void {
    rows.forEach((row, i) => {
      const v = vectors[i];
      const e = v ? this.forWrite(row.userId) : undefined;
      if (!e || !v) return;
      const at = e.rowOf.get(row.id);
      if (at !== undefined) {
        e.matrix.data.set(v, at * this.dimensions);
        e.agentIds[at] = row.agentId;
        e.kinds[at] = kindCode(row.kind ?? 'note');
        return;
      }
      const n = e.ids.length;
      const before = e.matrix.byteLength;
      e.matrix.reserve(n + 1);
      this.used += e.matrix.byteLength - before;
      e.matrix.data.set(v, n * this.dimensions);
      e.rowOf.set(row.id, n);
      e.ids.push(row.id);
      e.agentIds.push(row.agentId);
      e.kinds.push(kindCode(row.kind ?? 'note'));
    });
    this.evict();
  }

  /**
   * Rows deleted from `userId`'s memories (e.g. a session summary replaced): each leaves a loaded
   * entry at once (the last row moves into its place), so it no longer takes a slot of the vector
   * arm's pool. An entry still loading is marked stale; ids not held are ignored.
   */
  removed(userId: string, ids: string[]): void {
    const e = this.forWrite(userId);
    if (!e) return;
    const dims = this.dimensions;
    for (const id of ids) {
      const at = e.rowOf.get(id);
      if (at === undefined) continue;
      const last = e.ids.length - 1;
      if (at !== last) {
        e.matrix.data.copyWithin(at * dims, last * dims, (last + 1) * dims);
        e.ids[at] = e.ids[last];
        e.agentIds[at] = e.agentIds[last];
        e.kinds[at] = e.kinds[last];
        e.rowOf.set(e.ids[at], at);
      }
      e.ids.pop();
      e.agentIds.pop();
      e.kinds.pop();
      e.rowOf.delete(id);
    }
  }

  protected empty(): Entry {
    return {
      ids: [],
      rowOf: new Map(),
      agentIds: [],
      kinds: [],
      matrix: new ScanMatrix(this.dimensions, 0),
      stale: false,
      loading: null,
    };
  }

  protected sizeOf(e: Entry): number {
    return e.matrix.byteLength;
  }

  protected async load(db: Db | Tx, userId: string, e: Entry): Promise<Entry> {
    const rows = await execRows<{ id: string; agent_id: string | null; kind: string; e: string }>(
      db,
      sql`select id, agent_id, kind, embedding::text as e from memories where user_id = ${userId} and embedding is not null order by id`,
    );
    const dims = this.dimensions;
    const scan = new ScanMatrix(dims, rows.length + 64);
    const matrix = scan.data;
    let n = 0;
    for (const r of rows) {
      // `[a,b,…]` (pgvector) or `{a,b,…}` (real[]): one number per component
      const parts = r.e.slice(1, -1).split(',');
      if (parts.length !== dims) continue;
      const base = n * dims;
      for (let j = 0; j < dims; j++) matrix[base + j] = Number(parts[j]);
      e.rowOf.set(r.id, n);
      e.ids.push(r.id);
      e.agentIds.push(r.agent_id);
      e.kinds.push(kindCode(r.kind));
      n++;
    }
    e.matrix = scan;
    return e;
  }
}
