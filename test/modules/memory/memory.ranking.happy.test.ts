/**
 * Full-text ranking weights rare query terms above common ones (IDF from the trigger-maintained
 * `memory_terms` / `memory_doc_counts`), and those statistics follow inserts and deletes.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { execRows } from '../../../src/db/client.js';
import { embeddingProviderOf } from '../../../src/modules/memory/runtime.js';
import { fusedCandidates, maxScorePlan, termWeights, withSearchSettings } from '../../../src/modules/memory/store.js';
import { call, createUser, setupApp } from '../../helpers/app.js';

const { app, ctx } = await setupApp();

async function add(headers: Record<string, string>, content: string) {
  return (await call(app, { method: 'POST', url: '/memory', headers, payload: { content } }, 201)).body;
}

async function stats(userId: string, lexeme: string): Promise<{ df: number; n: number }> {
  const [t] = await execRows<{ df: number }>(
    ctx.db,
    sql`select df from memory_terms where user_id = ${userId} and lexeme = ${lexeme}`,
  );
  const [c] = await execRows<{ n: number }>(ctx.db, sql`select n from memory_doc_counts where user_id = ${userId}`);
  return { df: Number(t?.df ?? 0), n: Number(c?.n ?? 0) };
}

describe(`memory — term statistics and IDF ranking (${ctx.database.engine})`, () => {
  it('ranks the memory holding the rare query term first, although another repeats the common one', async () => {
    const u = await createUser(app);
    const common = await add(u.headers, 'Weather report: weather warnings and weather maps for the weather desk');
    for (const city of ['Lisbon', 'Porto', 'Madrid', 'Paris']) await add(u.headers, `Checked the weather in ${city}`);
    const rare = await add(u.headers, 'Planned a trip to Zanzibar in March');
    const { body } = await call(
      app,
      {
        method: 'GET',
        url: `/memory/search?q=${encodeURIComponent('weather in Zanzibar')}&mode=text&limit=3`,
        headers: u.headers,
      },
      200,
    );
    expect(body.data[0].id).toBe(rare.id);
    expect(body.data.map((m: { id: string }) => m.id)).toContain(common.id);
    const w = await termWeights(ctx.db, u.userId, 'weather in Zanzibar');
    const idf = Object.fromEntries(w.map((x) => [x.lexeme, x.idf]));
    expect(idf.zanzibar).toBeGreaterThan(idf.weather);
  });

  it('hybrid: memories tied on the text score share one text rank, so cosine — not the id order — decides', async () => {
    const u = await createUser(app);
    // both match only "zanzibar" (same Σ IDF, same ts_rank); the older one also shares word pieces
    // with "organise" (organize: a different lexeme), so the vector arm prefers it
    const older = await add(u.headers, 'Zanzibar: organize the visit');
    const newer = await add(u.headers, 'Zanzibar: schedule the visit');
    const q = encodeURIComponent('Zanzibar organise');
    const { body: text } = await call(
      app,
      { method: 'GET', url: `/memory/search?q=${q}&mode=text`, headers: u.headers },
      200,
    );
    expect(text.data.map((m: { id: string }) => m.id)).toEqual([newer.id, older.id]); // text mode: ties in id order, newest first
    const { body: hybrid } = await call(app, { method: 'GET', url: `/memory/search?q=${q}`, headers: u.headers }, 200);
    expect(hybrid.data.map((m: { id: string }) => m.id)).toEqual([older.id, newer.id]);
    expect(hybrid.data[0].vector_rank).toBe(1);
    expect(hybrid.data[0].text_rank).toBe(2); // the reported text rank stays the arm's position
    expect(hybrid.data[0].similarity).toBeGreaterThan(hybrid.data[1].similarity);
  });

  it('searches with quotes, backslashes and tsquery operators in the query text', async () => {
    const u = await createUser(app);
    const m = await add(u.headers, "O'Brien's café: back\\slash & pipe | notes");
    for (const q of ["O'Brien's", 'back\\slash', "'; drop table memories; --", 'a & b | !c <-> d:*', "it''s"]) {
      const { body } = await call(
        app,
        { method: 'GET', url: `/memory/search?q=${encodeURIComponent(q)}&mode=text`, headers: u.headers },
        200,
      );
      expect(Array.isArray(body.data)).toBe(true);
    }
    const { body } = await call(
      app,
      { method: 'GET', url: `/memory/search?q=${encodeURIComponent("O'Brien café")}&mode=text`, headers: u.headers },
      200,
    );
    expect(body.data[0].id).toBe(m.id);
  });

  it('counts documents per term on insert and delete, per user', async () => {
    const u = await createUser(app);
    const other = await createUser(app);
    await add(u.headers, 'Espresso machine descaled');
    await add(u.headers, 'Espresso beans reordered, espresso grinder cleaned');
    await add(other.headers, 'Espresso for the other user');
    expect(await stats(u.userId, 'espresso')).toEqual({ df: 2, n: 2 }); // documents, not occurrences
    expect(await stats(other.userId, 'espresso')).toEqual({ df: 1, n: 1 });
    await call(app, { method: 'DELETE', url: '/memory', headers: u.headers }, 200);
    expect(await stats(u.userId, 'espresso')).toEqual({ df: 0, n: 0 });
    expect(await stats(other.userId, 'espresso')).toEqual({ df: 1, n: 1 });
  });
});

describe(`memory — pruning of the full-text arm (${ctx.database.engine})`, () => {
  it('plans to skip only terms whose summed weight stays below every rarer term', () => {
    const w = (lexeme: string, idf: number, df = 10) => ({ lexeme, df, idf });
    expect(maxScorePlan([w('week', 0.4), w('zanzibar', 5), w('trip', 1.1), w('last', 0.3)])).toEqual({
      essential: ['zanzibar'],
      rest: 1.8,
    });
    // 2 > 1.5 + 0.4 only from the second term on
    expect(maxScorePlan([w('a', 2.5), w('b', 2), w('c', 1.5), w('d', 0.4)])).toEqual({
      essential: ['a', 'b'],
      rest: 1.9,
    });
    expect(maxScorePlan([w('a', 1), w('b', 1), w('c', 1)])).toBeNull();
    expect(maxScorePlan([w('a', 3)])).toBeNull();
    // equal to the rest is not enough: a memory of the rest alone would tie
    expect(maxScorePlan([w('a', 2), w('b', 1), w('c', 1)])).toBeNull();
    // a term no memory holds is not essential (it would match nothing)
    expect(maxScorePlan([w('unseen', 9, 0), w('zanzibar', 5), w('trip', 1.1), w('week', 0.4)])).toEqual({
      essential: ['zanzibar'],
      rest: 1.5,
    });
  });

  it('returns exactly the ranking of a scan over every match, whether the rare terms fill the pool or not', async () => {
    const u = await createUser(app);
    // common words in most memories, a few rarer ones in some: pools of 5 fill from the rare
    // terms for some queries and fall back to every match for others
    const words = ['invoice', 'payment', 'refund', 'contract', 'ticket', 'deploy', 'server', 'backup'];
    let seed = 7;
    const rnd = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296;
    const rows = Array.from({ length: 120 }, (_, i) => {
      const picked = words.filter((_, k) => rnd() < 0.6 / (k + 1));
      return `Note ${i}: weekly status ${picked.join(' ')}${i % 17 === 0 ? ' zanzibar' : ''}${i % 9 === 0 ? ' quarterly' : ''}`;
    });
    for (const content of rows) await add(u.headers, content);
    const queries = [
      'weekly status zanzibar',
      'quarterly invoice status',
      'refund contract weekly',
      'zanzibar quarterly backup note',
      'server deploy',
      'status note',
    ];
    const actor = { accountId: u.userId, agentId: null };
    let pruned = 0;
    for (const q of queries) {
      const terms = await termWeights(ctx.db, u.userId, q);
      if (maxScorePlan(terms)) pruned++;
      const [vector] = await embeddingProviderOf(ctx).embed([q]);
      for (const pool of [3, 5, 40]) {
        const run = (maxScore: boolean) =>
          withSearchSettings(ctx, u.userId, (tx) =>
            fusedCandidates(ctx, tx, {
              userId: u.userId,
              where: sql`user_id = ${actor.accountId}`,
              query: q,
              vector,
              pool,
              mode: 'text',
              maxScore,
            }),
          );
        const [fast, full] = [await run(true), await run(false)];
        expect(fast.length).toBeGreaterThan(0);
        expect(fast.map((c) => [c.id, c.text_rank])).toEqual(full.map((c) => [c.id, c.text_rank]));
      }
    }
    expect(pruned).toBeGreaterThanOrEqual(3); // the pruned path did run
  });
  it('skips the common terms only when the rare ones fill the pool', async () => {
    const u = await createUser(app);
    // 100 memories: "alpha" in 20 (idf ≈ 1.6), "beta" and "gamma" in 60 each (idf ≈ 0.5), both
    // together in 30 of them, alpha never with them: a beta+gamma pair (≈ 1.2) scores less than alpha
    // alone; "kappa" (2 of the alpha memories) cannot fill a pool of 3 by itself
    for (let i = 0; i < 100; i++) {
      const words =
        i < 20 ? ['alpha', ...(i < 2 ? ['kappa'] : [])] : [...(i < 80 ? ['beta'] : []), ...(i >= 50 ? ['gamma'] : [])];
      await add(u.headers, `Entry ${i} ${words.join(' ')} filler${i % 7}`);
    }
    const actor = { accountId: u.userId, agentId: null };
    for (const [q, pool] of [
      ['alpha beta gamma', 3],
      ['alpha beta gamma', 40],
      ['beta gamma', 3],
      ['beta gamma', 40],
      ['kappa beta', 3],
    ] as const) {
      const [vector] = await embeddingProviderOf(ctx).embed([q]);
      const run = (maxScore: boolean) =>
        withSearchSettings(ctx, u.userId, (tx) =>
          fusedCandidates(ctx, tx, {
            userId: u.userId,
            where: sql`user_id = ${actor.accountId}`,
            query: q,
            vector,
            pool,
            mode: 'text',
            maxScore,
          }),
        );
      const [fast, full] = [await run(true), await run(false)];
      expect(fast.map((c) => c.id)).toEqual(full.map((c) => c.id));
      expect(fast).toHaveLength(pool);
    }
  });
  it.skipIf(!ctx.database.hasVector)(
    'sizes hnsw.ef_search to the caller’s store: one per 100 memories, from 100 to 1000',
    async () => {
      const u = await createUser(app);
      const efFor = async (n: number) => {
        await ctx.db.execute(
          sql`insert into memory_doc_counts (user_id, n) values (${u.userId}, ${n}) on conflict (user_id) do update set n = excluded.n`,
        );
        return withSearchSettings(
          ctx,
          u.userId,
          async (tx) => (await execRows<{ ef: string }>(tx, sql`select current_setting('hnsw.ef_search') as ef`))[0].ef,
        );
      };
      expect(await efFor(3)).toBe('100');
      expect(await efFor(54_321)).toBe('544');
      expect(await efFor(2_000_000)).toBe('1000');
      await ctx.db.execute(sql`delete from memory_doc_counts where user_id = ${u.userId}`);
      expect(
        await withSearchSettings(
          ctx,
          u.userId,
          async (tx) => (await execRows<{ ef: string }>(tx, sql`select current_setting('hnsw.ef_search') as ef`))[0].ef,
        ),
      ).toBe('100');
    },
  );
});
