/**
 * Memory kinds (src/modules/memory/kinds.ts): the tool-execution hook writes `execution` memories,
 * `POST /memory` writes notes (or summaries), and search and list return notes and summaries unless
 * `?kind=` asks for executions; every hit's score and similarity lie in 0..1.
 */
import { describe, expect, it } from 'vitest';
import { call, createUser, setupApp, type TestUser } from '../../helpers/app.js';
import { seedExecutions, seedSession } from './helpers.js';

const { app, ctx } = await setupApp();

type Hit = { id: string; kind: string; source: string; score: number; similarity: number };

async function note(u: TestUser, content: string, extra: Record<string, unknown> = {}): Promise<Hit> {
  return (await call(app, { method: 'POST', url: '/memory', headers: u.headers, payload: { content, ...extra } }, 201))
    .body;
}

async function get(u: TestUser, url: string): Promise<Hit[]> {
  return (await call(app, { method: 'GET', url, headers: u.headers }, 200)).body.data;
}

/** A user with two notes, a summary and two executions, all about the Lisbon hotel. */
async function seeded(): Promise<{ u: TestUser; notes: Hit[]; summary: Hit; executions: string[] }> {
  const u = await createUser(app);
  const sid = await seedSession(ctx, u.userId);
  const notes = [
    await note(u, 'I prefer the Lisbon hotel near the river'),
    await note(u, 'Book the Lisbon hotel for May', { session_id: sid }),
  ];
  const summary = await note(u, 'Summary: the Lisbon hotel was chosen', { kind: 'summary' });
  const executions = await seedExecutions(ctx, u.userId, sid, null, [
    { tool: 'search_hotels', args: { city: 'Lisbon', q: 'Lisbon hotel' } },
    { tool: 'book_hotel', args: { city: 'Lisbon', hotel: 'Lisbon hotel Aurora' } },
  ]);
  return { u, notes, summary, executions };
}

describe(`memory — kinds (${ctx.database.engine})`, () => {
  it('POST /memory writes a note (or a summary when asked); the hook writes executions', async () => {
    const { u, notes, summary } = await seeded();
    expect(notes.map((n) => [n.kind, n.source])).toEqual([
      ['note', 'explicit'],
      ['note', 'explicit'],
    ]);
    expect([summary.kind, summary.source]).toEqual(['summary', 'explicit']);
    const all = await get(u, '/memory?kind=all&limit=100');
    expect(all.filter((m) => m.source === 'execution').map((m) => m.kind)).toEqual(['execution', 'execution']);
  });

  it('search returns notes and summaries by default, executions on request', async () => {
    const { u, notes, summary, executions } = await seeded();
    for (const mode of ['hybrid', 'text', 'vector']) {
      const q = `/memory/search?q=${encodeURIComponent('Lisbon hotel')}&limit=50&mode=${mode}`;
      const byDefault = await get(u, q);
      expect(new Set(byDefault.map((h) => h.id))).toEqual(new Set([...notes.map((n) => n.id), summary.id]));
      if (mode !== 'vector') {
        // executions have no vector until the back-fill runs: the text arm finds them
        const execs = await get(u, `${q}&kind=execution`);
        expect(execs.map((h) => h.kind)).toEqual(['execution', 'execution']);
        const all = await get(u, `${q}&kind=all`);
        expect(all).toHaveLength(5);
        const mixed = await get(u, `${q}&kind=note,execution`);
        expect(new Set(mixed.map((h) => h.kind))).toEqual(new Set(['note', 'execution']));
      }
      expect((await get(u, `${q}&kind=summary`)).map((h) => h.id)).toEqual([summary.id]);
    }
    expect(executions).toHaveLength(2);
  });

  it('lists (keyset and paged) return notes and summaries by default, executions on request', async () => {
    const { u } = await seeded();
    expect((await get(u, '/memory?limit=100')).map((m) => m.kind).sort()).toEqual(['note', 'note', 'summary']);
    expect((await get(u, '/memory?kind=execution')).map((m) => m.kind)).toEqual(['execution', 'execution']);
    const { body: paged } = await call(
      app,
      { method: 'GET', url: '/memory/paginated?kind=all', headers: u.headers },
      200,
    );
    expect(paged.total).toBe(5);
    const { body: pagedDefault } = await call(
      app,
      { method: 'GET', url: '/memory/paginated', headers: u.headers },
      200,
    );
    expect(pagedDefault.total).toBe(3);
    // statistics count every kind
    const { body: stats } = await call(app, { method: 'GET', url: '/memory/stats', headers: u.headers }, 200);
    expect(stats.total_memories).toBe(5);
  });

  it('every hit has a score and a similarity in 0..1, scores in the order of the hits', async () => {
    const { u } = await seeded();
    for (const q of ['Lisbon hotel', 'when did I book the hotel in May?', 'river', 'nothing matches zzz']) {
      for (const mode of ['hybrid', 'text', 'vector']) {
        const hits = await get(u, `/memory/search?q=${encodeURIComponent(q)}&mode=${mode}&kind=all&limit=50`);
        for (const h of hits) {
          expect(h.score).toBeGreaterThanOrEqual(0);
          expect(h.score).toBeLessThanOrEqual(1);
          expect(h.similarity).toBeGreaterThanOrEqual(0);
          expect(h.similarity).toBeLessThanOrEqual(1);
        }
        for (let i = 1; i < hits.length; i++) expect(hits[i].score).toBeLessThanOrEqual(hits[i - 1].score);
      }
    }
    // the best text match of a text search scores 1
    expect((await get(u, `/memory/search?q=${encodeURIComponent('Lisbon hotel river')}&mode=text`))[0].score).toBe(1);
  });
});
