/**
 * Analytics — happy paths: the caller's usage (totals, success rate, latency, daily series, top
 * tools and services, sessions), services and tools analytics (owners see all users' calls,
 * aggregated), session statistics, realtime counters that move, and the admin views (system
 * totals, per-route aggregates after the flush).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { execRows } from '../../../src/db/client.js';
import { setServiceStatus } from '../../../src/modules/registry/service.js';
import { call, createUser, setupApp, type TestUser } from '../../helpers/app.js';
import { startJsonApi, type Upstream } from '../../helpers/upstreams.js';
import { letters, register, run, session, subscribe, type Svc } from '../search/fixtures.js';

const { app, ctx } = await setupApp({ ANALYTICS_FLUSH_MS: '200' });
let api: Upstream;
let owner: TestUser;
let alice: TestUser;
let bob: TestUser;
let weather: Svc;
let quiet: Svc;
const SCHEMA = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
const today = new Date().toISOString().slice(0, 10);

beforeAll(async () => {
  api = await startJsonApi();
  owner = await createUser(app, { roles: ['pro'] });
  alice = await createUser(app, { roles: ['pro'] });
  bob = await createUser(app);
  const run5 = letters(5);
  weather = await register(app, owner, {
    name: `an-weather-${run5}`,
    description: 'Weather',
    base_url: api.url,
    tools: [
      { name: 'get_weather', description: 'Weather for a city', method: 'GET', path: '/weather', input_schema: SCHEMA },
      { name: 'broken', description: 'Fails upstream', method: 'GET', path: '/fail', input_schema: { type: 'object' } },
      { name: 'unused', description: 'Nobody calls it', method: 'GET', path: '/weather', input_schema: SCHEMA },
    ],
  });
  quiet = await register(app, owner, {
    name: `an-quiet-${run5}`,
    description: 'Quiet',
    base_url: api.url,
    tools: [{ name: 'noop', description: 'noop', method: 'GET', path: '/weather', input_schema: SCHEMA }],
  });
  for (const s of [weather, quiet]) await setServiceStatus(ctx, s.id, 'published');
  await subscribe(app, alice, weather.id);
  await subscribe(app, bob, weather.id);
  const a = await session(app, alice, 'alice run');
  expect(await run(app, alice, a, weather.name, 'get_weather', { city: 'Oslo' }, 3)).toEqual([
    'succeeded',
    'succeeded',
    'succeeded',
  ]);
  expect(await run(app, alice, a, weather.name, 'broken', {})).toEqual(['failed']);
  await run(app, bob, await session(app, bob), weather.name, 'get_weather', { city: 'Rome' }, 2);
});
afterAll(async () => api?.close());

const get = async (user: TestUser, url: string) =>
  (await call(app, { method: 'GET', url, headers: user.headers }, 200)).body;

describe('analytics — the caller', () => {
  it('reports totals, success rate, latency, a zero-filled daily series and top tools and services', async () => {
    const body = await get(alice, '/analytics/user?window=7d');
    expect(body.period).toMatchObject({ window: '7d', to_day: today });
    expect(body.totals).toMatchObject({ calls: 4, successes: 3, failures: 1, success_rate: 0.75 });
    expect(body.totals.p50_duration_ms).toEqual(expect.any(Number));
    expect(body.totals.p95_duration_ms).toBeGreaterThanOrEqual(body.totals.p50_duration_ms);
    expect(body.by_day).toHaveLength(8);
    expect(body.by_day.at(-1)).toMatchObject({ day: today, calls: 4, failures: 1 });
    expect(body.by_day.slice(0, -1).every((d: { calls: number }) => d.calls === 0)).toBe(true);
    expect(body.top_tools[0]).toMatchObject({
      tool_id: weather.tools.get_weather,
      tool_name: 'get_weather',
      service_name: weather.name,
      calls: 3,
      success_rate: 1,
    });
    expect(body.top_services).toEqual([expect.objectContaining({ service_id: weather.id, calls: 4 })]);
    expect(body.sessions).toMatchObject({ total: 1, active: 1, created_in_period: 1 });
    expect(body.memories.total).toEqual(expect.any(Number));
  });

  it('takes an explicit from/to period', async () => {
    const from = new Date(Date.now() - 3_600_000).toISOString();
    const body = await get(alice, `/analytics/user?from=${from}`);
    expect(body.period).toMatchObject({ from, window: null });
    expect(body.totals.calls).toBe(4);
    const past = await get(alice, '/analytics/user?from=2020-01-01T00:00:00Z&to=2020-01-08T00:00:00Z');
    expect(past.totals.calls).toBe(0);
    expect(past.by_day.map((d: { day: string }) => d.day)).toEqual([
      '2020-01-01',
      '2020-01-02',
      '2020-01-03',
      '2020-01-04',
      '2020-01-05',
      '2020-01-06',
      '2020-01-07',
    ]);
  });
});

describe('analytics — services and tools', () => {
  it("shows owners all users' calls of their services, aggregated, and callers their own", async () => {
    const mine = await get(owner, '/analytics/services');
    const byId = new Map(mine.data.map((d: { service: { id: string } }) => [d.service.id, d]));
    expect(byId.get(weather.id)).toMatchObject({
      owned: true,
      usage: { calls: 6, successes: 5, failures: 1, unique_users: 2 },
      my_usage: { calls: 0 },
    });
    expect(byId.get(quiet.id)).toMatchObject({ owned: true, usage: { calls: 0, unique_users: 0 } });
    expect(JSON.stringify(mine)).not.toContain(alice.userId);
    expect(JSON.stringify(mine)).not.toContain(bob.userId);

    const hers = await get(alice, '/analytics/services');
    expect(hers.data).toEqual([
      expect.objectContaining({
        owned: false,
        usage: null,
        my_usage: expect.objectContaining({ calls: 4, failures: 1 }),
        service: expect.objectContaining({ id: weather.id }),
      }),
    ]);
  });

  it('details one owned service with its daily series and every tool', async () => {
    const body = await get(owner, `/analytics/services?service_id=${weather.id}&window=24h`);
    expect(body.data).toHaveLength(1);
    const d = body.data[0];
    expect(d.by_day.at(-1)).toMatchObject({ day: today, calls: 6 });
    const tools = new Map(d.tools.map((t: { tool_id: string }) => [t.tool_id, t]));
    expect(tools.get(weather.tools.get_weather)).toMatchObject({
      calls: 5,
      unique_users: 2,
      p50_duration_ms: expect.any(Number),
    });
    expect(tools.get(weather.tools.unused)).toMatchObject({ calls: 0, unique_users: 0, p50_duration_ms: null });
  });

  it('lists tool usage for the caller (mine) and for owned tools (owned)', async () => {
    const mine = await get(alice, '/analytics/tools');
    expect(mine.scope).toBe('mine');
    expect(mine.data.map((t: { tool_name: string; calls: number }) => [t.tool_name, t.calls])).toEqual([
      ['get_weather', 3],
      ['broken', 1],
    ]);
    expect(mine.data[1]).toMatchObject({ failures: 1, success_rate: 0 });
    const owned = await get(owner, '/analytics/tools?scope=owned');
    // Most calls first; uncalled tools too (ties by id: creation order).
    expect(owned.data.map((t: { tool_name: string }) => t.tool_name)).toEqual([
      'get_weather',
      'broken',
      'unused',
      'noop',
    ]);
    expect(owned.data[0]).toMatchObject({ tool_name: 'get_weather', calls: 5, unique_users: 2 });
  });
});

describe('analytics — sessions', () => {
  it('counts sessions by status with durations and executions per session', async () => {
    const u = await createUser(app, { roles: ['pro'] });
    await subscribe(app, u, weather.id);
    const s1 = await session(app, u, 'busy');
    await run(app, u, s1, weather.name, 'get_weather', { city: 'Oslo' }, 2);
    await call(app, { method: 'POST', url: `/v1/sessions/${s1}/close`, headers: u.headers }, 200);
    await session(app, u, 'idle');
    const body = await get(u, '/analytics/sessions?window=24h');
    expect(body).toMatchObject({
      total: 2,
      by_status: { active: 1, closed: 1 },
      empty: 1,
      executions: 2,
      currently_active: 1,
    });
    expect(body.executions_per_session).toMatchObject({ max: 2, avg: 1 });
    expect(body.duration_ms.max).toBeGreaterThanOrEqual(0);
    expect(body.by_day.at(-1)).toMatchObject({ day: today, sessions: 2, executions: 2 });
    expect(body.by_agent).toEqual([{ agent_id: null, sessions: 2, executions: 2 }]);
  });
});

describe('analytics — realtime', () => {
  it("moves the caller's counters with its requests and executions", async () => {
    const u = await createUser(app, { roles: ['pro'] });
    const before = await get(u, '/analytics/realtime');
    expect(before.backend).toBe(process.env.TEST_REDIS_URL ? 'redis' : 'memory');
    for (let i = 0; i < 3; i++) await call(app, { method: 'GET', url: '/v1/auth/me', headers: u.headers }, 200);
    await app.inject({ method: 'GET', url: '/analytics/system', headers: u.headers }); // a 403
    await subscribe(app, u, weather.id);
    const s = await session(app, u);
    await run(app, u, s, weather.name, 'get_weather', { city: 'Oslo' });
    const after = await get(u, '/analytics/realtime');
    // The first realtime call, 3 × /me, the 403, subscribe, session, execute.
    expect(after.last_1m.requests - before.last_1m.requests).toBe(8);
    expect(after.last_1m.client_errors - before.last_1m.client_errors).toBe(1);
    expect(after.last_5m.requests).toBeGreaterThanOrEqual(after.last_1m.requests);
    expect(after.last_1m.p50_ms).toEqual(expect.any(Number));
    expect(after.last_1m).toMatchObject({ executions: 1, execution_failures: 0 });
    expect(after.active_sessions).toBe(1);
  });
});

describe('analytics — admin', () => {
  it('reports platform totals', async () => {
    const admin = await createUser(app, { roles: ['admin'] });
    const body = await get(admin, '/analytics/system?window=24h');
    expect(body.users.total).toBeGreaterThanOrEqual(5);
    expect(body.users.by_role.pro).toBeGreaterThanOrEqual(2);
    expect(body.services.by_status.published).toBeGreaterThanOrEqual(2);
    expect(body.tools.total).toBeGreaterThanOrEqual(4);
    expect(body.executions.calls).toBeGreaterThanOrEqual(6);
    expect(body.executions.failures).toBeGreaterThanOrEqual(1);
    expect(body.sessions.total).toBeGreaterThanOrEqual(2);
    expect(body.requests.total).toBeGreaterThan(0);
    for (const k of ['agents', 'deployments', 'invocations', 'memories', 'subscriptions']) expect(body[k]).toBeTruthy();
  });

  it('persists per-route aggregates in batches and reports them', async () => {
    const admin = await createUser(app, { roles: ['admin'] });
    const rows = async () =>
      Number(
        (
          await execRows<{ n: string | null }>(
            ctx.db,
            sql`select sum(count) as n from endpoint_stats where route = '/analytics/sessions' and status = 403`,
          )
        )[0].n ?? 0,
      );
    const start = await rows();
    for (let i = 0; i < 3; i++) await app.inject({ method: 'GET', url: '/analytics/sessions', headers: bob.headers }); // role user → 403
    await new Promise((r) => setTimeout(r, 600)); // > ANALYTICS_FLUSH_MS: the timer writes the batch
    expect(await rows()).toBe(start + 3);

    const body = await get(admin, '/analytics/endpoints?window=24h&route=/v1/agents');
    const exec = body.data.find(
      (d: { route: string; method: string }) => d.route === '/v1/agents/:id/execute' && d.method === 'POST',
    );
    expect(exec).toMatchObject({ operation_id: 'sessions.execute' });
    expect(exec.requests).toBeGreaterThanOrEqual(9);
    expect(exec.by_status['200']).toBeGreaterThanOrEqual(9);
    expect(exec.p50_ms).toEqual(expect.any(Number));
    expect(exec.p99_ms).toBeGreaterThanOrEqual(exec.p50_ms);
    expect(body.data.every((d: { route: string }) => d.route.startsWith('/v1/agents'))).toBe(true);
    const denied = (await get(admin, '/analytics/endpoints?route=/analytics/sessions')).data[0];
    expect(denied.client_errors).toBeGreaterThanOrEqual(3);
    expect(denied.by_status['403']).toBeGreaterThanOrEqual(3);
  });
});
