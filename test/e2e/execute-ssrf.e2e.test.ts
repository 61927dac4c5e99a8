/**
 * SSRF guard on the execution path with ALLOW_LOOPBACK_UPSTREAMS off: a service whose base_url is
 * `localhost`, a host name that resolves to 127.0.0.1, and an upstream that redirects to loopback
 * are refused before any byte reaches the target. All traffic stays on loopback: host names are
 * resolved by a test resolver, and refused targets are never connected to.
 */
import { describe, expect, it } from 'vitest';
import { setUpstreamResolver, type HostResolver } from '../../src/upstream/http.js';
import { createUser, setupApp } from '../helpers/app.js';
import { execute, expectHttp, httpCall, listen, newSession, registerService } from '../helpers/exec.js';
import { startToolUpstream } from '../helpers/tool-upstream.js';

const TEST_HOSTS: Record<string, string> = { 'loopback.example.test': '127.0.0.1', 'hop.example.test': '127.0.0.1' };
/** Both apps resolve the test host names to loopback (fake DNS, per app). */
function fakeDns(ctx: Parameters<typeof setUpstreamResolver>[0]): void {
  const previous: HostResolver = setUpstreamResolver(ctx, async (host) =>
    TEST_HOSTS[host] ? [{ address: TEST_HOSTS[host], family: 4 }] : previous(host),
  );
}

const { app, ctx } = await setupApp({ ALLOW_LOOPBACK_UPSTREAMS: 'off' });
fakeDns(ctx);
const base = await listen(app);
/** A second app with loopback admitted, for the redirect cases (its first hop must be reachable). */
const second = await setupApp({ ALLOW_LOOPBACK_UPSTREAMS: 'on' });
fakeDns(second.ctx);
const secondBase = await listen(second.app);
const upstream = await startToolUpstream();

const tools = [
  { name: 'fast', description: 'fast', method: 'GET', path: '/fast', input_schema: { type: 'object' } },
  {
    name: 'redirect',
    description: 'redirect',
    method: 'GET',
    path: '/redirect',
    input_schema: { type: 'object', properties: { to: { type: 'string' } } },
  },
];

async function blocked(
  baseUrl: string,
  tool = 'fast',
  args: Record<string, unknown> = {},
  on: { app: typeof app } = { app },
) {
  const b = on.app === app ? base : secondBase;
  const owner = await createUser(on.app);
  const svc = await registerService(b, owner, {
    name: `ssrf-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`,
    description: 'ssrf',
    base_url: baseUrl,
    tools,
  });
  const sid = await newSession(b, owner.headers);
  const a = await execute(b, owner.headers, sid, { service: svc.name, tool, arguments: args });
  return { a, sid, owner };
}

describe('execute — SSRF with loopback upstreams off', () => {
  it('refuses a localhost base_url before sending anything', async () => {
    const before = upstream.seen.length;
    const { a, sid, owner } = await blocked(`http://localhost:${upstream.port}`);
    expect(a.status).toBe(400);
    expect(a.body.code).toBe('upstream_blocked');
    expect(a.body.detail).toMatch(/loopback/);
    expect(upstream.seen.length).toBe(before);
    // The refused call is still recorded as a failed execution.
    const { body: s } = await expectHttp(base, 'GET', `/v1/agents/${sid}`, 200, { headers: owner.headers });
    expect(s.executions[0]).toMatchObject({ status: 'failed', error: { code: 'upstream_blocked' } });
  });

  it('refuses a host name that resolves to 127.0.0.1, and 127.0.0.1 literals already at registration', async () => {
    const before = upstream.seen.length;
    const named = await blocked(`http://loopback.example.test:${upstream.port}`);
    expect(named.a.status).toBe(400);
    expect(named.a.body.code).toBe('upstream_blocked');
    expect(named.a.body.detail).toMatch(/resolves to a loopback address/);
    const owner = await createUser(app);
    const { status, body } = await httpCall(base, 'POST', '/owner/services', {
      headers: owner.headers,
      body: { name: `ssrf-literal-${Date.now().toString(36)}`, description: 'ssrf', base_url: upstream.url, tools },
    });
    expect(status).toBe(400);
    expect(body.errors[0].pointer).toBe('/base_url');
    expect(upstream.seen.length).toBe(before);
  });
});

describe('execute — SSRF on redirect hops', () => {
  it('refuses a redirect to the cloud metadata address (even with loopback admitted)', async () => {
    const before = upstream.seen.length;
    const { a } = await blocked(upstream.url, 'redirect', { to: 'http://169.254.169.254/latest/meta-data/' }, second);
    expect(a.status).toBe(400);
    expect(a.body.code).toBe('upstream_blocked');
    expect(a.body.detail).toMatch(/link_local.*redirect/);
    expect(upstream.seen.slice(before).map((r) => r.url)).toEqual([
      '/redirect?to=http%3A%2F%2F169.254.169.254%2Flatest%2Fmeta-data%2F',
    ]);
  });

  it('refuses a redirect to loopback: the redirect target receives nothing', async () => {
    // The first hop stands in for a public upstream: this app's guarded connection pool was
    // created while loopback was admitted (as a public address is), then loopback is switched off,
    // so only the per-hop check of the redirect target can stop the request.
    const hop = `http://hop.example.test:${upstream.port}`;
    const target = `http://127.0.0.1:${upstream.port}/items/secret`;
    const warm = await blocked(hop, 'fast', {}, second);
    expect(warm.a.status).toBe(200);
    second.ctx.config.upstream.allowLoopback = false;
    const before = upstream.seen.length;
    const { a } = await blocked(hop, 'redirect', { to: target }, second);
    expect(a.status).toBe(400);
    expect(a.body.code).toBe('upstream_blocked');
    expect(a.body.detail).toMatch(/loopback.*redirect/);
    expect(upstream.seen.slice(before).map((r) => r.url)).toEqual([`/redirect?to=${encodeURIComponent(target)}`]);
    expect(upstream.seenAt('/items/secret')).toEqual([]);
  });
});
