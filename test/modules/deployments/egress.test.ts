/**
 * Egress allow-list of deployed code (issue 14 §2): the sandbox has no network of its own; a
 * deployment that declares `egress` reaches exactly the listed hosts through the host proxy, with
 * plain `fetch` (HTTP, and HTTPS through a CONNECT tunnel), and every refusal is in the logs.
 * Loopback upstreams are reachable only because the test app runs with ALLOW_LOOPBACK_UPSTREAMS=on.
 */
import http from 'node:http';
import net from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createUser, setupApp, type TestUser } from '../../helpers/app.js';
import { setUpstreamResolver, type HostResolver } from '../../../src/upstream/http.js';
import { probeNetworkIsolation } from '../../../src/sandbox/runner.js';
import { egressAllows, parseEgress, parseEgressRule, type EgressRule } from '../../../src/sandbox/egress.js';
import { createAgent, deploy, deployReady, tarball } from './fixtures.js';
import type { AppContext } from '../../../src/context.js';

/** Fetches each URL with the global `fetch` (or opens a raw CONNECT tunnel) and reports what happened. */
const HANDLER = `
import net from 'node:net';
let count = 0;
export default async function (input) {
  count++;
  const out = { count, proxy: process.env.HTTPS_PROXY ?? null, results: [] };
  for (const u of input.urls ?? []) {
    try {
      const r = await fetch(u, { signal: AbortSignal.timeout(5000) });
      out.results.push({ url: u, status: r.status, body: await r.text() });
    } catch (e) {
      out.results.push({ url: u, error: String(e.cause?.message ?? e.message) });
    }
  }
  if (input.tunnel) {
    // A raw CONNECT tunnel through HTTPS_PROXY: the proxy answers 200, then bytes flow both ways.
    const p = new URL(process.env.HTTPS_PROXY);
    out.tunnel = await new Promise((resolve) => {
      const s = net.connect(Number(p.port), p.hostname, () => s.write('CONNECT ' + input.tunnel + ' HTTP/1.1\\r\\nhost: ' + input.tunnel + '\\r\\n\\r\\n'));
      let buf = '';
      s.on('data', (d) => {
        buf += d;
        if (buf.includes('\\r\\n\\r\\n') && !s.sent) { s.sent = true; if (buf.startsWith('HTTP/1.1 200')) s.write('ping\\n'); }
        if (buf.includes('pong')) { s.end(); resolve(buf.split('\\r\\n')[0] + ' / pong'); }
      });
      s.on('end', () => resolve(buf.split('\\r\\n')[0]));
      s.on('error', (e) => resolve('error ' + e.message));
    });
  }
  return out;
}
`;

let app: FastifyInstance;
let ctx: AppContext;
let u: TestUser;
let upstream: http.Server;
let echo: net.Server;
let port: number;
let echoPort: number;
let previousResolver: HostResolver;

