/**
 * Issue 19 §5: CORS (`CORS_ORIGINS`: exact origins with credentials, `*` for any other origin
 * without, none by default) and the `GET /` landing document.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { CORS_MAX_AGE_SECONDS, corsOptionsFor } from '../../../src/http/cors.js';
import { createUser, setupApp } from '../../helpers/app.js';

const APP = 'https://app.example.test';
const { app } = await setupApp({
  CORS_ORIGINS: `${APP}, http://localhost:5173`,
  PUBLIC_URL: 'https://api.example.test',
});

/** A browser preflight for `method` on `url` from `origin`. */
const preflight = (url: string, origin: string, method = 'GET', headers = 'authorization') =>
  app.inject({
    method: 'OPTIONS',
    url,
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': headers },
  });

describe('CORS', () => {
  it('answers a preflight from a listed origin: that origin, credentials, methods, requested headers, max age', async () => {
    const res = await preflight('/v1/auth/me', APP, 'DELETE', 'authorization,content-type');
    expect(res.statusCode).toBe(204);
    expect(res.headers).toMatchObject({
      'access-control-allow-origin': APP,
      'access-control-allow-credentials': 'true',
      'access-control-allow-headers': 'authorization,content-type',
      'access-control-max-age': String(CORS_MAX_AGE_SECONDS),
    });
    expect(String(res.headers['access-control-allow-methods']).split(', ')).toEqual(
      expect.arrayContaining(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']),
    );
    expect(String(res.headers.vary)).toMatch(/origin/i);
  });

  it('lets a listed origin read the answer and the request id of an authenticated call', async () => {
    const user = await createUser(app);
    const res = await app.inject({
      method: 'GET',
      url: '/v1/auth/me',
      headers: { ...user.headers, origin: 'http://localhost:5173' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe('http://localhost:5173');
    expect(res.headers['access-control-allow-credentials']).toBe('true');
    expect(String(res.headers['access-control-expose-headers'])).toContain('x-request-id');
  });

  it('gives an unlisted origin no CORS headers (its preflight is an unknown route), nor a request without Origin', async () => {
    const pre = await preflight('/v1/auth/me', 'https://evil.example.test');
    expect(pre.statusCode).toBe(404);
    expect(pre.headers['access-control-allow-origin']).toBeUndefined();
    const get = await app.inject({ method: 'GET', url: '/healthz', headers: { origin: 'https://evil.example.test' } });
    expect(get.headers['access-control-allow-origin']).toBeUndefined();
    expect(get.headers['access-control-allow-credentials']).toBeUndefined();
    const plain = await app.inject({ method: 'GET', url: '/healthz' });
    expect(plain.headers['access-control-allow-origin']).toBeUndefined();
    // An origin differing only by scheme or port is another origin.
    expect(
      (await preflight('/v1/auth/me', 'http://app.example.test')).headers['access-control-allow-origin'],
    ).toBeUndefined();
  });

  it('policy: none by default; `*` admits any other origin without credentials', () => {
    const none = loadConfig({ NODE_ENV: 'test' }).cors;
    expect(none).toEqual({ origins: [], any: false });
    expect(corsOptionsFor(none, APP)).toEqual({ origin: false });
    const any = loadConfig({ NODE_ENV: 'test', CORS_ORIGINS: `*,${APP}` }).cors;
    expect(corsOptionsFor(any, 'https://other.example.test')).toMatchObject({ origin: '*', credentials: false });
    expect(corsOptionsFor(any, APP)).toMatchObject({ origin: APP, credentials: true });
    expect(corsOptionsFor(any, undefined)).toEqual({ origin: false });
  });

  it('with no CORS_ORIGINS: only Vary: Origin, no CORS headers for any origin, preflights are unknown routes', async () => {
    const { app: plain } = await setupApp({ PUBLIC_URL: 'https://api.example.test' });
    const get = await plain.inject({ method: 'GET', url: '/healthz', headers: { origin: APP } });
    expect(get.statusCode).toBe(200);
    expect(String(get.headers.vary)).toMatch(/origin/i);
    expect(Object.keys(get.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
    expect(String((await plain.inject({ method: 'GET', url: '/healthz' })).headers.vary)).toMatch(/origin/i);
    const pre = await plain.inject({
      method: 'OPTIONS',
      url: '/v1/auth/me',
      headers: { origin: APP, 'access-control-request-method': 'GET' },
    });
    expect(pre.statusCode).toBe(404);
    expect(pre.headers['access-control-allow-origin']).toBeUndefined();
    // An unauthenticated answer (the auth hook throws) still varies by origin, as every answer does.
    expect(String((await plain.inject({ method: 'GET', url: '/v1/auth/me' })).headers.vary)).toMatch(/origin/i);
  });

  it('refuses a CORS_ORIGINS entry that is not an origin, naming the variable', () => {
    for (const bad of [
      'app.example.test',
      'https://app.example.test/path',
      'ftp://files.example.test',
      'https://*.example.test',
    ]) {
      expect(() => loadConfig({ NODE_ENV: 'test', CORS_ORIGINS: bad }), bad).toThrow(/CORS_ORIGINS/);
    }
  });
});

describe('GET /', () => {
  it('names the service and links to the docs, the OpenAPI document, the console and /mcp', async () => {
    const res = await app.inject({ method: 'GET', url: '/' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const body = res.json();
    expect(body).toMatchObject({
      name: 'agent-platform',
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
      api_version: (await app.inject({ method: 'GET', url: '/openapi.json' })).json().info.version,
      links: {
        docs: 'https://api.example.test/docs',
        openapi: 'https://api.example.test/openapi.json',
        console: 'https://api.example.test/console/',
        mcp: 'https://api.example.test/mcp',
        openid_configuration: 'https://api.example.test/idp/.well-known/openid-configuration',
      },
    });
    // Every link leads somewhere on this server.
    for (const link of [body.links.docs, body.links.openapi, body.links.openid_configuration, body.links.health]) {
      const r = await app.inject({ method: 'GET', url: new URL(link).pathname });
      expect(r.statusCode, link).toBeLessThan(400);
    }
  });
});
