/**
 * The SDK's failure paths against a real server process: user tokens refreshed before expiry and
 * once on a 401 `token_expired`; agent tokens renewed; 429 retried with backoff honouring
 * `Retry-After`; problem+json and OAuth errors as typed `AgentPlatformError`s.
 */
import { afterAll, describe, expect, it } from 'vitest';
import {
  AgentPlatform,
  AgentPlatformError,
  MemoryTokenStorage,
  retryDelay,
  DEFAULT_RETRY,
} from '../../packages/sdk/src/index.js';
import { startTestServer } from '../helpers/server.js';
import { recordingFetch, userClient, type Exchange } from './helpers.js';

// Plain `user` accounts may make 3 requests per second here; the other tests use `enterprise` (unlimited).
const server = await startTestServer({ RATE_LIMIT_USER: '3', RATE_LIMIT_WINDOW_MS: '1000' });
afterAll(() => server.stop());
const baseUrl = server.base;

async function testTokens(expiresIn: number): Promise<{ access_token: string; refresh_token: string }> {
  const res = await fetch(`${baseUrl}/auth/test`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ roles: ['enterprise'], expires_in: expiresIn }),
  });
  return (await res.json()) as { access_token: string; refresh_token: string };
}

describe('user token refresh', () => {
  it('refreshes before the request when the token expires within the skew', async () => {
    const log: Exchange[] = [];
    const t = await testTokens(30);
    const storage = new MemoryTokenStorage();
    const c = new AgentPlatform({
      baseUrl,
      env: {},
      accessToken: t.access_token,
      refreshToken: t.refresh_token,
      tokenStorage: storage,
      fetch: recordingFetch(log),
    });
    await c.auth.me();
    expect(log.map((e) => `${e.path} ${e.status}`)).toEqual(['/v1/auth/refresh 200', '/v1/auth/me 200']);
    const stored = await storage.get();
    expect(stored!.accessToken).not.toBe(t.access_token);
    expect(stored!.refreshToken).toBeTruthy();
    expect(stored!.expiresAt! - Date.now()).toBeGreaterThan(3600_000);
  });

  it('refreshes once on 401 token_expired and retries; concurrent calls share one refresh', async () => {
    const log: Exchange[] = [];
    const t = await testTokens(1);
    await new Promise((r) => setTimeout(r, 1500));
    // expiresAt in the future: the client believes the token is fine until the server says otherwise.
    const c = new AgentPlatform({
      baseUrl,
      env: {},
      accessToken: t.access_token,
      refreshToken: t.refresh_token,
      expiresAt: Date.now() + 3600_000,
      fetch: recordingFetch(log),
    });
    const [a, b] = await Promise.all([c.auth.me(), c.memory.stats()]);
    expect(a.user_id).toBeTruthy();
    expect(b.total_memories).toBe(0);
    expect(log.filter((e) => e.path === '/v1/auth/refresh').map((e) => e.status)).toEqual([200]);
    expect(log.filter((e) => e.status === 401)).toHaveLength(2);
  });

  it('throws token_expired when there is no refresh token, and forgets a refused refresh token', async () => {
    const t = await testTokens(1);
    await new Promise((r) => setTimeout(r, 1500));
    const noRefresh = new AgentPlatform({
      baseUrl,
      env: {},
      accessToken: t.access_token,
      expiresAt: Date.now() + 3600_000,
    });
    await expect(noRefresh.auth.me()).rejects.toMatchObject({ status: 401, code: 'token_expired' });

    const storage = new MemoryTokenStorage();
    const bad = new AgentPlatform({
      baseUrl,
      env: {},
      accessToken: t.access_token,
      refreshToken: 'not-a-refresh-token',
      tokenStorage: storage,
    });
    const err = await bad.auth.me().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AgentPlatformError);
    expect((err as AgentPlatformError).status).toBe(401);
    expect((err as AgentPlatformError).code).toMatch(/^invalid_/);
    expect(await storage.get()).toBeNull();
  });
});

describe('agent client credentials', () => {
  it('gets a token, reuses it, and renews it once when the server refuses it', async () => {
    const owner = await userClient(baseUrl);
    const agent = await owner.agents.create({ name: 'renewing' });
    const log: Exchange[] = [];
    const storage = new MemoryTokenStorage({
      accessToken: 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.',
      expiresAt: Date.now() + 3600_000,
    });
    const c = new AgentPlatform({
      baseUrl,
      env: {},
      clientId: agent.client_id,
      clientSecret: agent.client_secret,
      tokenStorage: storage,
      fetch: recordingFetch(log),
    });
    await c.agentMemory.put('k', 1);
    await c.agentMemory.put('k', 2);
    expect(log.map((e) => `${e.method} ${e.path} ${e.status}`)).toEqual([
      'PUT /v2/memory/k 401',
      'POST /auth/agent/token 200',
      'PUT /v2/memory/k 201',
      'PUT /v2/memory/k 200',
    ]);

    const wrong = new AgentPlatform({ baseUrl, env: {}, clientId: agent.client_id, clientSecret: 'wrong' });
    await expect(wrong.agentMemory.get('k')).rejects.toMatchObject({ status: 401, code: 'invalid_client' });
  });
});

