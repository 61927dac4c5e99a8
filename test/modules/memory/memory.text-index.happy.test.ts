/**
 * The in-process full-text arm (src/modules/memory/text-index.ts) and the in-process hybrid search
 * (search-in-process.ts): the same ranking as the SQL arm — Σ IDF, `ts_rank` to the last bit, id —
 * on both engines (the index reads only `content_tsv`, so it can be compared with the SQL arm on
 * PostgreSQL too), the same hybrid answers through the API on PGlite, and an index that follows
 * inserts, deletes, a replaced summary and writes it was not told about.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { execRows } from '../../../src/db/client.js';
import { embeddingProviderOf } from '../../../src/modules/memory/runtime.js';
import { fusedCandidates, queryTerms, SAFE_LEXEME, withSearchSettings } from '../../../src/modules/memory/store.js';
import { parseTsvector } from '../../../src/lib/pg-text.js';
import { flatOrOperands, postingContribution, TextIndex } from '../../../src/modules/memory/text-index.js';
import { rowFacts } from '../../../src/modules/memory/turn-facts.js';
import { rankCandidates } from '../../../src/modules/memory/ranking.js';
import { inProcessCandidates } from '../../../src/modules/memory/search-in-process.js';
import { kindMask, selectedKinds } from '../../../src/modules/memory/kinds.js';
import { call, createUser, setupApp, type TestUser } from '../../helpers/app.js';
import { seedSession } from './helpers.js';

const { app, ctx } = await setupApp();

async function add(u: TestUser, content: string, extra: Record<string, unknown> = {}): Promise<string> {
  return (await call(app, { method: 'POST', url: '/memory', headers: u.headers, payload: { content, ...extra } }, 201))
    .body.id;
}

type Hit = { id: string; score: number; similarity: number; vector_rank: number | null; text_rank: number | null };

async function search(u: TestUser, q: string, mode = 'hybrid', limit = 50): Promise<Hit[]> {
  const { body } = await call(
    app,
    { method: 'GET', url: `/memory/search?q=${encodeURIComponent(q)}&mode=${mode}&limit=${limit}`, headers: u.headers },
    200,
  );
  return body.data;
}

/** The query as the in-process arm takes it (what search-in-process.ts computes). */
async function textInput(userId: string, q: string, pool: number) {
  const qt = await queryTerms(ctx.db, userId, q);
  const terms = qt.terms
    .filter((w) => SAFE_LEXEME.test(w.lexeme))
    .map((w) => ({ lexeme: w.lexeme, micro: Math.round(Number(w.idf.toFixed(6)) * 1e6) }));
  return { terms, items: flatOrOperands(qt.tsquery)!, pool, expectedCount: qt.docs };
}

// repeated words (several positions per lexeme), shared word sets in different orders, apostrophes
const WORDS = [
  'garden',
  'festival',
  'harvest',
  'river',
  'boat',
  'race',
  'thesis',
  'chapter',
  'flight',
  'lisbon',
  'oak',
  'stair',
];
function corpus(n: number): string[] {
  let seed = 11;
  const rnd = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296;
  return Array.from({ length: n }, (_, i) => {
    const picked = WORDS.filter((_, k) => rnd() < 0.5 / (1 + (k % 4)));
    const repeats = picked.flatMap((w) => Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => w));
    return `Note ${i % 5}: ${repeats.join(' and ')}${i % 13 === 0 ? " Maya's boat" : ''}`;
  });
}

describe('text index parts', () => {
  it('parses tsvector text (quotes, backslashes, weights) and flat OR tsqueries only', () => {
    // positions as `pos << 2 | weight` (D 0 … A 3)
    expect(parseTsvector("'it''s':1,3B 'back\\\\slash':2A 'plain'")).toEqual({
      lex: ["it's", 'back\\slash', 'plain'],
      pos: [[(1 << 2) | 0, (3 << 2) | 2], [(2 << 2) | 3], []],
      maxpos: 3,
    });
    expect(flatOrOperands("'maya' | 'race' | 'o''brien'")).toEqual(['maya', 'race', "o'brien"]);
    expect(flatOrOperands('')).toEqual([]);
    expect(flatOrOperands("'well-known' <-> 'well' | 'x'")).toBeNull();
    expect(flatOrOperands("'a' & 'b'")).toBeNull();
    expect(flatOrOperands("'a':*")).toBeNull();
    // one D position: 0.1 / (π²/6); a stripped lexeme counts as one D position
    expect(postingContribution([1 << 2])).toBe(Math.fround(0.1) / 1.64493406685);
    expect(postingContribution([])).toBe(postingContribution([1 << 2]));
    expect(postingContribution([1 << 2, 2 << 2])).toBeGreaterThan(postingContribution([1 << 2]));
  });
});

