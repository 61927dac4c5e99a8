/**
 * Tool search that forgives typos and understands plain questions (issue 19 §1): the cases of the
 * issue on a published weather service (get_forecast, echo, plain_text), the typo budget (1 from 4
 * letters, 2 from 8, a transposition is one), stop words, and what corrections may never reveal
 * (words of another account's unpublished service). SEARCH_QUERY_REWRITE=off keeps the literal
 * search, as before.
 */
import { describe, expect, it } from 'vitest';
import { call, createUser, setupApp, type TestUser } from '../../helpers/app.js';
import { categoryService, letters, register } from './fixtures.js';

const { app, ctx } = await setupApp();
const literal = await setupApp({ SEARCH_QUERY_REWRITE: 'off' });

type Hit = { name: string; service: { id: string }; match: string };

const SCHEMA_CITY = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };

/** A published weather service (unique name per run) with the tools. */
async function weatherService(a: typeof app, c: typeof ctx, owner: TestUser) {
  return categoryService(a, c, owner, {
    prefix: 'weather',
    description: 'Forecasts from a public weather model',
    tools: [
      {
        name: 'get_forecast',
        description: 'Forecast for a city: temperature, wind and rain for the next days',
        method: 'GET',
        path: '/f',
        input_schema: SCHEMA_CITY,
      },
      {
        name: 'echo',
        description: 'Echo the request back',
        method: 'POST',
        path: '/echo',
        input_schema: { type: 'object' },
      },
      {
        name: 'plain_text',
        description: 'Answer in plain text instead of JSON',
        method: 'GET',
        path: '/text',
        input_schema: { type: 'object' },
      },
    ],
  });
}

async function search(a: typeof app, user: TestUser, q: string, extra = '') {
  return (
    await call(
      a,
      { method: 'GET', url: `/search/tools?q=${encodeURIComponent(q)}${extra}`, headers: user.headers },
      200,
    )
  ).body;
}

/** Names of the hits of one service, in rank order. */
const namesIn = (body: { data: Hit[] }, serviceId: string) =>
  body.data.filter((h) => h.service.id === serviceId).map((h) => h.name);

describe('search — typos and plain language', () => {
  it('finds get_forecast for "wether forcast" (a typo in each word)', async () => {
    const owner = await createUser(app);
    const svc = await weatherService(app, ctx, owner);
    const u = await createUser(app);
    const body = await search(app, u, 'wether forcast', `&category=weather-${svc.name.slice(8)}`);
    expect(body.corrected).toMatchObject({ wether: ['weather'], forcast: ['forecast'] });
    expect(body.relaxed).toBe(false);
    expect(body.data[0]).toMatchObject({ name: 'get_forecast', match: 'text' });
    // The corrected words are highlighted.
    expect(body.data[0].highlights.find((h: { field: string }) => h.field === 'name').snippet).toBe(
      'get_<mark>forecast</mark>',
    );
  });

  it('finds echo for "ecoh" (a transposition in a 4-letter word counts as one typo)', async () => {
    const owner = await createUser(app);
    const svc = await weatherService(app, ctx, owner);
    const u = await createUser(app);
    const body = await search(app, u, 'ecoh', `&service=${svc.id}`);
    expect(body.corrected).toEqual({ ecoh: ['echo'] });
    expect(body.data.map((h: Hit) => h.name)).toEqual(['echo']);
  });

  it('ranks get_forecast first for "temperature in a city" (stop words left out)', async () => {
    const owner = await createUser(app);
    const svc = await weatherService(app, ctx, owner);
    const u = await createUser(app);
    const body = await search(app, u, 'temperature in a city');
    expect(body.ignored).toEqual(['in', 'a']);
    expect(namesIn(body, svc.id)[0]).toBe('get_forecast');
  });

  it('keeps to the typo budget: none under 4 letters, one up to 7, two from 8', async () => {
    const owner = await createUser(app);
    const svc = await weatherService(app, ctx, owner);
    const u = await createUser(app);
    const only = `&service=${svc.id}`;
    expect((await search(app, u, 'ehc', only)).found).toBe(0); // 3 letters: no typo allowed
    expect((await search(app, u, 'ekoh', only)).found).toBe(0); // 4 letters, 2 typos
    expect(namesIn(await search(app, u, 'temperatrue', only), svc.id)).toEqual(['get_forecast']); // 11 letters, 1 transposition
    expect(namesIn(await search(app, u, 'tmperatrue', only), svc.id)).toEqual(['get_forecast']); // 2 typos
    expect((await search(app, u, 'tmpratrue', only)).found).toBe(0); // 3 typos
  });

  it('with SEARCH_QUERY_REWRITE=off searches the words as typed', async () => {
    const owner = await createUser(literal.app);
    const svc = await weatherService(literal.app, literal.ctx, owner);
    const u = await createUser(literal.app);
    const body = await search(literal.app, u, 'ecoh', `&service=${svc.id}`);
    expect(body).toMatchObject({ found: 0, corrected: {}, ignored: [] });
  });
});

describe('search — typo corrections and visibility', () => {
  it("never corrects towards words of another account's unpublished service", async () => {
    const owner = await createUser(app);
    const secret = `quixotic${letters(6)}`;
    await register(app, owner, {
      name: `draft-${letters(6)}`,
      description: 'Not published',
      base_url: 'http://127.0.0.1:9',
      tools: [
        {
          name: `${secret}_tool`,
          description: `The ${secret} operation`,
          method: 'GET',
          path: '/x',
          input_schema: { type: 'object' },
        },
      ],
    });
    const typo = secret.replace('xo', 'ox');
    const stranger = await createUser(app);
    expect(await search(app, stranger, typo)).toMatchObject({ found: 0, corrected: {} });
    // The owner finds the draft by its exact word.
    expect((await search(app, owner, secret)).data.map((h: Hit) => h.name)).toEqual([`${secret}_tool`]);
  });

  it('answers a query of stop words only with those words, and a query without words with browsing', async () => {
    const u = await createUser(app);
    const body = await search(app, u, 'the of');
    expect(body.ignored).toEqual([]);
    const empty = await search(app, u, '!!!');
    expect(empty).toMatchObject({ corrected: {}, ignored: [] });
  });
});
