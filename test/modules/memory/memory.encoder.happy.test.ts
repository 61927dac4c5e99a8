/**
 * The sentence-encoder embedding provider (the default since issue 21 — this app is configured as
 * `npm start` with no EMBEDDINGS_* is —, Universal Sentence Encoder Lite in a worker thread). In-memory PGlite even under TEST_DATABASE_URL: another embedding
 * space must not be mixed into the shared test database.
 */
import { describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../../helpers/app.js';

const { app, ctx } = await setupApp({ DATABASE_URL: undefined, EMBEDDINGS_PROVIDER: undefined });

describe('memory — sentence-encoder provider', () => {
  it('stores 512-d vectors and finds a paraphrase that shares no word with the memory', async () => {
    const u = await createUser(app);
    const add = async (content: string) =>
      (await call(app, { method: 'POST', url: '/memory', headers: u.headers, payload: { content } }, 201)).body;
    const pet = await add('My puppy has been sick all week; the vet gave him antibiotics.');
    await add('The quarterly tax return is due at the end of March.');
    await add('We repainted the kitchen walls a pale yellow.');
    const { body } = await call(
      app,
      {
        method: 'GET',
        url: `/memory/search?q=${encodeURIComponent('How is your dog doing?')}&mode=vector`,
        headers: u.headers,
      },
      200,
    );
    expect(body.data[0].id).toBe(pet.id);
    expect(body.data[0].similarity).toBeGreaterThan(body.data[1].similarity + 0.05);
    const { body: stats } = await call(app, { method: 'GET', url: '/memory/stats', headers: u.headers }, 200);
    expect(stats.embedding).toEqual({
      provider: 'sentence-encoder',
      model: 'universal-sentence-encoder-lite',
      dimensions: 512,
    });
    expect(ctx.config.memory.fusion.vectorWeight).toBe(2);
    expect(ctx.config.memory.embeddings.defaulted).toBe(true);
  }, 120_000);
});