describe(`memory — in-process text arm (${ctx.database.engine})`, () => {
  it('ranks exactly as the SQL arm: Σ IDF, then ts_rank to the last bit, then id', async () => {
    const u = await createUser(app);
    for (const t of corpus(90)) await add(u, t);
    const index = new TextIndex();
    const queries = [
      'garden festival',
      'harvest river boat race',
      "Maya's boat",
      'thesis chapter flight',
      'oak stair garden lisbon',
      'note',
      'the and of',
    ];
    const [vector] = await embeddingProviderOf(ctx).embed(['unused']);
    let tiesOnIdf = 0;
    for (const q of queries) {
      for (const pool of [5, 50]) {
        const input = await textInput(u.userId, q, pool);
        const mine = await index.search(ctx.db, u.userId, input);
        const theirs = await withSearchSettings(ctx, u.userId, (tx) =>
          fusedCandidates(ctx, tx, {
            userId: u.userId,
            where: sql`user_id = ${u.userId}`,
            query: q,
            vector,
            pool,
            mode: 'text',
          }),
        );
        expect(mine.map((h) => [h.id, h.r])).toEqual(theirs.map((c) => [c.id, c.text_rank]));
        if (mine.length === 0) continue;
        // ts_rank as PostgreSQL computes it (float4 text is shortest-exact: fround recovers the bits)
        const rk = await execRows<{ id: string; rk: string }>(
          ctx.db,
          sql`select id, ts_rank(content_tsv, replace(plainto_tsquery('english', ${q})::text, ' & ', ' | ')::tsquery)::text as rk
              from memories where id in (${sql.join(
                mine.map((h) => sql`${h.id}`),
                sql`, `,
              )})`,
        );
        const pg = new Map(rk.map((r) => [r.id, Math.fround(Number(r.rk))]));
        for (const h of mine) expect(h.rk).toBe(pg.get(h.id));
        tiesOnIdf += mine.filter((h, i) => i > 0 && h.bm === mine[i - 1].bm && h.rk !== mine[i - 1].rk).length;
      }
    }
    expect(tiesOnIdf).toBeGreaterThan(0); // ts_rank did break Σ IDF ties
  });

  it('gives the SQL answer for the neighbouring memories of the ranking (sessions, and the notes without one)', async () => {
    const u = await createUser(app);
    const s1 = await seedSession(ctx, u.userId);
    const s2 = await seedSession(ctx, u.userId);
    const lines = [
      'How did the race go?',
      'Just under the hour, legs are dead',
      'Proud of you',
      'Next is the river swim',
    ];
    for (const [i, line] of lines.entries())
      await add(u, line, { session_id: i % 2 ? s1 : s2, metadata: { speaker: i % 2 ? 'Maya' : 'Jonas' } });
    await add(u, 'A note outside any session about the race');
    await add(u, 'Another note: the race was long');
    const index = new TextIndex();
    await index.search(ctx.db, u.userId, await textInput(u.userId, 'race', 10));
    const [vector] = await embeddingProviderOf(ctx).embed(['how did Maya race']);
    const fused = await withSearchSettings(ctx, u.userId, (tx) =>
      fusedCandidates(ctx, tx, {
        userId: u.userId,
        where: sql`user_id = ${u.userId}`,
        query: 'how did Maya race',
        vector,
        pool: 50,
        mode: 'hybrid',
      }),
    );
    let asked = 0;
    const opts = {
      mode: 'hybrid' as const,
      where: sql`user_id = ${u.userId}`,
      facts: (c: (typeof fused)[number]) => rowFacts(c.row),
    };
    const viaIndex = await rankCandidates(ctx, ctx.db, u.userId, 'how did Maya race', fused, {
      ...opts,
      neighbours: (ids) => (asked++, index.neighbours(u.userId, ids)),
    });
    const viaSql = await rankCandidates(ctx, ctx.db, u.userId, 'how did Maya race', fused, opts);
    expect(asked).toBe(1);
    expect(viaIndex.map((c) => [c.id, c.score])).toEqual(viaSql.map((c) => [c.id, c.score]));
    expect(new Set(viaIndex.map((c) => c.score)).size).toBeGreaterThan(2);
  });
});

