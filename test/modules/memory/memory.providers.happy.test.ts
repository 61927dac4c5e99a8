/**
 * External providers against a local fake server speaking the OpenAI wire format:
 * `/v1/embeddings` (batched) and `/v1/chat/completions` (session summaries), including their
 * failures. Runs on an in-memory PGlite even under TEST_DATABASE_URL: another embedding space must
 * not be mixed into the shared test database (start-up refuses that, see the error tests).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { dot, l2normalize, LocalHashEmbedder, openAiEndpoint } from '../../../src/modules/memory/embeddings.js';
import { execRows } from '../../../src/db/client.js';
import { flushMemoryWrites, settleMemoryEmbeddings } from '../../../src/modules/memory/runtime.js';
import { sql } from 'drizzle-orm';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { seedExecutions, seedSession, startFakeOpenAI } from './helpers.js';

const DIMS = 64;
const fake = await startFakeOpenAI(DIMS);
afterAll(() => fake.close());
const { app, ctx } = await setupApp({
  DATABASE_URL: undefined,
  EMBEDDINGS_URL: fake.url,
  EMBEDDINGS_MODEL: 'fake-embed-small',
  EMBEDDINGS_API_KEY: 'sk-test-embeddings',
  EMBEDDINGS_DIMENSIONS: String(DIMS),
  EMBEDDINGS_BATCH_SIZE: '2',
  SUMMARY_LLM_URL: `${fake.url}/v1`,
  SUMMARY_LLM_MODEL: 'fake-chat',
  SUMMARY_LLM_API_KEY: 'sk-test-chat',
});

describe('OpenAI-compatible embeddings', () => {
  it('embeds through /v1/embeddings with model, dimensions and the API key; vectors are normalised', async () => {
    const u = await createUser(app);
    fake.requests.length = 0;
    const { body: m } = await call(
      app,
      { method: 'POST', url: '/memory', headers: u.headers, payload: { content: 'Booked Hotel Aurora in Lisbon' } },
      201,
    );
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]).toMatchObject({
      path: '/v1/embeddings',
      auth: 'Bearer sk-test-embeddings',
      body: {
        model: 'fake-embed-small',
        input: ['Booked Hotel Aurora in Lisbon'],
        dimensions: DIMS,
        encoding_format: 'float',
      },
    });
    const { body: hits } = await call(
      app,
      {
        method: 'GET',
        url: `/memory/search?q=${encodeURIComponent('hotel in Lisbon')}&mode=vector`,
        headers: u.headers,
      },
      200,
    );
    expect(hits.data[0].id).toBe(m.id);
    const local = new LocalHashEmbedder(DIMS);
    // the fake scales its vectors by 3; cosine is unchanged only if the provider re-normalised them
    expect(hits.data[0].similarity).toBeCloseTo(
      dot(local.embedOne('hotel in Lisbon'), local.embedOne('Booked Hotel Aurora in Lisbon')),
      4,
    );
    const { body: stats } = await call(app, { method: 'GET', url: '/memory/stats', headers: u.headers }, 200);
    expect(stats.embedding).toEqual({ provider: 'openai', model: 'fake-embed-small', dimensions: DIMS });
  });

  it('embeds execution memories in the background in batches (EMBEDDINGS_BATCH_SIZE) and keeps their order', async () => {
    const u = await createUser(app);
    const sid = await seedSession(ctx, u.userId);
    fake.requests.length = 0;
    await seedExecutions(ctx, u.userId, sid, null, [
      { tool: 'get_forecast', args: { location: 'Oslo' }, output: { summary: 'snow' } },
      { tool: 'get_forecast', args: { location: 'Rome' }, output: { summary: 'sunny' } },
      { tool: 'get_forecast', args: { location: 'Dublin' }, output: { summary: 'rain' } },
    ]);
    await settleMemoryEmbeddings(ctx);
    const embedCalls = fake.requests.filter((r) => r.path === '/v1/embeddings');
    expect(embedCalls.every((r) => r.body.input.length <= 2)).toBe(true);
    expect(embedCalls.flatMap((r) => r.body.input)).toHaveLength(3);
    for (const city of ['Oslo', 'Rome', 'Dublin']) {
      const { body } = await call(
        app,
        {
          method: 'GET',
          url: `/memory/search?q=${encodeURIComponent(`forecast ${city}`)}&mode=vector&limit=1&kind=execution`,
          headers: u.headers,
        },
        200,
      );
      expect(body.data[0].content).toContain(`"${city}"`);
    }
  });

  it('a failing provider: explicit writes and searches answer 502; execution memories are kept and back-filled', async () => {
    const u = await createUser(app);
    const sid = await seedSession(ctx, u.userId);
    const missing = async () =>
      Number(
        (
          await execRows<{ n: string }>(
            ctx.db,
            sql`select count(*) as n from memories where user_id = ${u.userId} and embedding is null`,
          )
        )[0].n,
      );
    fake.failWith = 503;
    try {
      const { body: p } = await call(
        app,
        { method: 'POST', url: '/memory', headers: u.headers, payload: { content: 'will not be stored' } },
        502,
      );
      expect(p).toMatchObject({ code: 'upstream_error' });
      expect(p.detail).toContain('HTTP 503');
      await call(app, { method: 'GET', url: '/memory/search?q=anything', headers: u.headers }, 502);
      await seedExecutions(ctx, u.userId, sid, null, [
        { tool: 'track_package', args: { tracking_number: 'JD123456789' }, output: { status: 'held at customs' } },
      ]);
      await flushMemoryWrites(ctx);
      // stored without a vector, and it stays so while the provider fails
      await expect(settleMemoryEmbeddings(ctx)).rejects.toThrow();
      expect(await missing()).toBe(1);
    } finally {
      fake.failWith = 200;
    }
    const { body: list } = await call(app, { method: 'GET', url: '/memory?kind=all', headers: u.headers }, 200);
    expect(list.data.map((m: any) => m.source)).toEqual(['execution']);
    // full text finds it whether or not the back-fill has run yet
    const { body: txt } = await call(
      app,
      { method: 'GET', url: '/memory/search?q=customs&mode=text&kind=all', headers: u.headers },
      200,
    );
    expect(txt.data).toHaveLength(1);
    // with the provider back, the back-fill gives it its vector
    await settleMemoryEmbeddings(ctx);
    expect(await missing()).toBe(0);
    const { body: vec1 } = await call(
      app,
      { method: 'GET', url: '/memory/search?q=customs&mode=vector&kind=all', headers: u.headers },
      200,
    );
    expect(vec1.data.map((h: any) => h.id)).toContain(list.data[0].id);
  });
});

describe('chat-model session summaries', () => {
  it('summarises with the configured chat model, and falls back to extractive when it fails', async () => {
    const u = await createUser(app);
    const sid = await seedSession(ctx, u.userId, { name: 'Lisbon trip' });
    await seedExecutions(ctx, u.userId, sid, null, [
      { tool: 'search_flights', args: { destination: 'Lisbon' }, output: { flights: [{ airline: 'TAP' }] } },
      { tool: 'book_hotel', args: { city: 'Lisbon' }, output: { hotel: 'Hotel Aurora' } },
    ]);
    fake.requests.length = 0;
    const { body: s } = await call(
      app,
      { method: 'POST', url: `/memory/sessions/${sid}/summarize`, headers: u.headers },
      200,
    );
    expect(s).toMatchObject({
      generator: 'llm',
      model: 'fake-chat',
      summary: 'The agent planned a trip to Lisbon and booked a hotel.',
      key_points: ['Hotel Aurora booked', 'Flight search done'],
      execution_count: 2,
    });
    expect(s.tools_used.map((t: any) => t.tool_name).sort()).toEqual(['book_hotel', 'search_flights']);
    const chat = fake.requests.find((r) => r.path === '/v1/chat/completions')!;
    expect(chat.auth).toBe('Bearer sk-test-chat');
    expect(chat.body.model).toBe('fake-chat');
    expect(chat.body.messages[1].content).toContain('Called book_hotel on travel with city "Lisbon"');

    fake.chatAnswer = 'The session booked travel.\n- flight found\n- hotel booked';
    const { body: prose } = await call(
      app,
      { method: 'POST', url: `/memory/sessions/${sid}/summarize`, headers: u.headers },
      200,
    );
    expect(prose).toMatchObject({
      generator: 'llm',
      summary: 'The session booked travel.',
      key_points: ['flight found', 'hotel booked'],
    });

    fake.failWith = 500;
    try {
      const { body: fallback } = await call(
        app,
        { method: 'POST', url: `/memory/sessions/${sid}/summarize`, headers: u.headers },
        200,
      );
      expect(fallback).toMatchObject({ generator: 'extractive', model: null });
      expect(fallback.summary).toContain('Session "Lisbon trip" made 2 tool calls');
    } finally {
      fake.failWith = 200;
    }
  });
});

describe('embedding helpers', () => {
  it('builds endpoint URLs from a base with or without /v1', () => {
    expect(openAiEndpoint('http://h:1', 'embeddings')).toBe('http://h:1/v1/embeddings');
    expect(openAiEndpoint('http://h:1/v1/', 'embeddings')).toBe('http://h:1/v1/embeddings');
    expect(openAiEndpoint('http://h:1/api/v1/embeddings', 'embeddings')).toBe('http://h:1/api/v1/embeddings');
    expect(openAiEndpoint('http://h:1/openai', 'chat/completions')).toBe('http://h:1/openai/v1/chat/completions');
  });

  it('the local embedder is deterministic, unit-length and lexical', () => {
    const e = new LocalHashEmbedder(384);
    const a = e.embedOne('Deployed the checkout service');
    expect(Array.from(a)).toEqual(Array.from(e.embedOne('Deployed the checkout service')));
    expect(dot(a, a)).toBeCloseTo(1, 5);
    expect(dot(a, e.embedOne('deployment of the checkout services'))).toBeGreaterThan(
      dot(a, e.embedOne('weather forecast for Oslo')) + 0.2,
    );
    expect(dot(e.embedOne('!!!'), e.embedOne('!!!'))).toBeCloseTo(1, 5);
    expect(Array.from(l2normalize(new Float32Array(3)))).toEqual([0, 0, 0]);
  });
});
