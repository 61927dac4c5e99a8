/**
 * `/metrics` off the public internet (issue 11): loopback clients by socket address, or
 * `METRICS_TOKEN` as a bearer token; X-Forwarded-For never counts, even with TRUST_PROXY.
 */
import { describe, expect, it } from 'vitest';
import { isLoopbackAddress } from '../../../src/http/metrics.js';
import { setupApp } from '../../helpers/app.js';

const REMOTE = '203.0.113.7';
const TOKEN = 'scrape-secret-0123456789';
const [open, withToken] = await Promise.all([
  setupApp({ TRUST_PROXY: 'on' }),
  setupApp({ TRUST_PROXY: 'on', METRICS_TOKEN: TOKEN }),
]);

describe('happy', () => {
  it('serves loopback clients (IPv4, IPv6, IPv4-mapped) without credentials', async () => {
    for (const remoteAddress of ['127.0.0.1', '::1', '::ffff:127.0.0.1']) {
      const res = await open.app.inject({ method: 'GET', url: '/metrics', remoteAddress });
      expect(res.statusCode, remoteAddress).toBe(200);
      expect(res.body).toMatch(/process_resident_memory_bytes \d+/);
    }
  });

  it('serves a remote scraper that sends METRICS_TOKEN as a bearer token', async () => {
    const res = await withToken.app.inject({
      method: 'GET',
      url: '/metrics',
      remoteAddress: REMOTE,
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(res.statusCode).toBe(200);
    expect(res.body).toMatch(/http_requests_total/);
  });
});

describe('error', () => {
  it('a remote client without a configured token → 403 problem, no metrics', async () => {
    const res = await open.app.inject({ method: 'GET', url: '/metrics', remoteAddress: REMOTE });
    expect(res.statusCode).toBe(403);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.json().code).toBe('forbidden');
    expect(res.body).not.toMatch(/process_/);
  });

  it('a remote client with a missing or wrong token → 401', async () => {
    for (const authorization of [
      undefined,
      'Bearer nope',
      `Bearer ${TOKEN}x`,
      `Basic ${TOKEN}`,
      `Bearer ${TOKEN.slice(0, -1)}`,
    ]) {
      const res = await withToken.app.inject({
        method: 'GET',
        url: '/metrics',
        remoteAddress: REMOTE,
        headers: authorization ? { authorization } : {},
      });
      expect(res.statusCode, String(authorization)).toBe(401);
      expect(res.body).not.toMatch(/process_/);
    }
  });
});

describe('security', () => {
  it('X-Forwarded-For: 127.0.0.1 from a remote socket does not pass as loopback, even with TRUST_PROXY', async () => {
    for (const xff of ['127.0.0.1', '::1', '127.0.0.1, 127.0.0.1']) {
      const res = await open.app.inject({
        method: 'GET',
        url: '/metrics',
        remoteAddress: REMOTE,
        headers: { 'x-forwarded-for': xff },
      });
      expect(res.statusCode, xff).toBe(403);
    }
  });

  it('loopback recognition is strict', () => {
    expect(isLoopbackAddress('127.8.9.10')).toBe(true);
    for (const a of ['10.0.0.1', '::ffff:10.0.0.1', '0.0.0.0', '::', 'localhost', '127.0.0.1.evil', undefined])
      expect(isLoopbackAddress(a), String(a)).toBe(false);
  });
});
