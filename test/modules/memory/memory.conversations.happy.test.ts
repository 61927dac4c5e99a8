/**
 * Conversation turns (issue 21, src/modules/memory/turns.ts): memories with `metadata.speaker` are
 * embedded with their speaker and the session's previous memory, and hybrid search boosts turns of
 * the speaker the query names and adds a share of the neighbouring turns' scores.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { embeddingProviderOf, settleMemoryEmbeddings } from '../../../src/modules/memory/runtime.js';
import { embeddingText } from '../../../src/modules/memory/turns.js';
import { call, createUser, setupApp, testEnv, type TestUser } from '../../helpers/app.js';
import { seedSession } from './helpers.js';

const { app, ctx } = await setupApp();
type Hit = { id: string; score: number; similarity: number };

async function turn(u: TestUser, sessionId: string | undefined, speaker: string | null, content: string): Promise<{ id: string }> {
  const payload = { content, ...(sessionId ? { session_id: sessionId } : {}), ...(speaker ? { metadata: { speaker } } : {}) };
  return (await call(app, { method: 'POST', url: '/memory', headers: u.headers, payload }, 201)).body;
}

async function search(u: TestUser, q: string, mode = 'hybrid'): Promise<Map<string, Hit>> {
  const { body } = await call(app, { method: 'GET', url: `/memory/search?q=${encodeURIComponent(q)}&mode=${mode}&limit=50`, headers: u.headers }, 200);
  return new Map(body.data.map((h: Hit) => [h.id, h]));
}

/** Search with the speaker boost and neighbour weight set to `sb` / `nw` for the call. */
async function searchWith(u: TestUser, q: string, sb: number, nw: number): Promise<Map<string, Hit>> {
  const f = ctx.config.memory.fusion;
  const saved = { speakerBoost: f.speakerBoost, neighbourWeight: f.neighbourWeight };
  Object.assign(f, { speakerBoost: sb, neighbourWeight: nw });
  try {
    return await search(u, q);
  } finally {
    Object.assign(f, saved);
  }
}

