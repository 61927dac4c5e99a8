/**
 * Conversations in memory (src/modules/memory/turns.ts, ranking.ts): a note is embedded with the
 * note before it in its stream (its session, or the notes without one), and hybrid search adds a
 * share of the better neighbouring memory's relevance; scores stay in 0..1.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { embeddingProviderOf, settleMemoryEmbeddings } from '../../../src/modules/memory/runtime.js';
import { asksMainly } from '../../../src/modules/memory/turn-facts.js';
import { embeddingText } from '../../../src/modules/memory/turns.js';
import { call, createUser, setupApp, testEnv, type TestUser } from '../../helpers/app.js';
import { seedSession } from './helpers.js';

const { app, ctx } = await setupApp();
type Hit = { id: string; score: number; similarity: number };

async function turn(
  u: TestUser,
  sessionId: string | undefined,
  speaker: string | null,
  content: string,
): Promise<{ id: string }> {
  const payload = {
    content,
    ...(sessionId ? { session_id: sessionId } : {}),
    ...(speaker ? { metadata: { speaker } } : {}),
  };
  return (await call(app, { method: 'POST', url: '/memory', headers: u.headers, payload }, 201)).body;
}

async function search(u: TestUser, q: string, mode = 'hybrid'): Promise<Map<string, Hit>> {
  const { body } = await call(
    app,
    { method: 'GET', url: `/memory/search?q=${encodeURIComponent(q)}&mode=${mode}&limit=50`, headers: u.headers },
    200,
  );
  return new Map(body.data.map((h: Hit) => [h.id, h]));
}

/** Search with the neighbour weight set to `nw` and the question penalty to `qp` (0: off) for the call. */
async function searchWith(u: TestUser, q: string, nw: number, qp = 0): Promise<Map<string, Hit>> {
  const f = ctx.config.memory.fusion;
  const saved = { ...f };
  Object.assign(f, { neighbourWeight: nw, questionPenalty: qp });
  try {
    return await search(u, q);
  } finally {
    Object.assign(f, saved);
  }
}