beforeAll(async () => {
  ({ app, ctx } = await setupApp());
  u = await createUser(app);
  upstream = http.createServer((req, res) =>
    res.writeHead(200, { 'content-type': 'text/plain' }).end(`hello ${req.url}`),
  );
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  port = (upstream.address() as net.AddressInfo).port;
  echo = net.createServer((s) => s.on('data', (d) => (String(d).includes('ping') ? s.write('pong\n') : undefined)));
  await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
  echoPort = (echo.address() as net.AddressInfo).port;
  // Test names: allowed.test and denied.test resolve to loopback, private.test to a private address, rebind.test to both.
  previousResolver = setUpstreamResolver(ctx, async (h) => {
    if (h === 'allowed.test' || h === 'denied.test') return [{ address: '127.0.0.1', family: 4 }];
    if (h === 'private.test') return [{ address: '10.1.2.3', family: 4 }];
    if (h === 'rebind.test')
      return [
        { address: '127.0.0.1', family: 4 },
        { address: '169.254.169.254', family: 4 },
      ];
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${h}`), { code: 'ENOTFOUND' });
  });
}, 180_000);

afterAll(async () => {
  setUpstreamResolver(ctx, previousResolver);
  upstream?.close();
  echo?.close();
  await app?.close();
});

const invoke = async (agentId: string, input: unknown) =>
  (
    await call(
      app,
      {
        method: 'POST',
        url: `/v2/agents/${agentId}/invoke`,
        headers: u.headers,
        payload: { input, timeout_ms: 20_000 },
      },
      200,
    )
  ).body;

describe('egress patterns', () => {
  it('parses hosts, wildcards and ports, and refuses malformed patterns', () => {
    expect(parseEgressRule('API.Example.com')).toEqual({ host: 'api.example.com', wildcard: false, port: null });
    expect(parseEgressRule('*.example.org:443')).toEqual({ host: 'example.org', wildcard: true, port: 443 });
    for (const bad of [
      '',
      'http://x.com',
      'x.com:0',
      'x.com:70000',
      '*.com',
      '*.1.2.3.4',
      'a..b',
      '-a.com',
      'a_b.com',
      '::1',
      'x.com/path',
    ]) {
      expect(typeof parseEgressRule(bad), bad).toBe('string');
    }
    expect(parseEgress(['a.com', 'A.com', 'b.com:8080'])).toEqual({ patterns: ['a.com', 'b.com:8080'] });
    expect(parseEgress('a.com').errors).toHaveLength(1);
  });

  it('matches exact hosts, sub-domains of a wildcard (not its apex), and ports (default 80/443)', () => {
    const rules = ['api.example.com', '*.example.org:8443'].map(parseEgressRule) as EgressRule[];
    expect(egressAllows(rules, 'api.example.com', 443)).toBe(true);
    expect(egressAllows(rules, 'API.example.com.', 80)).toBe(true);
    expect(egressAllows(rules, 'api.example.com', 8080)).toBe(false);
    expect(egressAllows(rules, 'x.api.example.com', 443)).toBe(false);
    expect(egressAllows(rules, 'a.b.example.org', 8443)).toBe(true);
    expect(egressAllows(rules, 'example.org', 8443)).toBe(false);
    expect(egressAllows(rules, 'evilexample.org', 8443)).toBe(false);
    expect(egressAllows(rules, 'a.example.org', 443)).toBe(false);
  });
});

describe('deploying with egress', () => {
  it('takes the form field, else agent.json, and shows the normalised list', async () => {
    const a = await createAgent(app, u);
    const viaForm = await deploy(
      app,
      u.headers,
      a.id,
      await tarball({ 'index.mjs': HANDLER, 'agent.json': '{"egress":["ignored.example"]}' }),
      { egress: '["API.example.com", "*.example.org:443"]' },
    );
    expect(viaForm.statusCode).toBe(202);
    expect(viaForm.json().egress).toEqual(['api.example.com', '*.example.org:443']);
    const viaBundle = await deploy(
      app,
      u.headers,
      a.id,
      await tarball({ 'index.mjs': HANDLER, 'agent.json': '{"egress":["bundle.example:8080"]}' }),
    );
    expect(viaBundle.json().egress).toEqual(['bundle.example:8080']);
    const none = await deploy(app, u.headers, a.id, await tarball({ 'index.mjs': HANDLER }));
    expect(none.json().egress).toEqual([]);
  });

  it('refuses bad patterns with 400 and a pointer to the entry', async () => {
    const a = await createAgent(app, u);
    const r = await deploy(app, u.headers, a.id, await tarball({ 'index.mjs': HANDLER }), {
      egress: '["ok.example", "http://bad"]',
    });
    expect(r.statusCode).toBe(400);
    expect(r.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(r.json().errors).toEqual([expect.objectContaining({ pointer: '/egress/1' })]);
    const b = await deploy(
      app,
      u.headers,
      a.id,
      await tarball({ 'index.mjs': HANDLER, 'agent.json': '{"egress":"nope.example"}' }),
    );
    expect(b.statusCode).toBe(400);
    expect(b.json().errors).toEqual([expect.objectContaining({ pointer: '/agent.json/egress' })]);
    const c = await deploy(app, u.headers, a.id, await tarball({ 'index.mjs': HANDLER }), { egress: '["unterminated' });
    expect(c.statusCode).toBe(400);
    const d = await deploy(app, u.headers, a.id, await tarball({ 'index.mjs': HANDLER, 'agent.json': '{not json' }));
    expect(d.statusCode).toBe(400);
    expect(d.json().code).toBe('invalid_artifact');
  });
});

describe('egress at run time', () => {
  let allowed: string;
  beforeAll(async () => {
    const a = await createAgent(app, u);
    allowed = a.id;
    const egress = JSON.stringify([
      `allowed.test:${port}`,
      `rebind.test:${port}`,
      `private.test:${port}`,
      `169.254.169.254`,
      `allowed.test:${echoPort}`,
    ]);
    const dep = await deployReady(app, u.headers, a.id, await tarball({ 'index.mjs': HANDLER }), { egress });
    expect(dep.status).toBe('active');
  }, 120_000);

  it('reaches an allowed loopback upstream with plain fetch, over HTTP and through a CONNECT tunnel', async () => {
    const inv = await invoke(allowed, { urls: [`http://allowed.test:${port}/a`], tunnel: `allowed.test:${echoPort}` });
    expect(inv.status).toBe('succeeded');
    expect(inv.output.results).toEqual([{ url: `http://allowed.test:${port}/a`, status: 200, body: 'hello /a' }]);
    expect(inv.output.proxy).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(inv.output.tunnel).toBe('HTTP/1.1 200 Connection Established / pong');
  });

  it('refuses hosts not listed, the metadata address and private ranges (even when listed), and logs each refusal', async () => {
    const urls = [
      `http://denied.test:${port}/x`,
      'http://169.254.169.254/latest/meta-data/',
      `http://private.test:${port}/`,
      `http://rebind.test:${port}/`,
      `http://127.0.0.1:${port}/`,
    ];
    const inv = await invoke(allowed, { urls });
    expect(inv.status).toBe('succeeded');
    for (const r of inv.output.results) expect(r.status, r.url).toBeUndefined();
    const denied = inv.logs.filter((l: any) => l.stream === 'platform' && l.level === 'warn').map((l: any) => l.fields);
    expect(denied).toEqual([
      expect.objectContaining({ host: 'denied.test', port, reason: 'not_allowed' }),
      expect.objectContaining({ host: '169.254.169.254', port: 80, reason: 'blocked_address' }),
      expect.objectContaining({ host: 'private.test', reason: 'blocked_address' }),
      expect.objectContaining({ host: 'rebind.test', reason: 'blocked_address' }),
      expect.objectContaining({ host: '127.0.0.1', reason: 'not_allowed' }),
    ]);
    expect(inv.logs.find((l: any) => l.fields?.host === '169.254.169.254').message).toMatch(
      /^egress denied: CONNECT 169\.254\.169\.254:80: .*link_local/,
    );
  });

  it('keeps the proxy across warm invocations', async () => {
    const first = await invoke(allowed, { urls: [`http://allowed.test:${port}/1`] });
    const second = await invoke(allowed, { urls: [`http://allowed.test:${port}/2`] });
    expect(second.cold).toBe(false);
    expect(second.output.count).toBeGreaterThan(first.output.count - 1);
    expect(second.output.results[0]).toMatchObject({ status: 200, body: 'hello /2' });
  });

  it.skipIf(!probeNetworkIsolation())(
    'a deployment without egress has no network at all (no proxy, no loopback)',
    async () => {
      const a = await createAgent(app, u);
      await deployReady(app, u.headers, a.id, await tarball({ 'index.mjs': HANDLER }));
      const inv = await invoke(a.id, { urls: [`http://127.0.0.1:${port}/`, `http://allowed.test:${port}/`] });
      expect(inv.status).toBe('succeeded');
      expect(inv.output.proxy).toBeNull();
      expect(inv.output.results).toHaveLength(2);
      for (const r of inv.output.results) expect(r.error, r.url).toBeTruthy();
      expect(inv.logs.filter((l: any) => l.stream === 'platform')).toEqual([]);
    },
  );
});