describe(`memory — conversation turns (${ctx.database.engine})`, () => {
  it('embeds a turn as "speaker: previous turn + turn", other memories as their content (also when back-filled)', async () => {
    const u = await createUser(app);
    const sid = await seedSession(ctx, u.userId);
    await turn(u, sid, 'Jonas', 'How did the race go?');
    const reply = await turn(u, sid, 'Maya', 'Just under my goal, my legs are dead.');
    const note = await turn(u, undefined, null, 'Buy oat milk and coffee beans.');
    const check = async () => {
      const ctxText = embeddingText('Just under my goal, my legs are dead.', { speaker: 'Maya' }, 'How did the race go?');
      expect(ctxText).toBe('Maya: How did the race go? Just under my goal, my legs are dead.');
      const hits = await search(u, ctxText, 'vector');
      expect(hits.get(reply.id)!.similarity).toBeGreaterThan(0.9999);
      expect((await search(u, 'Just under my goal, my legs are dead.', 'vector')).get(reply.id)!.similarity).toBeLessThan(0.999);
      expect((await search(u, 'Buy oat milk and coffee beans.', 'vector')).get(note.id)!.similarity).toBeGreaterThan(0.9999);
    };
    await check();
    // after an embedding failure the back-fill must embed the same text
    await ctx.db.execute(sql`update memories set embedding = null where user_id = ${u.userId}`);
    await settleMemoryEmbeddings(ctx);
    await check();
  });

  it('boosts the turns of the speaker the query names by (1 + MEMORY_SPEAKER_BOOST)', async () => {
    const u = await createUser(app);
    const sid = await seedSession(ctx, u.userId);
    const maya = await turn(u, sid, 'Maya', 'I adopted a grey cat from the shelter.');
    const jonas = await turn(u, sid, 'Jonas', 'We adopted a grey cat from the shelter too.');
    const other = await turn(u, undefined, null, 'A grey cat sat on the shelter roof.');
    const q = "Which cat did Maya's family adopt?";
    const off = await searchWith(u, q, 0, 0);
    const on = await searchWith(u, q, 0.5, 0);
    expect(on.get(maya.id)!.score).toBeCloseTo(off.get(maya.id)!.score * 1.5, 7);
    expect(on.get(jonas.id)!.score).toBeCloseTo(off.get(jonas.id)!.score, 7);
    expect(on.get(other.id)!.score).toBeCloseTo(off.get(other.id)!.score, 7);
    expect([...on.keys()][0]).toBe(maya.id);
  });

  it('adds MEMORY_NEIGHBOUR_WEIGHT × the better neighbouring turn of the same session', async () => {
    const u = await createUser(app);
    const s1 = await seedSession(ctx, u.userId);
    const s2 = await seedSession(ctx, u.userId);
    const a = await turn(u, s1, 'Maya', 'Which dinosaur was on the birthday cake?');
    const b = await turn(u, s1, 'Jonas', 'A triceratops, because Tim insisted.');
    const c = await turn(u, s1, 'Maya', 'Ha, of course he did.');
    const far = await turn(u, s2, 'Jonas', 'The triceratops toy broke yesterday.'); // other session: not a neighbour
    const q = 'dinosaur birthday cake';
    const off = await searchWith(u, q, 0, 0);
    const on = await searchWith(u, q, 0, 0.5);
    const s = (id: string) => off.get(id)?.score ?? 0;
    expect(on.get(b.id)!.score).toBeCloseTo(s(b.id) + 0.5 * Math.max(s(a.id), s(c.id)), 7);
    expect(on.get(a.id)!.score).toBeCloseTo(s(a.id) + 0.5 * s(b.id), 7);
    expect(on.get(far.id)!.score).toBeCloseTo(s(far.id), 7);
    // the reply to the matching question now outranks the other session's turn
    const order = [...on.keys()];
    expect(order.indexOf(b.id)).toBeLessThan(order.indexOf(far.id));
  });

  it('expand=neighbors: each hit carries the memories before and after it in its session', async () => {
    const u = await createUser(app);
    const s1 = await seedSession(ctx, u.userId);
    const a = await turn(u, s1, 'Maya', 'Which dinosaur was on the birthday cake?');
    const b = await turn(u, s1, 'Jonas', 'A triceratops, because Tim insisted.');
    const c = await turn(u, s1, 'Maya', 'Ha, of course he did.');
    const lone = await turn(u, undefined, null, 'A triceratops skeleton at the museum');
    const url = '/memory/search?q=triceratops&limit=10';
    const { body } = await call(app, { method: 'GET', url: `${url}&expand=neighbors`, headers: u.headers }, 200);
    const hit = (id: string) => body.data.find((h: { id: string }) => h.id === id);
    expect(hit(b.id).neighbors.previous).toMatchObject({ id: a.id, content: 'Which dinosaur was on the birthday cake?', metadata: { speaker: 'Maya' }, session_id: s1 });
    expect(hit(b.id).neighbors.next).toMatchObject({ id: c.id, content: 'Ha, of course he did.' });
    expect(hit(lone.id).neighbors).toEqual({ previous: null, next: null });
    // the first and last turns of a session have one neighbour
    const { body: first } = await call(app, { method: 'GET', url: `/memory/search?q=${encodeURIComponent('dinosaur cake')}&expand=neighbors`, headers: u.headers }, 200);
    expect(first.data.find((h: { id: string }) => h.id === a.id).neighbors).toMatchObject({ previous: null, next: { id: b.id } });
    // without expand the hits are as before
    const { body: plain } = await call(app, { method: 'GET', url, headers: u.headers }, 200);
    expect(plain.data.every((h: object) => !('neighbors' in h))).toBe(true);
    expect(plain.data.map((h: { id: string }) => h.id)).toEqual(body.data.map((h: { id: string }) => h.id));
  });

  it('text and vector modes are not re-ranked', async () => {
    const u = await createUser(app);
    const sid = await seedSession(ctx, u.userId);
    const m = await turn(u, sid, 'Maya', 'Pebble knocked my phone into the bath.');
    const q = 'Maya phone bath';
    for (const mode of ['text', 'vector']) {
      const f = ctx.config.memory.fusion;
      Object.assign(f, { speakerBoost: 0 });
      const base = (await search(u, q, mode)).get(m.id)!.score;
      Object.assign(f, { speakerBoost: 0.5 });
      expect((await search(u, q, mode)).get(m.id)!.score).toBe(base);
    }
  });

  it('configuration: EMBEDDINGS_PROVIDER and the re-ranking weights are validated', () => {
    expect(() => loadConfig(testEnv({ EMBEDDINGS_PROVIDER: 'word2vec' }))).toThrow(/EMBEDDINGS_PROVIDER/);
    expect(() => loadConfig(testEnv({ EMBEDDINGS_PROVIDER: 'sentence-encoder', EMBEDDINGS_DIMENSIONS: '384' }))).toThrow(/EMBEDDINGS_DIMENSIONS/);
    expect(() => loadConfig(testEnv({ EMBEDDINGS_PROVIDER: 'sentence-encoder', EMBEDDINGS_URL: 'http://127.0.0.1:9/v1' }))).toThrow(/EMBEDDINGS_PROVIDER/);
    expect(() => loadConfig(testEnv({ EMBEDDINGS_PROVIDER: 'openai' }))).toThrow(/EMBEDDINGS_URL/);
    expect(() => loadConfig(testEnv({ MEMORY_SPEAKER_BOOST: '-1' }))).toThrow(/MEMORY_SPEAKER_BOOST/);
    const c = loadConfig(testEnv({ EMBEDDINGS_PROVIDER: 'sentence-encoder' }));
    expect(c.memory.embeddings).toMatchObject({ provider: 'sentence-encoder', model: 'universal-sentence-encoder-lite', dimensions: 512 });
    expect(c.memory.fusion).toMatchObject({ vectorWeight: 3, speakerBoost: 0.5, neighbourWeight: 0.5 });
    expect(embeddingProviderOf(ctx).provider).toBe('local');
  });
});
