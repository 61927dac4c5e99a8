/**
 * The default cache policy of credentialed answers (docs/adr/0299-http-no-store-every-answer-to-a-request.md): an answer to a
 * request carrying `Authorization` or `X-API-Key` is `Cache-Control: no-store` unless its route sets
 * its own, so no shared cache in front of the service can hand one principal's data to another
 * (RFC 9111 §3.5 only covers `Authorization`).
 */
import { describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { agentToken, createAgent } from '../../helpers/agents.js';

const { app } = await setupApp();

describe('Cache-Control of credentialed answers', () => {
  it('is no-store for an API key, a user token and an agent token, on success and on failure', async () => {
    const user = await createUser(app);
    const { body: key } = await call(
      app,
      { method: 'POST', url: '/api-keys', headers: user.headers, payload: { name: 'cache' } },
      201,
    );
    const viaKey = await app.inject({ method: 'GET', url: '/v1/auth/me', headers: { 'x-api-key': key.key } });
    expect(viaKey.statusCode).toBe(200);
    expect(viaKey.json().email).toBe(user.email);
    expect(viaKey.headers['cache-control']).toBe('no-store');
    const viaToken = await app.inject({ method: 'GET', url: '/api-keys', headers: user.headers });
    expect(viaToken.statusCode).toBe(200);
    expect(viaToken.headers['cache-control']).toBe('no-store');
    const bad = await app.inject({ method: 'GET', url: '/v1/auth/me', headers: { 'x-api-key': 'apk_not-a-key' } });
    expect(bad.statusCode).toBe(401);
    expect(bad.headers['cache-control']).toBe('no-store');

    const agent = await createAgent(app, user);
    const { headers } = await agentToken(app, agent);
    const put = await app.inject({ method: 'PUT', url: '/v2/memory/cached', headers, payload: { value: 1 } });
    expect(put.statusCode).toBe(201);
    const get = await app.inject({ method: 'GET', url: '/v2/memory/cached', headers });
    expect(get.headers['cache-control']).toBe('no-store');
    // A client's own conditional request still works: the ETag is not a cache's.
    const again = await app.inject({
      method: 'GET',
      url: '/v2/memory/cached',
      headers: { ...headers, 'if-none-match': String(get.headers.etag) },
    });
    expect(again.statusCode).toBe(304);
  });

  it('leaves anonymous answers and a route’s own policy alone', async () => {
    const anonymous = await app.inject({ method: 'GET', url: '/healthz' });
    expect(anonymous.headers['cache-control']).toBeUndefined();
    // The landing document is the same for everyone: its route keeps it publicly cacheable.
    const user = await createUser(app);
    const landing = await app.inject({ method: 'GET', url: '/', headers: user.headers });
    expect(landing.headers['cache-control']).toBe('public, max-age=300');
  });
});
