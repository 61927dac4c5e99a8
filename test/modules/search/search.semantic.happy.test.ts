/**
 * The semantic arm of tool search (issue 19 §1, SEARCH_SEMANTIC=on): tool vectors are computed once
 * per text and stored, a plain question finds a tool it shares no word with, the issue's
 * "temperature in a city" ranks get_forecast first, another account's unpublished tool never
 * comes back through the vectors, and an encoder failure leaves full-text search answering.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { execRows } from '../../../src/db/client.js';
import { fuseRanks, RRF_K, refreshToolVectors, toolEmbeddingText } from '../../../src/modules/search/semantic.js';
import { searchStateOf } from '../../../src/modules/search/state.js';
import type { SentenceEncoder } from '../../../src/lib/sentence-encoder.js';
import { call, createUser, setupApp, type TestUser } from '../../helpers/app.js';
import { categoryService, letters } from './fixtures.js';

const { app, ctx } = await setupApp({ SEARCH_SEMANTIC: 'on' });

const OBJ = { type: 'object' };
const SLOW = 180_000;

async function search(user: TestUser, q: string, extra = '') {
  return (
    await call(
      app,
      { method: 'GET', url: `/search/tools?q=${encodeURIComponent(q)}${extra}`, headers: user.headers },
      200,
    )
  ).body;
}

/** A published service in its own category (so rankings are read within this run's tools). */
const service = (owner: TestUser, tools: Array<{ name: string; description: string }>, publish = true) =>
  categoryService(app, ctx, owner, {
    prefix: 'sem',
    description: 'A service of the semantic search tests',
    tools,
    publish,
  });

/** Run `fn` with the app's encoder's `embed` replaced by `embed(texts, real)`; the real encoder is restored after. */
async function withEmbed<T>(
  embed: (texts: string[], real: SentenceEncoder) => Promise<Float32Array[]>,
  fn: () => Promise<T>,
): Promise<T> {
  const state = searchStateOf(ctx);
  const real = state.encoder!;
  state.encoder = { ...real, embed: (texts: string[]) => embed(texts, real) } as SentenceEncoder;
  try {
    return await fn();
  } finally {
    state.encoder = real;
  }
}

const vectorRows = async (ids: string[]) =>
  execRows<{ tool_id: string; source_hash: string }>(
    ctx.db,
    sql`select tool_id, source_hash from tool_vectors where tool_id in (${sql.join(
      ids.map((i) => sql`${i}`),
      sql`, `,
    )})`,
  );

