/**
 * Analytics — security: authentication, roles (`pro`+ for /analytics/*, `admin` for system and
 * endpoints, users only), and scoping (no other user's data; all-users numbers only for services
 * the caller owns; realtime counters per account).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setServiceStatus } from '../../../src/modules/registry/service.js';
import { agentToken, createAgent } from '../../helpers/agents.js';
import { call, createUser, setupApp, type TestUser } from '../../helpers/app.js';
import { describeAuthCases } from '../../helpers/auth-cases.js';
import { startJsonApi, type Upstream } from '../../helpers/upstreams.js';
import { letters, register, run, session, subscribe, type Svc } from '../search/fixtures.js';

const { app, ctx } = await setupApp();
const PRO = [
  '/analytics/user',
  '/analytics/services',
  '/analytics/tools',
  '/analytics/sessions',
  '/analytics/realtime',
];
const ADMIN = ['/analytics/system', '/analytics/endpoints'];
const SCHEMA = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };

let api: Upstream;
let ownerA: TestUser;
let ownerB: TestUser;
let svcA: Svc;
let draftB: Svc;

beforeAll(async () => {
  api = await startJsonApi();
  ownerA = await createUser(app, { roles: ['pro'] });
  ownerB = await createUser(app, { roles: ['pro'] });
  const r = letters(5);
  svcA = await register(app, ownerA, {
    name: `sec-a-${r}`,
    description: 'A',
    base_url: api.url,
    tools: [{ name: 'get_weather', description: 'w', method: 'GET', path: '/weather', input_schema: SCHEMA }],
  });
  draftB = await register(app, ownerB, {
    name: `sec-b-${r}`,
    description: 'B',
    base_url: api.url,
    tools: [{ name: 'secret', description: 's', method: 'GET', path: '/weather', input_schema: SCHEMA }],
  });
  await setServiceStatus(ctx, svcA.id, 'published');
  await run(app, ownerB, await session(app, ownerB), draftB.name, 'secret', { city: 'Oslo' }, 2);
});
afterAll(async () => api?.close());

const status = async (headers: Record<string, string>, url: string) =>
  (await app.inject({ method: 'GET', url, headers })).statusCode;

describeAuthCases(
  'analytics /analytics/* (pro)',
  () => app,
  () => PRO.map((url) => ({ method: 'GET', url })),
  { minRole: 'pro' },
);
describeAuthCases(
  'analytics system and endpoints (admin)',
  () => app,
  () => ADMIN.map((url) => ({ method: 'GET', url })),
  { minRole: 'admin' },
);

describe('analytics — authentication and roles', () => {
  it('admits pro and enterprise to the user-level views but not to system and endpoints', async () => {
    for (const role of ['pro', 'enterprise']) {
      const u = await createUser(app, { roles: [role] });
      for (const url of PRO) expect(await status(u.headers, url), `${role} ${url}`).toBe(200);
      for (const url of ADMIN) expect(await status(u.headers, url), `${role} ${url}`).toBe(403);
      expect(await status(u.headers, '/analytics/realtime?scope=system')).toBe(403);
    }
  });

  it('admits admin everywhere', async () => {
    const admin = await createUser(app, { roles: ['admin'] });
    for (const url of [...PRO, ...ADMIN, '/analytics/realtime?scope=system'])
      expect(await status(admin.headers, url), url).toBe(200);
  });

  it('refuses agent tokens, even of a pro owner', async () => {
    const { headers } = await agentToken(app, await createAgent(app, ownerA));
    for (const url of [...PRO, ...ADMIN]) {
      const res = await app.inject({ method: 'GET', url, headers });
      expect(res.statusCode, url).toBe(403);
      expect(res.json().code).toBe('forbidden');
    }
  });
});

describe('analytics — scoping', () => {
  it("never shows another user's calls, sessions or services", async () => {
    const carol = await createUser(app, { roles: ['pro'] });
    const body = (await call(app, { method: 'GET', url: '/analytics/user', headers: carol.headers }, 200)).body;
    expect(body.totals.calls).toBe(0);
    expect(body.top_tools).toEqual([]);
    expect(body.sessions.total).toBe(0);
    const services = (await call(app, { method: 'GET', url: '/analytics/services', headers: carol.headers }, 200)).body;
    expect(services.data).toEqual([]);
    const tools = (await call(app, { method: 'GET', url: '/analytics/tools?scope=owned', headers: carol.headers }, 200))
      .body;
    expect(tools.data).toEqual([]);
  });

  it("gives all-users numbers only for owned services; another owner's draft is not found", async () => {
    const dave = await createUser(app, { roles: ['pro'] });
    await subscribe(app, dave, svcA.id);
    await run(app, dave, await session(app, dave), svcA.name, 'get_weather', { city: 'Oslo' });
    // ownerB uses svcA too: dave must not see ownerB's call in any number.
    await subscribe(app, ownerB, svcA.id);
    await run(app, ownerB, await session(app, ownerB), svcA.name, 'get_weather', { city: 'Oslo' }, 3);
    const detail = (
      await call(app, { method: 'GET', url: `/analytics/services?service_id=${svcA.id}`, headers: dave.headers }, 200)
    ).body.data[0];
    expect(detail).toMatchObject({ owned: false, usage: null, my_usage: { calls: 1 } });
    expect(detail.by_day.at(-1).calls).toBe(1);
    expect(detail.tools).toEqual([expect.objectContaining({ tool_name: 'get_weather', calls: 1 })]);
    expect(detail.tools[0].unique_users).toBeUndefined();
    const asOwner = (
      await call(app, { method: 'GET', url: `/analytics/services?service_id=${svcA.id}`, headers: ownerA.headers }, 200)
    ).body.data[0];
    expect(asOwner.usage).toMatchObject({ calls: 4, unique_users: 2 });

    for (const url of [
      `/analytics/services?service_id=${draftB.id}`,
      `/analytics/tools?scope=owned&service_id=${draftB.id}`,
    ]) {
      const res = await app.inject({ method: 'GET', url, headers: dave.headers });
      expect(res.statusCode, url).toBe(404);
    }
  });

  it('keeps realtime counters per account', async () => {
    const erin = await createUser(app, { roles: ['pro'] });
    const frank = await createUser(app, { roles: ['pro'] });
    const before = (await call(app, { method: 'GET', url: '/analytics/realtime', headers: erin.headers }, 200)).body
      .last_1m.requests;
    for (let i = 0; i < 5; i++) await app.inject({ method: 'GET', url: '/v1/auth/me', headers: frank.headers });
    const after = (await call(app, { method: 'GET', url: '/analytics/realtime', headers: erin.headers }, 200)).body
      .last_1m.requests;
    expect(after - before).toBe(1); // only erin's own first realtime call
  });
});
