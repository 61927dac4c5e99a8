/**
 * The guarded upstream client: the SSRF address decision (pure: no connection is made for the
 * non-loopback addresses), and end-to-end behaviour with loopback targets only.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { AppError } from '../../../src/http/errors.js';
import { classifyAddress, isAddressAllowed } from '../../../src/upstream/address.js';
import { setUpstreamResolver, upstreamFetch, type HostResolver } from '../../../src/upstream/http.js';
import { mcpListTools } from '../../../src/upstream/mcp.js';
import { setupApp } from '../../helpers/app.js';
import { startJsonApi, startMcpServer } from '../../helpers/upstreams.js';

describe('address decision (no connection made)', () => {
  const refused = [
    '169.254.169.254',
    '169.254.0.1',
    '10.0.0.1',
    '192.168.1.1',
    '172.16.0.1',
    '172.31.255.255',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '198.18.0.1',
    'fd00::1',
    'fc00::1',
    'fe80::1',
    'fe80::1%eth0',
    'ff02::1',
    '::',
    '::ffff:10.0.0.1',
    '::ffff:169.254.169.254',
    '::ffff:192.168.0.1',
    '::ffff:a00:1', // IPv4-mapped 10.0.0.1 in hex form
    '64:ff9b::a00:1', // NAT64 of 10.0.0.1
    '2002:a00:1::1', // 6to4 of 10.0.0.1
    '2001:db8::1',
  ];
  const loopback = ['127.0.0.1', '127.255.0.9', '::1', '::ffff:127.0.0.1', '::ffff:7f00:1'];
  const publicOnes = [
    '93.184.216.34',
    '8.8.8.8',
    '172.32.0.1',
    '100.128.0.1',
    '2606:4700::1',
    '2a00:1450:4001::1',
    '::ffff:93.184.216.34',
  ];

  it.each(refused)('refuses %s with or without the loopback flag', (ip) => {
    expect(isAddressAllowed(ip, false)).toBe(false);
    expect(isAddressAllowed(ip, true)).toBe(false);
  });
  it.each(loopback)('admits loopback %s only with the flag', (ip) => {
    expect(classifyAddress(ip)).toBe('loopback');
    expect(isAddressAllowed(ip, false)).toBe(false);
    expect(isAddressAllowed(ip, true)).toBe(true);
  });
  it.each(publicOnes)('admits public %s', (ip) => {
    expect(classifyAddress(ip)).toBe('public');
    expect(isAddressAllowed(ip, false)).toBe(true);
  });
  it('names the class of refused addresses', () => {
    expect(classifyAddress('169.254.169.254')).toBe('link_local');
    expect(classifyAddress('100.64.0.1')).toBe('cgnat');
    expect(classifyAddress('fd00::1')).toBe('private');
    expect(classifyAddress('not-an-ip')).toBe('invalid');
    expect(isAddressAllowed('not-an-ip', true)).toBe(false);
  });
});

async function expectCode(p: Promise<unknown>, code: string, detail?: RegExp): Promise<AppError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  expect((err as AppError).code).toBe(code);
  if (detail) expect((err as AppError).message).toMatch(detail);
  return err as AppError;
}

const api = await startJsonApi();
const other = await startJsonApi();
const mcp = await startMcpServer();
afterAll(async () => {
  await Promise.all([api.close(), other.close(), mcp.close()]);
});

describe('guarded client with ALLOW_LOOPBACK_UPSTREAMS off', async () => {
  const { ctx } = await setupApp({ ALLOW_LOOPBACK_UPSTREAMS: 'off' });

  it('refuses a loopback IP and sends nothing', async () => {
    const before = api.seen.length;
    await expectCode(
      upstreamFetch(ctx, { method: 'GET', url: `${api.url}/weather?city=x` }),
      'upstream_blocked',
      /loopback/,
    );
    await expectCode(
      upstreamFetch(ctx, { method: 'GET', url: `http://[::1]:${api.port}/weather` }),
      'upstream_blocked',
    );
    expect(api.seen.length).toBe(before);
  });

  it('refuses a host name that resolves to 127.0.0.1 (localhost)', async () => {
    const before = api.seen.length;
    await expectCode(
      upstreamFetch(ctx, { method: 'GET', url: `http://localhost:${api.port}/weather?city=x` }),
      'upstream_blocked',
      /localhost resolves to a loopback address/,
    );
    expect(api.seen.length).toBe(before);
  });

  it('refuses MCP servers on loopback too', async () => {
    const before = mcp.seen.length;
    await expectCode(mcpListTools(ctx, mcp.mcpUrl), 'upstream_blocked');
    expect(mcp.seen.length).toBe(before);
  });
});

describe('guarded client with ALLOW_LOOPBACK_UPSTREAMS on', async () => {
  const { ctx } = await setupApp({ ALLOW_LOOPBACK_UPSTREAMS: 'on' });
  let restore: HostResolver | null = null;
  afterEach(() => {
    if (restore) setUpstreamResolver(ctx, restore);
    restore = null;
  });
  /** Pretend DNS: `name` resolves to `address` (no DNS traffic). */
  const fakeDns = (name: string, address: string) => {
    const prev = setUpstreamResolver(ctx, async (host) =>
      host === name ? [{ address, family: address.includes(':') ? 6 : 4 }] : prev(host),
    );
    restore = prev;
  };

  it('reaches loopback upstreams, by IP and by name', async () => {
    const res = await upstreamFetch(ctx, { method: 'GET', url: `${api.url}/weather?city=Oslo` });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body.toString())).toEqual({ city: 'Oslo', temp_c: 21 });
    expect(res.headers['content-type']).toBe('application/json');
    expect(res.durationMs).toBeGreaterThanOrEqual(0);
    const byName = await upstreamFetch(ctx, {
      method: 'POST',
      url: `http://localhost:${api.port}/echo`,
      headers: { 'content-type': 'application/json' },
      body: '{"a":1}',
    });
    expect(JSON.parse(byName.body.toString())).toEqual({ a: 1 });
  });

  it('still refuses link-local and private targets (nothing leaves loopback)', async () => {
    await expectCode(
      upstreamFetch(ctx, { method: 'GET', url: 'http://169.254.169.254/latest/meta-data/' }),
      'upstream_blocked',
      /link_local/,
    );
    await expectCode(upstreamFetch(ctx, { method: 'GET', url: 'http://10.0.0.1/' }), 'upstream_blocked', /private/);
    await expectCode(upstreamFetch(ctx, { method: 'GET', url: 'http://[fd00::1]/' }), 'upstream_blocked');
    await expectCode(upstreamFetch(ctx, { method: 'GET', url: 'http://[::ffff:10.0.0.1]/' }), 'upstream_blocked');
  });

  it('refuses a host name that resolves to the metadata address', async () => {
    fakeDns('metadata.attacker.test', '169.254.169.254');
    await expectCode(
      upstreamFetch(ctx, { method: 'GET', url: 'http://metadata.attacker.test/' }),
      'upstream_blocked',
      /169\.254\.169\.254/,
    );
  });

  it('refuses an upstream redirecting to a blocked address, by IP or by name', async () => {
    const before = api.seen.length;
    await expectCode(
      upstreamFetch(ctx, {
        method: 'GET',
        url: `${api.url}/redirect?to=${encodeURIComponent('http://169.254.169.254/latest/meta-data/')}`,
      }),
      'upstream_blocked',
      /redirect target/,
    );
    fakeDns('internal.attacker.test', '10.1.2.3');
    await expectCode(
      upstreamFetch(ctx, {
        method: 'GET',
        url: `${api.url}/redirect?to=${encodeURIComponent('http://internal.attacker.test/')}`,
      }),
      'upstream_blocked',
      /10\.1\.2\.3/,
    );
    expect(api.seen.length).toBe(before + 2); // only the two loopback hops were sent
  });

  it('follows allowed redirects, dropping credentials across origins', async () => {
    const target = `http://localhost:${other.port}/users/7`;
    const res = await upstreamFetch(ctx, {
      method: 'GET',
      url: `${api.url}/redirect?to=${encodeURIComponent(target)}`,
      headers: { authorization: 'Bearer top-secret', 'x-api-key': 'k' },
    });
    expect(res.status).toBe(200);
    expect(res.url).toBe(target);
    const hop = other.seen.at(-1)!;
    expect(hop.url).toBe('/users/7');
    expect(hop.headers.authorization).toBeUndefined();
    expect(hop.headers['x-api-key']).toBeUndefined();
    expect(api.seen.at(-1)!.headers.authorization).toBe('Bearer top-secret');
  });

  it('gives up after 5 redirects', async () => {
    let url = `${api.url}/users/1`;
    for (let i = 0; i < 6; i++) url = `${api.url}/redirect?to=${encodeURIComponent(url)}`;
    await expectCode(upstreamFetch(ctx, { method: 'GET', url }), 'upstream_error', /more than 5/);
  });

  it('refuses non-http schemes and URLs with credentials', async () => {
    await expectCode(upstreamFetch(ctx, { method: 'GET', url: 'file:///etc/passwd' }), 'upstream_blocked', /scheme/);
    await expectCode(
      upstreamFetch(ctx, { method: 'GET', url: `http://u:p@127.0.0.1:${api.port}/` }),
      'upstream_blocked',
      /credentials/,
    );
    await expectCode(
      upstreamFetch(ctx, { method: 'GET', url: `${api.url}/redirect?to=${encodeURIComponent('file:///etc/passwd')}` }),
      'upstream_blocked',
    );
  });

  it('times out and caps the response size', async () => {
    await expectCode(upstreamFetch(ctx, { method: 'GET', url: `${api.url}/slow`, timeoutMs: 200 }), 'upstream_timeout');
    await expectCode(
      upstreamFetch(ctx, { method: 'GET', url: `${api.url}/big`, maxResponseBytes: 64 * 1024 }),
      'upstream_error',
      /larger than the 65536-byte limit/,
    );
  });

  it('caps a chunked response without Content-Length', async () => {
    const server = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const chunk = 'y'.repeat(16 * 1024);
      let i = 0;
      const tick = () => {
        if (i++ >= 20 || res.destroyed) return res.end();
        res.write(chunk, tick);
      };
      tick();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const port = (server.address() as AddressInfo).port;
      await expectCode(
        upstreamFetch(ctx, { method: 'GET', url: `http://127.0.0.1:${port}/`, maxResponseBytes: 50_000 }),
        'upstream_error',
        /larger than/,
      );
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('reports an unreachable upstream as upstream_error', async () => {
    const server = http.createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    await new Promise<void>((r) => server.close(() => r()));
    await expectCode(
      upstreamFetch(ctx, { method: 'GET', url: `http://127.0.0.1:${port}/` }),
      'upstream_error',
      /refused/,
    );
  });

  it('lists MCP tools through the same guard', async () => {
    const listed = await mcpListTools(ctx, mcp.mcpUrl);
    expect(listed.serverInfo).toEqual({ name: 'Calculator MCP', version: '2.1.0' });
    expect(listed.tools.map((t) => t.name).sort()).toEqual(['add', 'echo', 'explode']);
  });
});
