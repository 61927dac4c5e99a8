/**
 * Upstream TLS trust: the system roots, plus `UPSTREAM_CA_FILE` when set — never "no
 * verification". And `guardedFetch` with `redirect: 'manual'` hands a 3xx back unfollowed (the
 * identity provider's metadata-document fetch relies on it).
 */
import { readFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import type { AppContext } from '../../../src/context.js';
import { guardedFetch } from '../../../src/upstream/http.js';
import { UpstreamPool } from '../../../src/upstream/pool.js';

const tls = (name: string) => fileURLToPath(new URL(`../../fixtures/tls/${name}`, import.meta.url));

const server = https.createServer(
  { key: readFileSync(tls('loopback-key.pem')), cert: readFileSync(tls('loopback-cert.pem')) },
  (req, res) => {
    if (req.url === '/moved') return void res.writeHead(302, { location: '/doc' }).end();
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  },
);
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const origin = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;

const pools: UpstreamPool[] = [];
afterAll(async () => {
  await Promise.all(pools.map((p) => p.close()));
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

/** The slice of an app context guardedFetch reads, for `env`. */
function contextFor(env: Record<string, string>): AppContext {
  const config = loadConfig({ UPSTREAM_TIMEOUT_MS: '3000', ...env } as NodeJS.ProcessEnv);
  const upstream = new UpstreamPool(config);
  pools.push(upstream);
  return { config, upstream } as unknown as AppContext;
}

describe('upstream TLS trust (UPSTREAM_CA_FILE)', () => {
  it('refuses a certificate no trusted CA signed', async () => {
    const fetchIt = guardedFetch(contextFor({ ALLOW_LOOPBACK_UPSTREAMS: 'on' }));
    await expect(fetchIt(`${origin}/doc`)).rejects.toMatchObject({ code: 'upstream_error' });
  });

  it('trusts the CA file besides the system roots, and the address guard still applies', async () => {
    const trusted = guardedFetch(
      contextFor({ ALLOW_LOOPBACK_UPSTREAMS: 'on', UPSTREAM_CA_FILE: tls('loopback-cert.pem') }),
    );
    const res = await trusted(`${origin}/doc`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });

    const guarded = guardedFetch(
      contextFor({ ALLOW_LOOPBACK_UPSTREAMS: 'off', UPSTREAM_CA_FILE: tls('loopback-cert.pem') }),
    );
    await expect(guarded(`${origin}/doc`)).rejects.toMatchObject({ code: 'upstream_blocked' });
  });

  it("returns a redirect unfollowed with redirect: 'manual', follows it otherwise", async () => {
    const f = guardedFetch(contextFor({ ALLOW_LOOPBACK_UPSTREAMS: 'on', UPSTREAM_CA_FILE: tls('loopback-cert.pem') }));
    const manual = await f(`${origin}/moved`, { redirect: 'manual' });
    expect(manual.status).toBe(302);
    expect(manual.headers.get('location')).toBe('/doc');
    const followed = await f(`${origin}/moved`);
    expect(followed.status).toBe(200);
  });
});
