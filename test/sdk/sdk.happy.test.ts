/**
 * The SDK against a real server process (loopback HTTP; PGlite, or PostgreSQL + Redis with
 * TEST_DATABASE_URL / TEST_REDIS_URL): every namespace once, configuration from the environment,
 * cursor iteration, deployments with upload progress and logs.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { AgentPlatform } from '../../packages/sdk/src/index.js';
import { startTestServer } from '../helpers/server.js';
import { startJsonApi } from '../helpers/upstreams.js';
import { weatherManifest } from '../modules/publishing/helpers.js';
import { HANDLERS, tarball } from '../modules/deployments/fixtures.js';
import { userClient } from './helpers.js';

const server = await startTestServer();
const api = await startJsonApi();
afterAll(async () => {
  await api.close();
  await server.stop();
});
const baseUrl = server.base;

async function until<T>(fn: () => Promise<T>, done: (v: T) => boolean, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (done(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('auth and apiKeys', () => {
  it('registers, logs in, reads and updates the profile; API keys by option and by environment', async () => {
    const client = new AgentPlatform({ baseUrl, env: {} });
    expect((await client.auth.config()).issuer).toMatch(/^http/);
    const email = `sdk-${Date.now()}@example.test`;
    const profile = await client.auth.register({ email, password: 'correct horse battery' });
    expect(profile.email).toBe(email);
    const set = await client.auth.login({ email, password: 'correct horse battery' });
    expect(set.token_type).toBe('Bearer');
    expect((await client.auth.me()).email).toBe(email);
    expect((await client.auth.updateProfile({ name: 'Ada' })).name).toBe('Ada');
    expect((await client.auth.validate()).valid).toBe(true);

    const created = await client.apiKeys.create({ name: 'sdk test' });
    expect(created.key).toBeTruthy();
    await client.apiKeys.create({ name: 'second' });
    const names: string[] = [];
    for await (const k of client.apiKeys.list({ limit: 1 })) names.push(k.name);
    expect(names.sort()).toEqual(['sdk test', 'second']);

    const byOption = new AgentPlatform({ baseUrl, apiKey: created.key, env: { AGENT_PLATFORM_API_KEY: 'apk_wrong' } });
    expect((await byOption.auth.me()).email).toBe(email);
    const byEnv = new AgentPlatform({ env: { AGENT_PLATFORM_URL: baseUrl, AGENT_PLATFORM_API_KEY: created.key } });
    expect((await byEnv.auth.me()).email).toBe(email);

    await client.apiKeys.revoke(created.id);
    await expect(byEnv.auth.me()).rejects.toMatchObject({ name: 'AgentPlatformError', status: 401 });
  });
});

describe('services, publishing, subscriptions, sessions, search', () => {
  it('registers a service, publishes it through the checklist, subscribes and calls a tool', async () => {
    const owner = await userClient(baseUrl);
    const svc = await owner.services.register(
      weatherManifest(api.url) as Parameters<typeof owner.services.register>[0],
    );
    expect(svc.tools.map((t) => t.name)).toContain('get_weather');
    const own = await owner.services.listOwn({ limit: 1 }).toArray();
    expect(own.map((s) => s.id)).toEqual([svc.id]);

    const first = await owner.publishing.verifyDomain(svc.id);
    api.verificationToken = first.token;
    expect((await owner.publishing.verifyDomain(svc.id)).status).toBe('verified');
    await owner.publishing.setVerificationConfig(svc.id, {
      tests: [{ tool: 'get_weather', arguments: { city: 'Oslo' } }],
    });
    await owner.publishing.publish(svc.id);
    const done = await until(
      () => owner.publishing.verificationStatus(svc.id),
      (s) => s.status !== 'pending_verification',
    );
    expect(done.status).toBe('published');

    const user = await userClient(baseUrl);
    const market = await user.services.list({ q: svc.name }).toArray();
    expect(market.map((s) => s.id)).toContain(svc.id);
    expect((await user.services.manifest(svc.name)).name).toBe(svc.name);
    const sub = await user.subscriptions.create({ service_id: svc.id, plan: 'free' });
    expect((await user.subscriptions.list().toArray()).map((s) => s.id)).toContain(sub.id);
    expect((await user.subscriptions.quotas(sub.id)).plan).toBe('free');

    const session = await user.sessions.create({});
    const result = await user.sessions.execute(session.id, {
      service: svc.name,
      tool: 'get_weather',
      arguments: { city: 'Bergen' },
    });
    expect(result.output).toMatchObject({ city: 'Bergen', temp_c: 21 });
    expect((await user.sessions.list().toArray()).map((s) => s.id)).toContain(session.id);
    expect((await user.sessions.close(session.id)).status).toBe('closed');

    const tools = await user.search.tools({ q: 'weather city' }).toArray(20);
    expect(tools.some((t) => t.service.id === svc.id && t.name === 'get_weather')).toBe(true);
    const universal = await user.search.universal({ q: svc.name });
    expect(JSON.stringify(universal)).toContain(svc.id);
  });
});

describe('memory and analytics', () => {
  it('adds memories, finds them by meaning, iterates the list and reads stats and analytics', async () => {
    const c = await userClient(baseUrl);
    await c.memory.add({ content: 'The deploy key for staging rotates every Monday' });
    await c.memory.add({ content: 'Lunch options near the office: ramen, tacos' });
    await c.memory.add({ content: 'Our staging database runs PostgreSQL 15' });
    const found = await c.memory.search({ q: 'when does the staging key rotate', limit: 2 });
    expect(found.data[0].content).toContain('rotates every Monday');
    const all: string[] = [];
    for await (const m of c.memory.list({ limit: 2 })) all.push(m.content);
    expect(all).toHaveLength(3);
    expect((await c.memory.stats()).total_memories).toBe(3);
    const usage = await c.analytics.user({ window: '24h' });
    expect(usage.period).toBeTruthy();
  });
});

describe('agents, agentMemory, permissions, deployments', () => {
  it('creates agents that use KV memory by client credentials (options and environment) and share it by a grant', async () => {
    const owner = await userClient(baseUrl);
    const a = await owner.agents.create({ name: 'writer' });
    const b = await owner.agents.create({ name: 'reader' });
    expect((await owner.agents.list().toArray()).map((x) => x.id).sort()).toEqual([a.id, b.id].sort());
    expect((await owner.agents.get(a.id)).name).toBe('writer');

    const agentA = new AgentPlatform({ baseUrl, clientId: a.client_id, clientSecret: a.client_secret, env: {} });
    await agentA.agentMemory.put('notes/first', { n: 1 });
    await agentA.agentMemory.put('notes/second', { n: 2 }, { ttl_seconds: 3600 });
    expect((await agentA.agentMemory.get('notes/first')).value).toEqual({ n: 1 });
    expect((await agentA.agentMemory.list({ prefix: 'notes/', limit: 1 }).toArray()).map((e) => e.key)).toEqual([
      'notes/first',
      'notes/second',
    ]);

    const grant = await owner.permissions.create(a.id, { grantee_agent_id: b.id, access: 'read' });
    expect((await owner.permissions.list(a.id).toArray()).map((p) => p.id)).toEqual([grant.id]);
    expect((await owner.permissions.grants(b.id).toArray()).map((p) => p.id)).toEqual([grant.id]);
    const agentB = new AgentPlatform({
      env: {
        AGENT_PLATFORM_URL: baseUrl,
        AGENT_PLATFORM_CLIENT_ID: b.client_id,
        AGENT_PLATFORM_CLIENT_SECRET: b.client_secret,
      },
    });
    expect((await agentB.agentMemory.list({}, a.id).toArray()).map((e) => e.key)).toEqual([
      'notes/first',
      'notes/second',
    ]);
    await owner.permissions.revoke(a.id, grant.id);
    await expect(agentB.agentMemory.list({}, a.id).toArray()).rejects.toMatchObject({ status: 403 });

    const rotated = await owner.agents.rotateSecret(a.id, { grace_period_seconds: 0 });
    const renewed = new AgentPlatform({ baseUrl, clientId: a.client_id, clientSecret: rotated.client_secret, env: {} });
    expect((await renewed.agentMemory.get('notes/second')).value).toEqual({ n: 2 });
  });

  it('deploys a tarball with upload progress, invokes it and reads its logs', async () => {
    const owner = await userClient(baseUrl);
    const agent = await owner.agents.create({ name: 'runner' });
    const progress: Array<[number, number]> = [];
    const artifact = await tarball({ 'index.mjs': HANDLERS.echo });
    const dep = await owner.deployments.deploy(agent.id, {
      artifact,
      env: { GREETING: 'hi' },
      onUploadProgress: (sent, total) => progress.push([sent, total]),
    });
    expect(dep.status).toBe('preparing');
    expect(dep.env_keys).toEqual(['GREETING']);
    // The total (the whole multipart body, more than the artifact) is known before the first byte and never changes.
    const total = progress[0][1];
    expect(progress[0]).toEqual([0, total]);
    expect(total).toBeGreaterThan(artifact.length);
    expect(progress.every(([, t]) => t === total)).toBe(true);
    expect(progress.at(-1)).toEqual([total, total]);
    const ready = await until(
      async () => (await owner.deployments.list(agent.id).page()).data[0],
      (d) => d.status !== 'preparing',
    );
    expect(ready.status).toBe('active');

    const exe = await owner.deployments.invoke(agent.id, { input: { hello: 'world' } });
    expect(exe.status).toBe('succeeded');
    expect((exe as { output: unknown }).output).toMatchObject({ echo: { hello: 'world' } });
    expect((await owner.deployments.executions(agent.id).toArray()).map((e) => e.id)).toEqual([exe.id]);
    expect((await owner.deployments.execution(agent.id, exe.id)).id).toBe(exe.id);

    const lines = [];
    for await (const l of owner.deployments.logs(agent.id)) lines.push(l);
    expect(lines.map((l) => l.message)).toEqual(
      expect.arrayContaining([expect.stringContaining('echo called'), 'to stderr']),
    );
    const followed = [];
    for await (const l of owner.deployments.logs(agent.id, { executionId: exe.id, follow: true, pollMs: 100 }))
      followed.push(l);
    expect(followed.map((l) => l.stream).sort()).toEqual(['stderr', 'stdout']);
    expect(followed.every((l) => l.execution_id === exe.id)).toBe(true);

    // Following the agent (SSE) outlives each run's `end` event: lines of two runs arrive, each naming its run.
    const abort = new AbortController();
    const tail: Array<{ execution_id?: string; message: string }> = [];
    const following = (async () => {
      for await (const l of owner.deployments.logs(agent.id, { follow: true, signal: abort.signal })) tail.push(l);
    })();
    await new Promise((r) => setTimeout(r, 200)); // the stream is open before the runs start
    const runs = [
      await owner.deployments.invoke(agent.id, { input: { n: 1 } }),
      await owner.deployments.invoke(agent.id, { input: { n: 2 } }),
    ];
    await until(
      async () => tail.length,
      (n) => n >= 4,
      10_000,
    );
    abort.abort();
    await following;
    expect(new Set(tail.map((l) => l.execution_id))).toEqual(new Set(runs.map((r) => r.id)));
  });
});