describe(`memory — a vector candidate outside the text pool keeps its text score (${ctx.database.engine})`, () => {
  it('scores a vector-arm candidate on the query terms it holds, not 0, in SQL', async () => {
    const u = await createUser(app);
    for (const n of ['one', 'two', 'three', 'four'])
      await add(u, `zeta alpha ${n}: invoices reconciled before the audit`);
    const target = await add(u, 'alpha');
    const none = await add(u, 'nothing in common');
    const query = 'zeta alpha';
    const qt = await queryTerms(ctx.db, u.userId, query);
    const alpha = Number(qt.terms.find((t) => t.lexeme === 'alpha')!.idf.toFixed(6));
    const [vector] = await embeddingProviderOf(ctx).embed([query], { query: true });
    // pool 2: the text arm holds two of the "zeta alpha" memories; the vector arm (given) the other two
    const fused = await withSearchSettings(ctx, u.userId, (tx) =>
      fusedCandidates(ctx, tx, {
        userId: u.userId,
        where: sql`user_id = ${u.userId}`,
        query,
        vector,
        pool: 2,
        mode: 'hybrid',
        vectorHits: [
          { id: target, distance: 0.1 },
          { id: none, distance: 0.2 },
        ],
      }),
    );
    const byId = new Map(fused.map((c) => [c.id, c]));
    expect(fused.filter((c) => c.text_rank !== null)).toHaveLength(2);
    expect(byId.get(target)!.text_rank).toBeNull();
    expect(byId.get(target)!.score).toBeCloseTo(alpha, 6);
    expect(byId.get(none)!.score).toBe(0);
    // vector mode: no text scores at all
    const vectorOnly = await withSearchSettings(ctx, u.userId, (tx) =>
      fusedCandidates(ctx, tx, {
        userId: u.userId,
        where: sql`user_id = ${u.userId}`,
        query,
        vector,
        pool: 2,
        mode: 'vector',
        vectorHits: [{ id: target, distance: 0.1 }],
      }),
    );
    expect(vectorOnly.map((c) => c.score)).toEqual([0]);
  });
});

