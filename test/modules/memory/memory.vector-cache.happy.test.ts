/**
 * The in-process vector arm (src/modules/memory/vector-cache.ts, PGlite) and `occurred_at` with time
 * expressions (issue 21): the same ranking as the SQL arm, following inserts and deletes, and a
 * memory dated in the period a query names ranked up.
 */
import { describe, expect, it } from 'vitest';
import { LocalHashEmbedder } from '../../../src/modules/memory/embeddings.js';
import { ScanMatrix } from '../../../src/modules/memory/dense-scan.js';
import { VectorCache } from '../../../src/modules/memory/vector-cache.js';
import { call, createUser, setupApp, type TestUser } from '../../helpers/app.js';

const { app, ctx } = await setupApp();

const TEXTS = [
  'Booked a flight to Lisbon for the conference',
  'The dentist appointment moved to Thursday',
  'Maya finished the charity run in 31 minutes',
  'Jonas built an oak staircase for the house by the river',
  'Bought a second-hand dinghy, fourteen feet long',
  'The garden held its harvest festival with two hundred people',
  'Priya sent the first thesis chapter to her supervisor',
  'Flight to Lisbon was delayed by two hours',
];

async function add(u: TestUser, content: string, extra: Record<string, unknown> = {}): Promise<string> {
  return (await call(app, { method: 'POST', url: '/memory', headers: u.headers, payload: { content, ...extra } }, 201))
    .body.id;
}

async function ids(u: TestUser, q: string, mode = 'vector'): Promise<string[]> {
  const { body } = await call(
    app,
    { method: 'GET', url: `/memory/search?q=${encodeURIComponent(q)}&mode=${mode}&limit=50`, headers: u.headers },
    200,
  );
  return body.data.map((h: { id: string }) => h.id);
}

describe('VectorCache', () => {
  it('returns the exact nearest rows, for sparse and dense queries, and follows appended rows', async () => {
    const e = new LocalHashEmbedder(384);
    const vectors = TEXTS.map((t) => e.embedOne(t));
    const rows = TEXTS.map((_, i) => ({
      id: `mem_${i}`,
      agent_id: i % 2 ? 'agt_1' : null,
      e: `[${Array.from(vectors[i]).join(',')}]`,
    }));
    const db = { execute: async () => ({ rows }) } as never;
    const cache = new VectorCache(384, 1 << 20);
    const brute = (q: Float32Array, only?: string) =>
      TEXTS.map((_, i) => ({
        id: `mem_${i}`,
        d: 1 - vectors[i].reduce((s, x, j) => s + x * q[j], 0),
        agent: i % 2 ? 'agt_1' : null,
      }))
        .filter((r) => !only || r.agent === only)
        .sort((a, b) => a.d - b.d || (a.id < b.id ? -1 : 1))
        .map((r) => r.id);
    const sparse = e.embedOne('flight Lisbon');
    expect((await cache.nearest(db, 'usr_1', sparse, 3)).map((h) => h.id)).toEqual(brute(sparse).slice(0, 3));
    // dense: summed in float32 (SIMD), so rows whose exact distances differ by < 1e-6 may swap
    const dense = new Float32Array(384).fill(1 / Math.sqrt(384));
    const exactD = (id: string) => 1 - vectors[Number(id.slice(4))].reduce((s, x, j) => s + x * dense[j], 0);
    const got = (await cache.nearest(db, 'usr_1', dense, 8)).map((h) => h.id);
    expect(new Set(got)).toEqual(new Set(brute(dense)));
    got.forEach((id, i) => i > 0 && expect(exactD(id)).toBeGreaterThanOrEqual(exactD(got[i - 1]) - 1e-6));
    expect((await cache.nearest(db, 'usr_1', dense, 3)).map((h) => h.id)).toEqual(got.slice(0, 3));
    expect((await cache.nearest(db, 'usr_1', sparse, 8, 'agt_1')).map((h) => h.id)).toEqual(brute(sparse, 'agt_1'));
    const v = e.embedOne('flight Lisbon tomorrow');
    cache.added([{ id: 'mem_new', userId: 'usr_1', agentId: null }], [v]);
    expect((await cache.nearest(db, 'usr_1', v, 1))[0]).toEqual({ id: 'mem_new', distance: expect.closeTo(0, 5) });
    // a removed row leaves at once; the last row takes its place and keeps its own vector and agent
    cache.removed('usr_1', ['mem_new', 'mem_0', 'mem_unknown']);
    const left = (await cache.nearest(db, 'usr_1', sparse, 20)).map((h) => h.id);
    expect(left).toEqual(brute(sparse).filter((id) => id !== 'mem_0'));
    expect((await cache.nearest(db, 'usr_1', sparse, 20, 'agt_1')).map((h) => h.id)).toEqual(brute(sparse, 'agt_1'));
    cache.added([{ id: 'mem_new', userId: 'usr_1', agentId: null }], [v]);
    cache.forget('usr_1');
    expect((await cache.nearest(db, 'usr_1', v, 1))[0].id).not.toBe('mem_new'); // reloaded from the (fake) table
  });
});