describe('agent memory optimistic concurrency', () => {
  it('put with a stale ifMatch is refused with 412 and changes nothing; the current ETag and ifNoneMatch work', async () => {
    const owner = await userClient(baseUrl);
    const agent = await owner.agents.create({ name: 'etags' });
    const c = new AgentPlatform({ baseUrl, env: {}, clientId: agent.client_id, clientSecret: agent.client_secret });
    const first = await c.agentMemory.put('doc', { n: 1 });
    const second = await c.agentMemory.put('doc', { n: 2 }, { ifMatch: `"${first.version}"` });
    await expect(c.agentMemory.put('doc', { n: 3 }, { ifMatch: `"${first.version}"` })).rejects.toMatchObject({
      status: 412,
    });
    expect((await c.agentMemory.get('doc')).value).toEqual({ n: 2 });
    await expect(c.agentMemory.put('doc', { n: 4 }, { ifNoneMatch: '*' })).rejects.toMatchObject({ status: 412 });
    expect((await c.agentMemory.put('fresh', 1, { ifNoneMatch: '*' })).version).toBe(1);
    expect(second.version).toBe(first.version + 1);
  });
});

describe('429 and typed errors', () => {
  it('retries 429 after Retry-After with jitter and succeeds; without retries it throws rate_limited', async () => {
    const log: Exchange[] = [];
    const c = await userClient(baseUrl, ['user'], { fetch: recordingFetch(log), retry: { maxRetries: 5 } });
    for (let i = 0; i < 8; i++) await c.memory.stats();
    const limited = log.map((e, i) => ({ ...e, i })).filter((e) => e.status === 429);
    expect(limited.length).toBeGreaterThan(0);
    for (const l of limited) expect(log[l.i + 1].at - l.at).toBeGreaterThanOrEqual(900);
    expect(log.filter((e) => e.path === '/memory/stats' && e.status === 200)).toHaveLength(8);

    const noRetry = await userClient(baseUrl, ['user'], { retry: false });
    const errors: AgentPlatformError[] = [];
    for (let i = 0; i < 6; i++) await noRetry.memory.stats().catch((e: AgentPlatformError) => errors.push(e));
    expect(errors.length).toBeGreaterThan(0);
    expect(errors[0]).toMatchObject({ status: 429, code: 'rate_limited' });
    expect(errors[0].retryAfterSeconds).toBeGreaterThanOrEqual(1);
  });

  it('computes exponential backoff with full jitter capped by maxDelayMs, and refuses waits beyond it', () => {
    expect(retryDelay(0, undefined, DEFAULT_RETRY, () => 1)).toBe(500);
    expect(retryDelay(3, undefined, DEFAULT_RETRY, () => 1)).toBe(4000);
    expect(retryDelay(10, undefined, DEFAULT_RETRY, () => 1)).toBe(30_000);
    expect(retryDelay(2, undefined, DEFAULT_RETRY, () => 0)).toBe(0);
    expect(retryDelay(0, 2, DEFAULT_RETRY, () => 0.5)).toBe(2100);
    expect(retryDelay(0, 31, DEFAULT_RETRY, () => 0)).toBeUndefined();
  });

  it('turns problem+json into AgentPlatformError with status, code, detail, errors[] and requestId', async () => {
    const c = await userClient(baseUrl);
    const notFound = (await c.agents.get('agt_nope').catch((e: unknown) => e)) as AgentPlatformError;
    expect(notFound).toBeInstanceOf(AgentPlatformError);
    expect(notFound).toMatchObject({ status: 404, code: 'not_found' });
    expect(notFound.requestId).toMatch(/^[\w-]+$/);
    expect(notFound.detail).toBeTruthy();

    const invalid = (await c.memory.add({ content: '' }).catch((e: unknown) => e)) as AgentPlatformError;
    expect(invalid).toMatchObject({ status: 400, code: 'validation_failed' });
    expect(invalid.errors[0]).toMatchObject({ in: 'body', pointer: '/content' });

    const anon = new AgentPlatform({ baseUrl, env: {} });
    await expect(anon.auth.me()).rejects.toMatchObject({ status: 401, code: 'unauthenticated' });
    const down = new AgentPlatform({ baseUrl: 'http://127.0.0.1:9', env: {}, retry: false });
    await expect(down.auth.config()).rejects.toMatchObject({ status: 0, code: 'network_error' });
    expect(() => new AgentPlatform({ env: {} })).toThrow(/AGENT_PLATFORM_URL/);
  });
});