describe.runIf(ctx.database.engine === 'pglite')('memory — in-process hybrid search (pglite)', () => {
  /** A hit without its similarity and score (equal to ~1e-7 between the paths: compared apart). */
  const same = (hits: Hit[]) => hits.map(({ similarity: _s, score: _c, ...h }) => h);

  /** Run `fn` with the SQL path (no in-process arms). */
  async function viaSql<T>(fn: () => Promise<T>): Promise<T> {
    const rt = ctx.memory!;
    const saved = [rt.text, rt.vectors] as const;
    rt.text = null;
    rt.vectors = null;
    try {
      return await fn();
    } finally {
      [rt.text, rt.vectors] = saved;
    }
  }

  it('answers every mode as the SQL statement does (ids, scores, ranks, similarity)', async () => {
    const u = await createUser(app);
    for (const t of corpus(60)) await add(u, t);
    await search(u, 'warm up'); // the index and the vectors of the user are loaded
    expect(ctx.memory!.text).not.toBeNull();
    // (a hyphenated word gives its parts as plain operands too: "'well-known' & 'well' & 'known'")
    for (const q of [
      'garden festival by the river',
      "Maya's boat race",
      'thesis',
      'lisbon flight oak',
      'well-known garden',
    ]) {
      for (const mode of ['hybrid', 'text', 'vector']) {
        const mine = await search(u, q, mode);
        const theirs = await viaSql(() => search(u, q, mode));
        expect(mine.length).toBeGreaterThan(0);
        // similarity from the loaded vectors (1 − dot, double) vs pgvector's (float sums): equal to ~1e-7,
        // and so the score, which weighs it in
        expect(same(mine)).toEqual(same(theirs));
        mine.forEach((h, i) => expect(h.similarity).toBeCloseTo(theirs[i].similarity, 5));
        mine.forEach((h, i) => expect(h.score).toBeCloseTo(theirs[i].score, 5));
        if (mode !== 'text') expect(mine.some((h) => h.similarity > 0)).toBe(true);
      }
    }
  });

  it('scores a vector-arm candidate on the query terms it holds in process too', async () => {
    const u = await createUser(app);
    for (const n of ['one', 'two', 'three', 'four'])
      await add(u, `zeta alpha ${n}: invoices reconciled before the audit`);
    const target = await add(u, 'alpha');
    await add(u, 'nothing in common');
    await search(u, 'warm up'); // the index and the vectors of the user are loaded
    const query = 'zeta alpha';
    const qt = await queryTerms(ctx.db, u.userId, query);
    const idf = (l: string) => Number(qt.terms.find((t) => t.lexeme === l)!.idf.toFixed(6));
    const [vector] = await embeddingProviderOf(ctx).embed([query], { query: true });
    const rt = ctx.memory!;
    const got = await inProcessCandidates(ctx, ctx.db, {
      userId: u.userId,
      agentId: null,
      kinds: kindMask(selectedKinds(undefined)),
      where: sql`user_id = ${u.userId}`,
      query,
      vector: Promise.resolve(vector),
      pool: 2,
      mode: 'hybrid',
      text: rt.text!,
      vectors: rt.vectors!,
    });
    const hits = got!.hits;
    const t = hits.find((h) => h.id === target)!;
    expect(t.text_rank).toBeNull(); // outside the text arm's pool of 2
    expect(t.score).toBeCloseTo(idf('alpha'), 6);
    for (const h of hits.filter((x) => x.text_rank === null && x.id !== target))
      expect([0, Number((idf('alpha') + idf('zeta')).toFixed(6))]).toContainEqual(Number(h.score.toFixed(6)));
    // the same candidates and scores as the SQL statement with that vector arm
    const viaSql = await withSearchSettings(ctx, u.userId, (tx) =>
      fusedCandidates(ctx, tx, {
        userId: u.userId,
        where: sql`user_id = ${u.userId}`,
        query,
        vector,
        pool: 2,
        mode: 'hybrid',
        vectorHits: hits
          .filter((h) => h.vector_rank !== null)
          .sort((a, b) => a.vector_rank! - b.vector_rank!)
          .map((h) => ({ id: h.id, distance: 0 })),
      }),
    );
    expect(hits.map((h) => [h.id, Number(h.score.toFixed(6))])).toEqual(
      viaSql.map((c) => [c.id, Number(c.score.toFixed(6))]),
    );
  });

  it('ranks (neighbours, "when", a named period) with the index facts as with the rows, reading only the page', async () => {
    const u = await createUser(app);
    const year = new Date().getUTCFullYear();
    const sessions = [await seedSession(ctx, u.userId), await seedSession(ctx, u.userId)];
    const lines = [
      ['Maya', 'How did the river race go on Saturday?'],
      ['Jonas', 'Just under the hour, my legs are dead'],
      ['Maya', 'Proud of you, the garden party is next week'],
      ['Jonas', 'The boat festival was in March, we sailed past the oak'],
      ['Maya', 'I may bring the thesis chapter to the harvest festival'],
      ['Jonas', 'Lisbon flight booked for the race'],
    ];
    for (const [i, [speaker, line]] of lines.entries()) {
      const occurred_at = `${i % 2 ? year - 1 : year}-03-${String(10 + i).padStart(2, '0')}T12:00:00Z`;
      await add(u, line, { session_id: sessions[i % 3 === 0 ? 0 : 1], metadata: { speaker }, occurred_at });
      if (i === 2) await search(u, 'warm up'); // loaded from the table, the later turns appended
    }
    for (const t of corpus(30)) await add(u, t);
    const queries = [
      'When did Jonas race?',
      'What did Maya say about the festival',
      'race in March last year',
      'garden boat oak thesis',
      'when is the harvest festival',
    ];
    for (const q of queries) {
      for (const limit of [3, 50]) {
        const mine = await search(u, q, 'hybrid', limit);
        const theirs = await viaSql(() => search(u, q, 'hybrid', limit));
        expect(same(mine)).toEqual(same(theirs));
        mine.forEach((h, i) => expect(h.score).toBeCloseTo(theirs[i].score, 5));
      }
    }
  });

  it('ranks again without a row deleted behind its back, so the page stays full', async () => {
    const u = await createUser(app);
    for (const t of corpus(40)) await add(u, t);
    const q = 'garden festival river';
    const vectorBefore = await search(u, q, 'vector', 5);
    const hybridBefore = await search(u, q, 'hybrid', 5);
    expect(vectorBefore).toHaveLength(5);
    // deleted without telling the indexes (the loaded vectors keep them; the text index reloads on its count check)
    const gone = [vectorBefore[0].id, vectorBefore[2].id, hybridBefore[0].id];
    await execRows(ctx.db, sql`delete from memories where id in (${gone[0]}, ${gone[1]}, ${gone[2]})`);
    const vectorAfter = await search(u, q, 'vector', 5);
    expect(vectorAfter).toHaveLength(5);
    const kept = [vectorBefore[1], vectorBefore[3], vectorBefore[4]].filter((h) => !gone.includes(h.id));
    expect(vectorAfter.slice(0, kept.length).map((h) => [h.id, h.vector_rank])).toEqual(
      kept.map((h) => [h.id, h.vector_rank]),
    );
    const hybridAfter = await search(u, q, 'hybrid', 5);
    expect(hybridAfter).toHaveLength(5);
    for (const h of [...vectorAfter, ...hybridAfter]) expect(gone).not.toContain(h.id);
  });

  it('follows inserts, deletes, a replaced summary and writes it was not told about', async () => {
    const u = await createUser(app);
    await add(u, 'The harvest festival drew two hundred people');
    expect((await search(u, 'harvest', 'text')).length).toBe(1);
    const fresh = await add(u, 'Harvest moon over the harvest field');
    expect((await search(u, 'harvest', 'text'))[0].id).toBe(fresh);
    // a row inserted behind the index's back: the count check reloads the user's entry
    const [{ id: sneaky }] = await execRows<{ id: string }>(
      ctx.db,
      sql`insert into memories (id, user_id, source, content, metadata) values ('mem_01jzzzzzzzzzzzzzzzzzzzzzzz', ${u.userId}, 'explicit', 'harvest harvest harvest zucchini', '{}'::jsonb) returning id`,
    );
    expect((await search(u, 'zucchini harvest', 'text'))[0].id).toBe(sneaky);
    // a session summary replaced: the old summary's memory leaves the index
    const s = await seedSession(ctx, u.userId, { name: 'harvest notes' });
    await add(u, 'harvest planning meeting', { session_id: s });
    await call(app, { method: 'POST', url: `/memory/sessions/${s}/summarize`, headers: u.headers }, 200);
    const first = (await search(u, 'harvest planning meeting')).map((h) => h.id); // the vectors are loaded now
    await call(app, { method: 'POST', url: `/memory/sessions/${s}/summarize`, headers: u.headers }, 200);
    const summaries = (await search(u, 'harvest planning meeting', 'text')).filter((h) => h.id !== sneaky);
    expect(same(await viaSql(() => search(u, 'harvest planning meeting', 'text')))).toEqual(
      same(await search(u, 'harvest planning meeting', 'text')),
    );
    // the replaced summary's memory is still among the loaded vectors: never a hit, and the same answer as SQL
    const hybrid = await search(u, 'harvest planning meeting');
    expect(hybrid.map((h) => h.id)).toEqual(
      (await viaSql(() => search(u, 'harvest planning meeting'))).map((h) => h.id),
    );
    expect(first.filter((id) => !hybrid.some((h) => h.id === id))).toHaveLength(1);
    expect(summaries.length).toBeGreaterThan(1);
    await call(app, { method: 'DELETE', url: '/memory', headers: u.headers }, 200);
    expect(await search(u, 'harvest', 'text')).toEqual([]);
  });
});
