/**
 * Search — happy paths: typo-tolerant tool search with highlights, popularity blended into the
 * ranking, popular tools ordered by executions, personalised recommendations (excluding what the
 * caller has, each with a reason), autocomplete, universal search over services, tools and the
 * caller's own memories and sessions; agents may search too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentToken, createAgent } from '../../helpers/agents.js';
import { call, createUser, setupApp, type TestUser } from '../../helpers/app.js';
import { startJsonApi, type Upstream } from '../../helpers/upstreams.js';
import { buildCatalog, run, session, subscribe, type Catalog } from './fixtures.js';

const { app, ctx } = await setupApp({ SEARCH_POPULARITY_CACHE_MS: '0' });
let api: Upstream;
let owner: TestUser;
let cat: Catalog;

beforeAll(async () => {
  api = await startJsonApi();
  owner = await createUser(app);
  cat = await buildCatalog(app, ctx, owner, api);
});
afterAll(async () => api?.close());

const get = async (user: { headers: Record<string, string> }, url: string) =>
  (await call(app, { method: 'GET', url, headers: user.headers }, 200)).body;

describe('search — tools', () => {
  it('finds a tool despite a typo, with the match highlighted', async () => {
    const u = await createUser(app);
    const typo = cat.word.replace('phy', 'fy'); // zephyr… → zefyr…
    const body = await get(u, `/search/tools?q=${encodeURIComponent(`get ${typo}`)}`);
    expect(body.fuzzy).toBe(true);
    expect(body.data[0]).toMatchObject({ name: `get_${cat.word}`, service: { id: cat.weather.id, owned: false } });
    const hl = body.data[0].highlights.find((h: { field: string }) => h.field === 'name');
    expect(hl.snippet).toBe(`<mark>get</mark>_<mark>${cat.word}</mark>`);
    expect(body.data.some((t: { name: string }) => t.name === `hidden_${cat.word}`)).toBe(false);
  });

  it('ranks a name match above a description-only match, and filters by category, tag and service', async () => {
    const u = await createUser(app);
    const body = await get(u, `/search/tools?q=forecast&category=${cat.category}`);
    expect(body.data.map((t: { name: string }) => t.name)).toEqual([`${cat.word}_forecast`]);
    const byWord = await get(u, `/search/tools?q=${cat.word}&service=${cat.weather.name}`);
    // get_<word> and <word>_forecast carry the word in their names; broken matches through its service's name only.
    expect(
      byWord.data
        .slice(0, 2)
        .map((t: { name: string }) => t.name)
        .sort(),
    ).toEqual([`${cat.word}_forecast`, `get_${cat.word}`].sort());
    expect(byWord.data[2]).toMatchObject({ name: 'broken', match: 'text' });
    expect(byWord.data[2].text_score).toBeLessThan(byWord.data[1].text_score);
    const tagged = await get(u, `/search/tools?tag=${cat.tag}`);
    expect(new Set(tagged.data.map((t: { service: { id: string } }) => t.service.id))).toEqual(
      new Set([cat.weather.id, cat.tagged.id]),
    );
    expect(tagged.data.every((t: { match: string }) => t.match === 'filter')).toBe(true);
  });

  it('blends popularity into the ranking of equally relevant tools', async () => {
    const u = await createUser(app);
    const q = `/search/tools?q=pet&category=${cat.otherCategory}`;
    const before = await get(u, q);
    expect(before.data.map((t: { name: string }) => t.name).sort()).toEqual(['adopt_pet', 'list_pets']);
    await subscribe(app, u, cat.pets.id);
    const s = await session(app, u);
    await run(app, u, s, cat.pets.name, 'adopt_pet', { id: '1' }, 3);
    await run(app, u, s, cat.pets.name, 'list_pets', { id: '1' }, 1);
    const after = await get(u, q);
    expect(after.data.map((t: { name: string }) => t.name)).toEqual(['adopt_pet', 'list_pets']);
    expect(after.data[0].popularity.calls).toBe(3);
    expect(after.data[0].score).toBeGreaterThan(after.data[1].score);
  });

  it('pages with a cursor and shows owners their own unpublished tools', async () => {
    const page1 = await get(owner, `/search/tools?category=${cat.category}&limit=2`);
    expect(page1.data).toHaveLength(2);
    expect(page1.next_cursor).toBeTruthy();
    const page2 = await get(owner, `/search/tools?category=${cat.category}&limit=2&cursor=${page1.next_cursor}`);
    const all = [...page1.data, ...page2.data].map((t: { name: string }) => t.name);
    expect(new Set(all).size).toBe(all.length);
    expect(page1.found).toBe(6); // weather ×3, climate, radar, owner's draft
    expect(all).toContain(`hidden_${cat.word}`);
    const draftHit = [...page1.data, ...page2.data].find((t: { name: string }) => t.name === `hidden_${cat.word}`);
    expect(draftHit.service).toMatchObject({ owned: true, status: 'draft' });
  });

  it('lets an agent search', async () => {
    const agent = await createAgent(app, await createUser(app));
    const { headers } = await agentToken(app, agent);
    const body = await get({ headers }, `/search/tools?q=${cat.word}_forecast`);
    expect(body.data[0].name).toBe(`${cat.word}_forecast`);
  });
});

describe('search — popular and recommendations', () => {
  it('orders popular tools by executions and keeps only published services', async () => {
    const u = await createUser(app);
    for (const s of [cat.weather, cat.climate]) await subscribe(app, u, s.id);
    const s = await session(app, u);
    await run(app, u, s, cat.weather.name, `get_${cat.word}`, { city: 'Oslo' }, 3);
    await run(app, u, s, cat.climate.name, 'climate_normals', { city: 'Oslo' }, 2);
    await run(app, u, s, cat.weather.name, `${cat.word}_forecast`, { city: 'Oslo' }, 1);
    // The owner executes its own draft: never "popular".
    const os = await session(app, owner);
    await run(app, owner, os, cat.draft.name, `hidden_${cat.word}`, { city: 'Oslo' }, 5);
    const body = await get(u, `/search/popular?window=7d&category=${cat.category}`);
    expect(body.data.map((p: { tool: { name: string } }) => p.tool.name)).toEqual([
      `get_${cat.word}`,
      'climate_normals',
      `${cat.word}_forecast`,
    ]);
    expect(body.data[0]).toMatchObject({
      rank: 1,
      calls: 3,
      successes: 3,
      failures: 0,
      success_rate: 1,
      service: { id: cat.weather.id },
    });
    expect(body.window).toBe('7d');
  });

  it('recommends similar and co-used services with a reason, excluding what the user has', async () => {
    const u = await createUser(app);
    const peer = await createUser(app);
    await subscribe(app, u, cat.weather.id);
    await run(app, u, await session(app, u), cat.weather.name, `get_${cat.word}`, { city: 'Oslo' });
    for (const s of [cat.weather, cat.finance]) await subscribe(app, peer, s.id);
    const ps = await session(app, peer);
    await run(app, peer, ps, cat.weather.name, `get_${cat.word}`, { city: 'Bergen' });
    await run(app, peer, ps, cat.finance.name, 'stock_quote', { id: 'ACME' });

    const body = await get(u, '/search/recommendations?limit=50');
    expect(body.personalized).toBe(true);
    const byId = new Map(body.data.map((r: { service: { id: string } }) => [r.service.id, r]));
    expect(byId.has(cat.weather.id)).toBe(false);
    expect(byId.has(cat.draft.id)).toBe(false);
    expect(byId.get(cat.radar.id)).toMatchObject({
      reason: 'similar_category',
      reason_detail: `In ${cat.category}, like ${cat.word} Weather`,
    });
    expect(byId.get(cat.tagged.id)).toMatchObject({ reason: 'shared_tags' });
    expect(byId.get(cat.finance.id)).toMatchObject({
      reason: 'co_usage',
      top_tools: [{ id: cat.finance.tools.stock_quote, name: 'stock_quote' }],
    });
    const order = body.data.map((r: { service: { id: string } }) => r.service.id);
    expect(order.indexOf(cat.finance.id)).toBeLessThan(order.indexOf(cat.tagged.id));
  });

  it('falls back to popular services on cold start and never recommends the caller’s own services', async () => {
    const fresh = await createUser(app);
    const body = await get(fresh, '/search/recommendations?limit=50');
    expect(body.personalized).toBe(false);
    expect(body.data.length).toBeGreaterThan(0);
    expect(body.data.every((r: { reason: string }) => r.reason === 'popular' || r.reason === 'new')).toBe(true);
    const mine = await get(owner, '/search/recommendations?limit=50');
    const ownIds = new Set(
      [cat.weather, cat.climate, cat.radar, cat.tagged, cat.finance, cat.pets, cat.draft].map((s) => s.id),
    );
    expect(mine.data.some((r: { service: { id: string } }) => ownIds.has(r.service.id))).toBe(false);
  });
});

describe('search — suggestions and universal search', () => {
  it('completes service names, tool names, tags and categories from a prefix', async () => {
    const u = await createUser(app);
    const body = await get(u, `/search/suggestions?q=${cat.word.slice(0, 9)}`);
    expect(body.data.length).toBeLessThanOrEqual(8);
    const texts = body.data.map((s: { type: string; text: string }) => `${s.type}:${s.text}`);
    expect(texts).toContain(`service:${cat.weather.name}`);
    expect(texts).toContain(`tool:${cat.word}_forecast`);
    expect(texts).toContain(`tool:get_${cat.word}`); // a later word of the name
    expect(texts.some((t: string) => t.includes('hidden_'))).toBe(false);
    const svc = body.data.find((s: { type: string }) => s.type === 'service');
    expect(svc).toMatchObject({ id: cat.weather.id, display: `${cat.word} Weather` });
    expect(svc.highlight).toBe(`<mark>${cat.word.slice(0, 9)}</mark>${cat.word.slice(9)}-weather`);
    const tags = await get(u, `/search/suggestions?q=tag-${cat.run}`);
    expect(tags.data).toEqual([expect.objectContaining({ type: 'tag', text: cat.tag, count: 2 })]);
    const cats = await get(u, `/search/suggestions?q=cat-${cat.run}&limit=1`);
    expect(cats.data).toEqual([expect.objectContaining({ type: 'category', text: cat.category })]);
  });

  it('groups services, tools, the caller’s memories and sessions', async () => {
    const u = await createUser(app);
    const other = await createUser(app);
    const note = `Remember the ${cat.word} readings are in Celsius`;
    const { body: mem } = await call(
      app,
      { method: 'POST', url: '/memory', headers: u.headers, payload: { content: note } },
      201,
    );
    await call(
      app,
      { method: 'POST', url: '/memory', headers: other.headers, payload: { content: `Other user's ${cat.word} note` } },
      201,
    );
    const sid = await session(app, u, `${cat.word} research`);
    await session(app, other, `${cat.word} secret`);

    const body = await get(u, `/search?q=${cat.word}&limit=10`);
    expect(body.results.services.data.map((s: { id: string }) => s.id)).toContain(cat.weather.id);
    expect(body.results.services.data.every((s: { id: string }) => s.id !== cat.draft.id)).toBe(true);
    expect(body.results.tools.data[0].type).toBe('tool');
    expect(body.results.memories.data.map((m: { id: string }) => m.id)).toEqual([mem.id]);
    expect(body.results.memories.data[0].highlights[0].snippet).toContain(`<mark>${cat.word}</mark>`);
    expect(body.results.sessions.data).toEqual([
      expect.objectContaining({ type: 'session', id: sid, name: `${cat.word} research` }),
    ]);

    const only = await get(u, `/search?q=${cat.word}&type=memory,session`);
    expect(Object.keys(only.results).sort()).toEqual(['memories', 'sessions']);
  });
});