describe('ScanMatrix', () => {
  it('scans in WebAssembly SIMD with the JavaScript answer, and keeps its rows as it grows', () => {
    let seed = 3;
    const rnd = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296 - 0.5;
    const unit = (d: number) => {
      const v = Float32Array.from({ length: d }, rnd);
      const n = Math.hypot(...v);
      return v.map((x) => x / n);
    };
    for (const dims of [512, 384, 6]) {
      const simd = new ScanMatrix(dims, 0);
      const plain = new ScanMatrix(dims, 0, false);
      expect(simd.simd).toBe(dims % 4 === 0); // Node 20 has WebAssembly SIMD; 6 is not a multiple of 4
      expect(plain.simd).toBe(false);
      const rows = Array.from({ length: 700 }, () => unit(dims)); // past the first capacity (64): grows 4 times
      rows.forEach((v, r) => {
        for (const m of [simd, plain]) {
          m.reserve(r + 1);
          m.data.set(v, r * dims);
        }
      });
      const q = unit(dims);
      const a = simd.scan(q, rows.length);
      const b = plain.scan(q, rows.length);
      expect(a).toHaveLength(rows.length);
      rows.forEach((v, r) => {
        const exact = v.reduce((s, x, j) => s + x * q[j], 0);
        expect(a[r]).toBeCloseTo(exact, 5);
        expect(b[r]).toBe(Math.fround(exact)); // JavaScript: double sums, stored as float32
      });
      expect(simd.scan(q, 3)).toHaveLength(3);
    }
  });
});

describe(`memory — in-process vector arm and occurred_at (${ctx.database.engine})`, () => {
  it('ranks as the SQL arm does, sees new memories and forgets deleted ones', async () => {
    const u = await createUser(app);
    for (const t of TEXTS) await add(u, t);
    const q = 'trip to Lisbon by plane';
    const inProcess = await ids(u, q);
    const rt = ctx.memory!;
    const saved = rt.vectors;
    rt.vectors = null;
    try {
      expect(await ids(u, q)).toEqual(inProcess);
      expect(await ids(u, q, 'hybrid')).toEqual(await ids(u, q, 'hybrid'));
    } finally {
      rt.vectors = saved;
    }
    const fresh = await add(u, 'Plane tickets for the Lisbon trip are in my inbox');
    expect((await ids(u, q))[0]).toBe(fresh);
    await call(app, { method: 'DELETE', url: '/memory', headers: u.headers }, 200);
    expect(await ids(u, q)).toEqual([]);
  });

  it('stores occurred_at (default created_at) and ranks memories dated in the period the query names higher', async () => {
    const u = await createUser(app);
    const now = new Date();
    const lastYear = `${now.getUTCFullYear() - 1}-03-10T12:00:00Z`;
    const old = await call(
      app,
      {
        method: 'POST',
        url: '/memory',
        headers: u.headers,
        payload: { content: 'Went sailing with Oskar on the lake', occurred_at: lastYear },
      },
      201,
    );
    expect(old.body.occurred_at).toBe(new Date(lastYear).toISOString());
    const recent = await call(
      app,
      {
        method: 'POST',
        url: '/memory',
        headers: u.headers,
        payload: { content: 'Went sailing with Oskar on the lake again' },
      },
      201,
    );
    expect(recent.body.occurred_at).toBe(recent.body.created_at);
    const top = async (q: string) => (await ids(u, q, 'hybrid'))[0];
    expect(await top('sailing with Oskar last year')).toBe(old.body.id);
    expect(await top('sailing with Oskar this year')).toBe(recent.body.id);
    const bad = await call(
      app,
      {
        method: 'POST',
        url: '/memory',
        headers: u.headers,
        payload: { content: 'x', occurred_at: '2023-05-04 18:20' },
      },
      400,
    );
    expect(bad.body.errors?.[0]?.pointer ?? bad.body.errors?.[0]?.in).toBeDefined();
  });
});
