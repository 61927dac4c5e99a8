/**
 * How the platform serves the console (src/modules/console/routes.ts), without a browser: cache
 * headers (immutable hashed assets, revalidated index.html), the Content-Security-Policy, client
 * routes answered with index.html, a missing asset as a 404 problem, a missing build as a 503
 * problem naming the command, the favicon, and the redirect of a page load on another loopback
 * origin to the public one.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerErrorHandlers } from '../../src/http/errors.js';
import { consoleRoutes } from '../../src/modules/console/routes.js';

/** Routes registered, as `METHOD url`. */
const routes: string[] = [];

async function serve(dist: string, publicUrl?: string): Promise<FastifyInstance> {
  const app = Fastify();
  registerErrorHandlers(app);
  app.addHook('onRoute', (r) => void routes.push(`${[r.method].flat().join(',')} ${r.url}`));
  await app.register(consoleRoutes, { dist, publicUrl });
  await app.ready();
  return app;
}

describe('console routes', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'console-dist-'));
  let app: FastifyInstance;
  beforeAll(async () => {
    fs.mkdirSync(path.join(dir, 'assets'));
    fs.writeFileSync(
      path.join(dir, 'index.html'),
      '<!doctype html><div id="root"></div><script type="module" src="/console/assets/index-abc123.js"></script>',
    );
    fs.writeFileSync(path.join(dir, 'assets', 'index-abc123.js'), 'console.log("console")');
    fs.writeFileSync(path.join(dir, 'assets', 'index-abc123.css'), 'body{}');
    fs.writeFileSync(path.join(dir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
    // Next to assets/, not in it: never served.
    fs.writeFileSync(path.join(dir, 'package.json'), '{"dependencies":{}}');
    app = await serve(dir);
  });
  afterAll(async () => {
    await app.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('serves hashed assets as immutable for a year, under one route', async () => {
    const res = await app.inject({ url: '/console/assets/index-abc123.js' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/javascript/);
    expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(res.body).toBe('console.log("console")');
    expect((await app.inject({ url: '/console/assets/index-abc123.css' })).headers['content-type']).toMatch(
      /text\/css/,
    );
    // One route for every asset: endpoint analytics label them all /console/assets/*, not one row per build hash.
    expect(routes.filter((r) => r.includes('/console/assets'))).toEqual(['HEAD,GET /console/assets/*']);
  });

  it('answers index.html for the app and its client routes, revalidated and under a strict CSP', async () => {
    for (const url of [
      '/console/',
      '/console/marketplace',
      '/console/agents?x=1',
      '/console/callback?code=c&state=s',
    ]) {
      const res = await app.inject({ url });
      expect(res.statusCode, url).toBe(200);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.headers['cache-control']).toBe('no-cache');
      expect(res.headers['content-security-policy']).toContain("script-src 'self'");
      expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.body).toContain('<div id="root">');
    }
    const bare = await app.inject({ url: '/console' });
    expect(bare.statusCode).toBe(301);
    expect(bare.headers.location).toBe('/console/');
  });

  it('serves the favicon at /console/favicon.svg and at /favicon.ico, where browsers look by themselves', async () => {
    for (const url of ['/console/favicon.svg', '/favicon.ico']) {
      const res = await app.inject({ url });
      expect(res.statusCode, url).toBe(200);
      expect(res.headers['content-type'], url).toBe('image/svg+xml');
      expect(res.body).toContain('<svg');
    }
  });

  it('redirects a page load on another loopback origin to the public one, and nothing else', async () => {
    const pub = await serve(dir, 'http://localhost:3000');
    try {
      for (const [host, url, location] of [
        ['127.0.0.1:3000', '/console/agents?x=1', 'http://localhost:3000/console/agents?x=1'],
        ['[::1]:3000', '/console/', 'http://localhost:3000/console/'],
        ['localhost:4000', '/console', 'http://localhost:3000/console/'],
      ]) {
        const res = await pub.inject({ url, headers: { host } });
        expect(res.statusCode, host).toBe(307);
        expect(res.headers.location, host).toBe(location);
        expect(res.headers['cache-control']).toBe('no-store');
      }
      // The public origin itself, a non-loopback Host (a proxy's), and assets are served as they are.
      for (const [host, url] of [
        ['localhost:3000', '/console/agents'],
        ['platform.example.com', '/console/agents'],
        ['127.0.0.1:3000', '/console/assets/index-abc123.js'],
      ]) {
        expect((await pub.inject({ url, headers: { host } })).statusCode, `${host}${url}`).toBe(200);
      }
    } finally {
      await pub.close();
    }
    // A public URL that is not loopback (behind a proxy) never redirects: a proxy that rewrites Host cannot loop.
    const proxied = await serve(dir, 'https://platform.example.com');
    try {
      expect((await proxied.inject({ url: '/console/', headers: { host: '127.0.0.1:3000' } })).statusCode).toBe(200);
    } finally {
      await proxied.close();
    }
  });

  it('answers a missing asset with a 404 problem, not index.html', async () => {
    const res = await app.inject({ url: '/console/assets/index-old999.js' });
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body).not.toContain('<div id="root">');
  });

  it('never serves a file outside assets/', async () => {
    for (const url of [
      '/console/assets/../package.json',
      '/console/assets/%2e%2e/package.json',
      '/console/assets/..%2fpackage.json',
      '/console/assets/%2e%2e%2fpackage.json',
    ]) {
      const res = await app.inject({ url });
      expect(res.body, url).not.toContain('dependencies');
      // Either a 404 problem or the app's page (a client route), never the file.
      if (res.statusCode !== 200) expect(res.statusCode, url).toBe(404);
      else expect(res.body, url).toContain('<div id="root">');
    }
  });

  it('answers 503 naming the build command when the console is not built', async () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'console-none-'));
    const bare = await serve(empty);
    try {
      for (const url of ['/console', '/console/marketplace']) {
        const res = await bare.inject({ url });
        expect(res.statusCode).toBe(503);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(res.json().detail).toContain('npm run build');
      }
    } finally {
      await bare.close();
      fs.rmSync(empty, { recursive: true, force: true });
    }
  });
});