describe('search — semantic arm', () => {
  it('embeds the name split into words and the description summary', () => {
    expect(toolEmbeddingText({ name: 'issues_create-commentFor', description: 'Create a comment\n\nLong text' })).toBe(
      'issues create comment for. Create a comment',
    );
    expect(toolEmbeddingText({ name: 'echo', description: '' })).toBe('echo');
  });

  it('fuses rankings by weighted reciprocal rank', () => {
    const fused = fuseRanks([
      { ids: ['a', 'b'], weight: 1 },
      { ids: ['b', 'c'], weight: 2 },
    ]);
    expect(fused.get('a')).toBeCloseTo(1 / (RRF_K + 1));
    expect(fused.get('b')).toBeCloseTo(1 / (RRF_K + 2) + 2 / (RRF_K + 1));
    expect(fused.get('c')).toBeCloseTo(2 / (RRF_K + 2));
  });

  it(
    'stores one vector per tool, embeds an unchanged text once and a changed one again',
    async () => {
      const owner = await createUser(app);
      const tools = [
        {
          name: 'convert_currency',
          description: 'Convert an amount of money between currencies at the current exchange rate',
        },
        { name: 'plain_text', description: 'Answer in plain text instead of JSON' },
      ];
      const svc = await service(owner, tools);
      await refreshToolVectors(ctx);
      const byName = async (ids: Record<string, string>) => {
        const rows = await vectorRows(Object.values(ids));
        return Object.fromEntries(
          Object.entries(ids).map(([name, id]) => [name, rows.find((r) => r.tool_id === id)?.source_hash]),
        );
      };
      const first = await byName(svc.tools);
      expect(Object.values(first).every(Boolean)).toBe(true);
      const state = searchStateOf(ctx);
      const real = state.encoder!;
      // Texts embedded, restricted to this service's (other test files may add tools to a shared database meanwhile).
      const ours = (t: { name: string; description: string }) => toolEmbeddingText(t);
      // A new text per run: a text already stored (an earlier run on the same database) is reused, not embedded.
      const changed = `Reply with unformatted text, ${letters(8)}`;
      const watched = new Set([...tools.map(ours), ours({ name: 'plain_text', description: changed })]);
      let embedded = 0;
      state.encoder = {
        ...real,
        embed: (texts: string[]) => ((embedded += texts.filter((t) => watched.has(t)).length), real.embed(texts)),
      } as SentenceEncoder;
      let after: Record<string, string>;
      try {
        await refreshToolVectors(ctx);
        expect(embedded).toBe(0);
        const patched = tools.map((t, i) => ({
          ...t,
          method: 'GET',
          path: `/t${i}`,
          input_schema: OBJ,
          ...(t.name === 'plain_text' ? { description: changed } : {}),
        }));
        const { body } = await call(
          app,
          { method: 'PATCH', url: `/owner/services/${svc.id}`, headers: owner.headers, payload: { tools: patched } },
          200,
        );
        after = Object.fromEntries(body.tools.map((t: { name: string; id: string }) => [t.name, t.id]));
        await refreshToolVectors(ctx);
        expect(embedded).toBe(1);
      } finally {
        state.encoder = real;
      }
      const second = await byName(after);
      expect(second.convert_currency).toBe(first.convert_currency);
      expect(second.plain_text).toBeTruthy();
      expect(second.plain_text).not.toBe(first.plain_text);
    },
    SLOW,
  );

  it(
    'finds a tool for a plain question that shares no word with it, and ranks get_forecast first for "temperature in a city"',
    async () => {
      const owner = await createUser(app);
      const svc = await service(owner, [
        { name: 'get_forecast', description: 'Forecast for a city: temperature, wind and rain for the next days' },
        { name: 'echo', description: 'Echo the request back' },
        { name: 'plain_text', description: 'Answer in plain text instead of JSON' },
        {
          name: 'convert_currency',
          description: 'Convert an amount of money between currencies at the current exchange rate',
        },
      ]);
      await refreshToolVectors(ctx);
      const u = await createUser(app);
      const euros = await search(u, 'how many euros is 100 dollars', `&category=${svc.category}`);
      expect(euros.data[0]).toMatchObject({ name: 'convert_currency', match: 'semantic', text_score: 0 });
      const weather = await search(u, 'temperature in a city', `&category=${svc.category}`);
      expect(weather.data[0].name).toBe('get_forecast');
      expect(weather.data.findIndex((h: { name: string }) => h.name === 'get_forecast')).toBeLessThan(
        weather.data.findIndex((h: { name: string }) => h.name === 'plain_text') >>> 0,
      );
    },
    SLOW,
  );

  it(
    "never returns another account's unpublished tool through the vectors",
    async () => {
      const owner = await createUser(app);
      const word = letters(8);
      const hidden = await service(
        owner,
        [
          {
            name: `secret_${word}`,
            description: 'Convert an amount of money between currencies at the current exchange rate',
          },
        ],
        false,
      );
      await refreshToolVectors(ctx);
      const other = await createUser(app);
      const seen = await search(other, 'convert money between currencies', '&limit=50');
      expect(seen.data.map((h: { service: { id: string } }) => h.service.id)).not.toContain(hidden.id);
      const mine = await search(owner, 'convert money between currencies', `&service=${hidden.id}`);
      expect(mine.data[0]).toMatchObject({ name: `secret_${word}`, service: { owned: true } });
    },
    SLOW,
  );

  it(
    'embeds a repeated query once (white space aside)',
    async () => {
      const owner = await createUser(app);
      const svc = await service(owner, [
        { name: 'get_forecast', description: 'Forecast for a city: temperature, wind and rain' },
      ]);
      await refreshToolVectors(ctx);
      const q = `rain tomorrow in ${letters(6)}`;
      const asked: string[] = [];
      const u = await createUser(app);
      const [first, again] = await withEmbed(
        (texts, real) => (asked.push(...texts), real.embed(texts)),
        async () => [
          await search(u, q, `&category=${svc.category}`),
          await search(u, `  ${q.replace(/ /g, '   ')} `, `&category=${svc.category}`),
        ],
      );
      expect(asked).toEqual([q]);
      expect(again.data.map((h: { id: string }) => h.id)).toEqual(first.data.map((h: { id: string }) => h.id));
    },
    SLOW,
  );

  it(
    'answers from full text alone when the encoder fails',
    async () => {
      const owner = await createUser(app);
      const svc = await service(owner, [{ name: 'get_forecast', description: 'Forecast for a city' }]);
      await refreshToolVectors(ctx);
      const u = await createUser(app);
      const body = await withEmbed(
        () => Promise.reject(new Error('model gone')),
        () => search(u, 'forecast', `&category=${svc.category}`),
      );
      expect(body.data).toHaveLength(1);
      expect(body.data[0]).toMatchObject({ name: 'get_forecast', match: 'text' });
    },
    SLOW,
  );
});