describe(`memory — conversations (${ctx.database.engine})`, () => {
  it('embeds a turn as "previous turn + turn" in its stream, other notes and summaries alone (also when back-filled)', async () => {
    const u = await createUser(app);
    const sid = await seedSession(ctx, u.userId);
    await turn(u, sid, 'Jonas', 'How did the race go?');
    const reply = await turn(u, sid, 'Maya', 'Just under my goal, my legs are dead.');
    const first = await turn(u, undefined, null, 'Buy oat milk and coffee beans.');
    const second = await turn(u, undefined, null, 'Call the plumber about the leak.');
    const asked = await turn(u, undefined, null, 'Caroline: Did you go to the support group?');
    const answered = await turn(u, undefined, null, 'Melanie: Yes, yesterday, it was powerful.');
    const summary = (
      await call(
        app,
        {
          method: 'POST',
          url: '/memory',
          headers: u.headers,
          payload: { content: 'Week summary: groceries and repairs.', kind: 'summary' },
        },
        201,
      )
    ).body;
    const check = async () => {
      const ctxText = embeddingText(
        'Just under my goal, my legs are dead.',
        { speaker: 'Maya' },
        'Jonas: How did the race go?',
      );
      expect(ctxText).toBe('Jonas: How did the race go? Maya: Just under my goal, my legs are dead.');
      expect((await search(u, ctxText, 'vector')).get(reply.id)!.similarity).toBeGreaterThan(0.9999);
      expect(
        (await search(u, 'Maya: Just under my goal, my legs are dead.', 'vector')).get(reply.id)!.similarity,
      ).toBeLessThan(0.999);
      // notes that are not turns are embedded alone, wherever they are
      expect((await search(u, 'Buy oat milk and coffee beans.', 'vector')).get(first.id)!.similarity).toBeGreaterThan(
        0.9999,
      );
      expect(
        (await search(u, 'Call the plumber about the leak.', 'vector')).get(second.id)!.similarity,
      ).toBeGreaterThan(0.9999);
      // a turn the content names the speaker of follows the previous such turn of the notes without a session
      expect(
        (await search(u, 'Caroline: Did you go to the support group?', 'vector')).get(asked.id)!.similarity,
      ).toBeGreaterThan(0.9999);
      const pair = 'Caroline: Did you go to the support group? Melanie: Yes, yesterday, it was powerful.';
      expect((await search(u, pair, 'vector')).get(answered.id)!.similarity).toBeGreaterThan(0.9999);
      expect(
        (await search(u, 'Week summary: groceries and repairs.', 'vector')).get(summary.id)!.similarity,
      ).toBeGreaterThan(0.9999);
    };
    await check();
    // after an embedding failure the back-fill must embed the same text
    await ctx.db.execute(sql`update memories set embedding = null where user_id = ${u.userId}`);
    await settleMemoryEmbeddings(ctx);
    await check();
  });

  it('adds MEMORY_NEIGHBOUR_WEIGHT × the better neighbouring memory of the same stream: (r + λ·max) / (1 + λ)', async () => {
    const u = await createUser(app);
    const s1 = await seedSession(ctx, u.userId);
    const s2 = await seedSession(ctx, u.userId);
    const a = await turn(u, s1, 'Maya', 'Which dinosaur was on the birthday cake?');
    const b = await turn(u, s1, 'Jonas', 'A triceratops, because Tim insisted.');
    const c = await turn(u, s1, 'Maya', 'Ha, of course he did.');
    const far = await turn(u, s2, 'Jonas', 'The triceratops toy broke yesterday.'); // other session: not a neighbour
    const q = 'dinosaur birthday cake';
    const off = await searchWith(u, q, 0);
    const on = await searchWith(u, q, 0.5);
    const s = (id: string) => off.get(id)?.score ?? 0;
    expect(on.get(b.id)!.score).toBeCloseTo((s(b.id) + 0.5 * Math.max(s(a.id), s(c.id))) / 1.5, 5);
    expect(on.get(a.id)!.score).toBeCloseTo((s(a.id) + 0.5 * s(b.id)) / 1.5, 5);
    expect(on.get(far.id)!.score).toBeCloseTo(s(far.id) / 1.5, 5);
    for (const h of on.values()) expect(h.score).toBeGreaterThanOrEqual(0), expect(h.score).toBeLessThanOrEqual(1);
  });

  it('notes without a session are one stream: the reply to a matching note is lifted by it', async () => {
    const u = await createUser(app);
    const q = await turn(u, undefined, null, 'Caroline: Which dinosaur was on the birthday cake?');
    const r = await turn(u, undefined, null, 'Melanie: A triceratops, because Tim insisted.');
    await turn(u, undefined, null, 'Caroline: The weather was lovely at the lake.');
    const off = await searchWith(u, 'dinosaur birthday cake', 0);
    const on = await searchWith(u, 'dinosaur birthday cake', 0.5);
    expect(on.get(r.id)!.score).toBeCloseTo(((off.get(r.id)?.score ?? 0) + 0.5 * off.get(q.id)!.score) / 1.5, 5);
  });

  it('MEMORY_QUESTION_PENALTY scales down a turn that is mainly a question; as a neighbour it still counts in full', async () => {
    const u = await createUser(app);
    const told = await turn(u, undefined, null, 'Caroline: I loved the book Becoming Nicole, a true story.');
    const asked = await turn(u, undefined, null, 'Melanie: That sounds awesome! What did you take away from the book?');
    const reply = await turn(u, undefined, null, 'Caroline: Self-acceptance, and that hope and love exist.');
    const note = await turn(u, undefined, null, 'Did I return the book about Nicole to the library?'); // not a turn
    const q = 'what did Caroline take away from the book Becoming Nicole';
    const raw = await searchWith(u, q, 0, 0);
    const s = (id: string) => raw.get(id)?.score ?? 0;
    expect(s(asked.id)).toBeGreaterThan(0);
    // own part only: the question turn / (1 + p); the others, and a note that is not a turn, unchanged
    const own = await searchWith(u, q, 0, 0.25);
    expect(own.get(asked.id)!.score).toBeCloseTo(s(asked.id) / 1.25, 5);
    for (const id of [told.id, reply.id, note.id]) expect(own.get(id)?.score ?? 0).toBeCloseTo(s(id), 5);
    // with neighbours: the reply is lifted by the question's full relevance, the question keeps its penalty
    const both = await searchWith(u, q, 0.5, 0.25);
    expect(both.get(reply.id)!.score).toBeCloseTo((s(reply.id) + 0.5 * s(asked.id)) / 1.5, 5); // the note is no turn: 0
    expect(both.get(asked.id)!.score).toBeCloseTo(
      (s(asked.id) / 1.25 + 0.5 * Math.max(s(told.id), s(reply.id))) / 1.5,
      5,
    );
    // text mode: no penalty
    const f = ctx.config.memory.fusion;
    const saved = f.questionPenalty;
    f.questionPenalty = 0;
    const text0 = (await search(u, q, 'text')).get(asked.id)!.score;
    f.questionPenalty = 0.25;
    const text1 = (await search(u, q, 'text')).get(asked.id)!.score;
    f.questionPenalty = saved;
    expect(text1).toBe(text0);
  });

  it('asksMainly: a turn that ends with a question and says at most 20 other words', () => {
    expect(asksMainly('Melanie: That sounds awesome! What did you take away from it?')).toBe(true);
    expect(asksMainly('How are you? 🙂')).toBe(true);
    expect(asksMainly('Jon: Did she say "why?"')).toBe(true);
    expect(asksMainly('Caroline: What a day. I finally went to the support group.')).toBe(false);
    expect(
      asksMainly(
        'Caroline: I went to the LGBTQ support group yesterday and it was so powerful, everyone told their story and I felt at home. What about you?',
      ),
    ).toBe(false);
    expect(asksMainly('')).toBe(false);
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
    expect(hit(b.id).neighbors.previous).toMatchObject({
      id: a.id,
      content: 'Which dinosaur was on the birthday cake?',
      metadata: { speaker: 'Maya' },
      session_id: s1,
    });
    expect(hit(b.id).neighbors.next).toMatchObject({ id: c.id, content: 'Ha, of course he did.' });
    expect(hit(lone.id).neighbors).toEqual({ previous: null, next: null });
    // the first and last turns of a session have one neighbour
    const { body: first } = await call(
      app,
      {
        method: 'GET',
        url: `/memory/search?q=${encodeURIComponent('dinosaur cake')}&expand=neighbors`,
        headers: u.headers,
      },
      200,
    );
    expect(first.data.find((h: { id: string }) => h.id === a.id).neighbors).toMatchObject({
      previous: null,
      next: { id: b.id },
    });
    // without expand the hits are as before
    const { body: plain } = await call(app, { method: 'GET', url, headers: u.headers }, 200);
    expect(plain.data.every((h: object) => !('neighbors' in h))).toBe(true);
    expect(plain.data.map((h: { id: string }) => h.id)).toEqual(body.data.map((h: { id: string }) => h.id));
  });

  it('text and vector modes have no neighbour or time factor', async () => {
    const u = await createUser(app);
    const sid = await seedSession(ctx, u.userId);
    await turn(u, sid, 'Jonas', 'Where is my phone?');
    const m = await turn(u, sid, 'Maya', 'Pebble knocked my phone into the bath.');
    for (const mode of ['text', 'vector']) {
      const f = ctx.config.memory.fusion;
      const saved = { ...f };
      Object.assign(f, { neighbourWeight: 0, timeBoost: 0 });
      const base = (await search(u, 'when did the phone fall in the bath', mode)).get(m.id)!.score;
      Object.assign(f, saved);
      expect((await search(u, 'when did the phone fall in the bath', mode)).get(m.id)!.score).toBe(base);
    }
  });

  it('configuration: EMBEDDINGS_PROVIDER and the re-ranking weights are validated', () => {
    expect(() => loadConfig(testEnv({ EMBEDDINGS_PROVIDER: 'word2vec' }))).toThrow(/EMBEDDINGS_PROVIDER/);
    expect(() =>
      loadConfig(testEnv({ EMBEDDINGS_PROVIDER: 'sentence-encoder', EMBEDDINGS_DIMENSIONS: '384' })),
    ).toThrow(/EMBEDDINGS_DIMENSIONS/);
    expect(() =>
      loadConfig(testEnv({ EMBEDDINGS_PROVIDER: 'sentence-encoder', EMBEDDINGS_URL: 'http://127.0.0.1:9/v1' })),
    ).toThrow(/EMBEDDINGS_PROVIDER/);
    expect(() => loadConfig(testEnv({ EMBEDDINGS_PROVIDER: 'openai' }))).toThrow(/EMBEDDINGS_URL/);
    expect(() => loadConfig(testEnv({ MEMORY_NEIGHBOUR_WEIGHT: '-1' }))).toThrow(/MEMORY_NEIGHBOUR_WEIGHT/);
    expect(() => loadConfig(testEnv({ MEMORY_QUESTION_PENALTY: 'lots' }))).toThrow(/MEMORY_QUESTION_PENALTY/);
    expect(loadConfig(testEnv({})).memory.fusion.questionPenalty).toBe(0.5);
    expect(loadConfig(testEnv({ MEMORY_QUESTION_PENALTY: '0' })).memory.fusion.questionPenalty).toBe(0);
    const c = loadConfig(testEnv({ EMBEDDINGS_PROVIDER: 'sentence-encoder' }));
    expect(c.memory.embeddings).toMatchObject({
      provider: 'sentence-encoder',
      model: 'universal-sentence-encoder-lite',
      dimensions: 512,
    });
    expect(c.memory.fusion).toEqual({
      vectorWeight: 2,
      localVectorWeight: 0.5,
      neighbourWeight: 0.5,
      timeBoost: 0.5,
      questionPenalty: 0.5,
    });
    expect(embeddingProviderOf(ctx).provider).toBe('local');
  });
});
