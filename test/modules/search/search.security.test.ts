/**
 * Search — security: authentication on every route, other accounts' unpublished services never
 * leak (search, universal search, suggestions, popular, recommendations), memories and sessions
 * are the caller's own (agents see their own only), highlights are HTML-escaped.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentToken, createAgent } from '../../helpers/agents.js';
import { call, createUser, setupApp, type TestUser } from '../../helpers/app.js';
import { describeAuthCases } from '../../helpers/auth-cases.js';
import { startJsonApi, type Upstream } from '../../helpers/upstreams.js';
import { setServiceStatus } from '../../../src/modules/registry/service.js';
import { letters, register, run, session, subscribe, type Svc } from './fixtures.js';

const { app, ctx } = await setupApp({ SEARCH_POPULARITY_CACHE_MS: '0' });
let api: Upstream;
let owner: TestUser;
let word: string;
let pub: Svc;
let draft: Svc;

const ROUTES = [
  '/search?q=x',
  '/search/tools?q=x',
  '/search/popular',
  '/search/recommendations',
  '/search/suggestions?q=x',
];
const SCHEMA = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };

beforeAll(async () => {
  api = await startJsonApi();
  owner = await createUser(app);
  word = `quasar${letters(5)}`;
  const common = { base_url: api.url, auth: { type: 'none' }, category: `sec-${word}`, tags: [`t-${word}`] };
  pub = await register(app, owner, {
    ...common,
    name: `${word}-public`,
    display_name: `${word} Public`,
    description: `Public ${word} API <img src=x onerror=alert(1)>`,
    tools: [
      {
        name: `public_${word}`,
        description: `Reads ${word} <b>data</b>`,
        method: 'GET',
        path: '/weather',
        input_schema: SCHEMA,
      },
    ],
  });
  draft = await register(app, owner, {
    ...common,
    name: `${word}-draft`,
    display_name: `${word} Draft`,
    description: `Secret ${word} API`,
    tools: [
      {
        name: `secret_${word}`,
        description: `Secret ${word} tool`,
        method: 'GET',
        path: '/weather',
        input_schema: SCHEMA,
      },
    ],
  });
  await setServiceStatus(ctx, pub.id, 'published');
  // The owner uses its draft a lot: it must still never show up for anyone else.
  await run(app, owner, await session(app, owner), draft.name, `secret_${word}`, { city: 'Oslo' }, 4);
});
afterAll(async () => api?.close());

describeAuthCases(
  'search',
  () => app,
  () => ROUTES.map((url) => ({ method: 'GET', url })),
);

describe('search — visibility', () => {
  it("never shows another account's unpublished service or its tools", async () => {
    const stranger = await createUser(app);
    // Everything but the echoed query text.
    const get = async (url: string) => {
      const { query: _q, ...rest } = (await call(app, { method: 'GET', url, headers: stranger.headers }, 200)).body;
      return JSON.stringify(rest);
    };
    const bodies = [
      await get(`/search/tools?q=${word}&limit=100`),
      await get(`/search/tools?q=secret_${word}`),
      await get(`/search/tools?category=sec-${word}&limit=100`),
      await get(`/search?q=${word}&limit=20`),
      await get(`/search/suggestions?q=${word}&limit=10`),
      await get(`/search/suggestions?q=secret_${word.slice(0, 8)}`),
      await get(`/search/popular?window=24h&limit=50&category=sec-${word}`),
      await get('/search/recommendations?limit=50'),
    ];
    for (const b of bodies) {
      expect(b).not.toContain(draft.id);
      expect(b).not.toContain(`secret_${word}`);
    }
    expect(bodies[0]).toContain(pub.id);
  });

  it('drops a service from search once it is unpublished', async () => {
    const svc = await register(app, owner, {
      base_url: api.url,
      name: `${word}-gone`,
      display_name: `${word} Gone`,
      description: 'soon gone',
      tools: [
        { name: `gone_${word}`, description: 'soon gone', method: 'GET', path: '/weather', input_schema: SCHEMA },
      ],
    });
    await setServiceStatus(ctx, svc.id, 'published');
    const stranger = await createUser(app);
    await subscribe(app, stranger, svc.id);
    await run(app, stranger, await session(app, stranger), svc.name, `gone_${word}`, { city: 'Oslo' });
    const q = `/search/tools?q=gone_${word}`;
    const ids = async () =>
      (await call(app, { method: 'GET', url: q, headers: stranger.headers }, 200)).body.data.map(
        (t: { service: { id: string } }) => t.service.id,
      );
    expect(await ids()).toContain(svc.id);
    await call(app, { method: 'POST', url: `/v1/services/${svc.id}/unpublish`, headers: owner.headers }, 200);
    expect(await ids()).not.toContain(svc.id);
    const popular = (
      await call(app, { method: 'GET', url: '/search/popular?window=24h&limit=50', headers: stranger.headers }, 200)
    ).body;
    expect(JSON.stringify(popular)).not.toContain(svc.id);
  });

  it('escapes HTML in highlights', async () => {
    const stranger = await createUser(app);
    const { body } = await call(
      app,
      { method: 'GET', url: `/search?q=${word}&type=service`, headers: stranger.headers },
      200,
    );
    const hl = body.results.services.data[0].highlights.find((h: { field: string }) => h.field === 'description');
    expect(hl.snippet).toBe(`Public <mark>${word}</mark> API &lt;img src=x onerror=alert(1)&gt;`);
    const tools = (await call(app, { method: 'GET', url: `/search/tools?q=${word}`, headers: stranger.headers }, 200))
      .body;
    const desc = tools.data[0].highlights.find((h: { field: string }) => h.field === 'description');
    expect(desc.snippet).toBe(`Reads <mark>${word}</mark> &lt;b&gt;data&lt;/b&gt;`);
  });
});

describe('search — own memories and sessions only', () => {
  it("keeps other users' and other agents' memories and sessions out of universal search", async () => {
    const alice = await createUser(app);
    const bob = await createUser(app);
    const secret = `nebula${letters(6)}`;
    await call(
      app,
      { method: 'POST', url: '/memory', headers: alice.headers, payload: { content: `alice knows ${secret}` } },
      201,
    );
    await call(
      app,
      { method: 'POST', url: '/v1/agents', headers: alice.headers, payload: { name: `${secret} plans` } },
      201,
    );
    const bobView = (
      await call(app, { method: 'GET', url: `/search?q=${secret}&type=memory,session`, headers: bob.headers }, 200)
    ).body;
    expect(bobView.results.memories.data).toEqual([]);
    expect(bobView.results.sessions.data).toEqual([]);

    // Alice's agent acts for Alice's account but sees only its own memories and sessions.
    const agent = await createAgent(app, alice);
    const { headers } = await agentToken(app, agent);
    const agentView = (await call(app, { method: 'GET', url: `/search?q=${secret}&type=memory,session`, headers }, 200))
      .body;
    expect(agentView.results.memories.data).toEqual([]);
    expect(agentView.results.sessions.data).toEqual([]);
    await call(app, { method: 'POST', url: '/memory', headers, payload: { content: `agent notes on ${secret}` } }, 201);
    const agentSession = (
      await call(app, { method: 'POST', url: '/v1/agents', headers, payload: { name: `${secret} agent run` } }, 201)
    ).body.id;
    const after = (await call(app, { method: 'GET', url: `/search?q=${secret}&type=memory,session`, headers }, 200))
      .body;
    expect(after.results.memories.data.map((m: { content: string }) => m.content)).toEqual([
      `agent notes on ${secret}`,
    ]);
    expect(after.results.sessions.data.map((s: { id: string }) => s.id)).toEqual([agentSession]);
    // Alice (the account) sees both her own and her agent's.
    const aliceView = (
      await call(app, { method: 'GET', url: `/search?q=${secret}&type=memory`, headers: alice.headers }, 200)
    ).body;
    expect(aliceView.results.memories.data).toHaveLength(2);
  });
});
