/**
 * Full-text ranking weights rare query terms above common ones (IDF from the trigger-maintained
 * `memory_terms` / `memory_doc_counts`), and those statistics follow inserts and deletes.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { execRows } from '../../../src/db/client.js';
import { termWeights } from '../../../src/modules/memory/store.js';
import { call, createUser, setupApp } from '../../helpers/app.js';

const { app, ctx } = await setupApp();

async function add(headers: Record<string, string>, content: string) {
  return (await call(app, { method: 'POST', url: '/memory', headers, payload: { content } }, 201)).body;
}

async function stats(userId: string, lexeme: string): Promise<{ df: number; n: number }> {
  const [t] = await execRows<{ df: number }>(ctx.db, sql`select df from memory_terms where user_id = ${userId} and lexeme = ${lexeme}`);
  const [c] = await execRows<{ n: number }>(ctx.db, sql`select n from memory_doc_counts where user_id = ${userId}`);
  return { df: Number(t?.df ?? 0), n: Number(c?.n ?? 0) };
}

describe(`memory — term statistics and IDF ranking (${ctx.database.engine})`, () => {
  it('ranks the memory holding the rare query term first, although another repeats the common one', async () => {
    const u = await createUser(app);
    const common = await add(u.headers, 'Weather report: weather warnings and weather maps for the weather desk');
    for (const city of ['Lisbon', 'Porto', 'Madrid', 'Paris']) await add(u.headers, `Checked the weather in ${city}`);
    const rare = await add(u.headers, 'Planned a trip to Zanzibar in March');
    const { body } = await call(app, { method: 'GET', url: `/memory/search?q=${encodeURIComponent('weather in Zanzibar')}&mode=text&limit=3`, headers: u.headers }, 200);
    expect(body.data[0].id).toBe(rare.id);
    expect(body.data.map((m: { id: string }) => m.id)).toContain(common.id);
    const w = await termWeights(ctx.db, u.userId, 'weather in Zanzibar');
    const idf = Object.fromEntries(w.map((x) => [x.lexeme, x.idf]));
    expect(idf.zanzibar).toBeGreaterThan(idf.weather);
  });

  it('searches with quotes, backslashes and tsquery operators in the query text', async () => {
    const u = await createUser(app);
    const m = await add(u.headers, "O'Brien's café: back\\slash & pipe | notes");
    for (const q of ["O'Brien's", 'back\\slash', "'; drop table memories; --", 'a & b | !c <-> d:*', "it''s"]) {
      const { body } = await call(app, { method: 'GET', url: `/memory/search?q=${encodeURIComponent(q)}&mode=text`, headers: u.headers }, 200);
      expect(Array.isArray(body.data)).toBe(true);
    }
    const { body } = await call(app, { method: 'GET', url: `/memory/search?q=${encodeURIComponent("O'Brien café")}&mode=text`, headers: u.headers }, 200);
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
