/**
 * Scale-out, proven (issue 20): two API instances and a worker on one PostgreSQL database and
 * Redis, behind HAProxy, behave as one platform. Every step alternates between the instances
 * (requests go straight to API A or B; the load balancer's URL is every process's PUBLIC_URL and
 * the tenant's issuer). Runs in `npm test` when TEST_DATABASE_URL and TEST_REDIS_URL are set
 * (CI's second pass) and haproxy is installed (`.ci/run` installs it).
 */
import { randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser, fetchSend } from '../helpers/browser.js';
import { expectHttp, httpCall } from '../helpers/exec.js';
import { tarball } from '../modules/deployments/fixtures.js';
import { startJsonApi } from '../helpers/upstreams.js';
import { startCluster, topologyAvailable, type Cluster } from './cluster.js';

const available = topologyAvailable();
const weatherTool = {
  name: 'get_weather',
  description: 'Current weather for a city',
  method: 'GET',
  path: '/weather',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
const QUOTA = 20;

interface User {
  email: string;
  headers: { authorization: string };
}

describe.skipIf(!available.ok)(
  `topology: 2 API instances + worker + HAProxy on PostgreSQL + Redis ${available.why}`,
  () => {
    let c: Cluster;
    let A: string;
    let B: string;
    const at = (i: number) => (i % 2 === 0 ? A : B);

    beforeAll(async () => {
      c = await startCluster({ QUOTA_FREE_DAY: String(QUOTA), RATE_LIMIT_USER: '30', RATE_LIMIT_WINDOW_MS: '60000' });
      [A, B] = [c.apis[0].base, c.apis[1].base];
    }, 240_000);
    afterAll(async () => {
      await c?.close();
    }, 60_000);

    async function testUser(base: string, roles?: string[]): Promise<User> {
      const email = `topo-${randomBytes(5).toString('hex')}@example.test`;
      const { body } = await expectHttp(base, 'POST', '/auth/test', 200, {
        body: { email, ...(roles ? { roles } : {}) },
      });
      return { email, headers: { authorization: `Bearer ${body.access_token}` } };
    }

    async function registerWeather(
      base: string,
      owner: User,
      upstreamUrl: string,
    ): Promise<{ id: string; name: string }> {
      const name = `weather-${randomBytes(4).toString('hex')}`;
      const body = {
        name,
        description: 'Current weather by city',
        base_url: upstreamUrl,
        category: 'weather',
        auth: { type: 'bearer', secret: 'upstream-secret' },
        tools: [weatherTool],
      };
      return (await expectHttp(base, 'POST', '/owner/services', 201, { headers: owner.headers, body })).body;
    }

    /** Domain ownership by the HTTP file (token asked on B, checked on A) and one functional test. */
    async function verifyDomain(
      owner: User,
      serviceId: string,
      api: Awaited<ReturnType<typeof startJsonApi>>,
    ): Promise<void> {
      const { body: first } = await expectHttp(B, 'POST', `/v1/services/${serviceId}/verify-domain`, 200, {
        headers: owner.headers,
      });
      api.verificationToken = first.token;
      const { body: verified } = await expectHttp(A, 'POST', `/v1/services/${serviceId}/verify-domain`, 200, {
        headers: owner.headers,
      });
      expect(verified.status).toBe('verified');
      await expectHttp(B, 'POST', `/v1/services/${serviceId}/verification-config`, 200, {
        headers: owner.headers,
        body: { tests: [{ tool: 'get_weather', arguments: { city: 'Oslo' } }] },
      });
    }

    /** Poll the publish run (on B) until the worker finished it. */
    function publishRun(owner: User, serviceId: string): Promise<any> {
      return poll(
        async () => {
          const { body } = await expectHttp(B, 'GET', `/v1/services/${serviceId}/publish/verification-status`, 200, {
            headers: owner.headers,
          });
          return body.status === 'pending_verification' ? null : body;
        },
        60_000,
        'publish run',
      );
    }

    async function publishThroughWorker(
      owner: User,
      serviceId: string,
      api: Awaited<ReturnType<typeof startJsonApi>>,
    ): Promise<void> {
      await verifyDomain(owner, serviceId, api);
      await expectHttp(A, 'POST', `/v1/services/${serviceId}/publish`, 202, { headers: owner.headers });
      expect((await publishRun(owner, serviceId)).status).toBe('published');
    }

    it('the load balancer spreads requests over both instances and both are ready', async () => {
      for (const base of [A, B, c.lb]) await expectHttp(base, 'GET', '/readyz', 200);
      expect(c.apis[0].lines.some((l) => /"role":"api"/.test(l))).toBe(true);
    });

    it('signs in on one instance and uses the tokens on the other (simplified and 5-step flows)', async () => {
      const creds = {
        email: `ada-${randomBytes(4).toString('hex')}@example.test`,
        password: 'correct horse battery staple',
      };
      await expectHttp(A, 'POST', '/auth/register', 201, { body: { ...creds, name: 'Ada' } });
      const { body: tokens } = await expectHttp(B, 'POST', '/auth/login', 200, { body: creds });
      const { body: me } = await expectHttp(A, 'GET', '/v1/auth/me', 200, {
        headers: { authorization: `Bearer ${tokens.access_token}` },
      });
      expect(me.email).toBe(creds.email);
      const { body: refreshed } = await expectHttp(B, 'POST', '/v1/auth/refresh', 200, {
        body: { refresh_token: tokens.refresh_token },
      });
      await expectHttp(A, 'GET', '/v1/auth/me', 200, {
        headers: { authorization: `Bearer ${refreshed.access_token}` },
      });
      // The rotated refresh token is spent on both instances.
      await expectHttp(A, 'POST', '/v1/auth/refresh', 401, { body: { refresh_token: tokens.refresh_token } });

      // The spec's 5 steps: login URL from A, the tenant's pages through the load balancer, code exchanged on B.
      const redirectUri = 'http://127.0.0.1:9/callback';
      const { body: start } = await expectHttp(
        A,
        'GET',
        `/v1/auth/login?redirect_uri=${encodeURIComponent(redirectUri)}`,
        200,
      );
      expect(start.auth_url.startsWith(`${c.lb}/idp/authorize?`)).toBe(true);
      const back = await new Browser(fetchSend(c.lb)).login(start.auth_url, redirectUri, creds);
      const { body: set } = await expectHttp(B, 'POST', '/v1/auth/callback', 200, {
        body: { code: back.searchParams.get('code'), state: back.searchParams.get('state'), redirect_uri: redirectUri },
      });
      const { body: me2 } = await expectHttp(A, 'GET', '/v1/auth/me', 200, {
        headers: { authorization: `Bearer ${set.access_token}` },
      });
      expect(me2.user_id).toBe(me.user_id);
    });

    it('publishes through the worker and evicts caches across instances', async () => {
      const api = await startJsonApi();
      try {
        const owner = await testUser(A);
        const svc = await registerWeather(A, owner, api.url);
        const name = svc.name;
        await verifyDomain(owner, svc.id, api);
        // The APIs only enqueue (PROCESS_ROLE=api): with the worker gone, the run stays pending.
        await c.killWorker();
        await expectHttp(A, 'POST', `/v1/services/${svc.id}/publish`, 202, { headers: owner.headers });
        await new Promise((r) => setTimeout(r, 1500));
        const { body: pending } = await expectHttp(
          B,
          'GET',
          `/v1/services/${svc.id}/publish/verification-status`,
          200,
          { headers: owner.headers },
        );
        expect(pending.status).toBe('pending_verification');
        await c.restartWorker();
        const _done = await publishRun(owner, svc.id);
        expect(api.seen.filter((r) => r.url.startsWith('/weather'))).toHaveLength(1);

        // Execute on B (B caches the tool), change the tool's schema on A, execute on B again at once:
        // the cache entry was evicted over Redis (CACHE_TTL_MS would otherwise keep it for 5 s).
        await expectHttp(B, 'POST', '/subscriptions', 201, {
          headers: owner.headers,
          body: { service_id: svc.id, plan: 'free' },
        });
        const { body: session } = await expectHttp(A, 'POST', '/v1/agents', 201, { headers: owner.headers, body: {} });
        const run = (on: string) =>
          httpCall(on, 'POST', `/v1/agents/${session.id}/execute`, {
            headers: owner.headers,
            body: { service: name, tool: 'get_weather', arguments: { city: 'Oslo' } },
          });
        expect((await run(B)).status).toBe(200);
        await expectHttp(A, 'PATCH', `/owner/services/${svc.id}`, 200, {
          headers: owner.headers,
          body: {
            tools: [
              {
                ...weatherTool,
                input_schema: {
                  type: 'object',
                  properties: { city: { type: 'string' }, country: { type: 'string' } },
                  required: ['city', 'country'],
                },
              },
            ],
          },
        });
        const stale = await run(B);
        expect(stale.status).toBe(400);
        expect(stale.body.code).toBe('validation_failed');
      } finally {
        await api.close();
      }
    }, 120_000);

    it('counts quotas and rate limits once across both instances', async () => {
      const api = await startJsonApi();
      const owner = await testUser(A);
      const svc = await registerWeather(A, owner, api.url);
      await publishThroughWorker(owner, svc.id, api);
      const calls = api.seen.filter((r) => r.url.startsWith('/weather')).length;
      const user = await testUser(B, ['pro']); // pro: its rate limit (1200/min) stays out of the quota race
      await expectHttp(A, 'POST', '/subscriptions', 201, {
        headers: user.headers,
        body: { service_id: svc.id, plan: 'free' },
      });
      const { body: session } = await expectHttp(B, 'POST', '/v1/agents', 201, { headers: user.headers, body: {} });
      const answers = await Promise.all(
        Array.from({ length: 60 }, (_, i) =>
          httpCall(at(i), 'POST', `/v1/agents/${session.id}/execute`, {
            headers: user.headers,
            body: { service: svc.name, tool: 'get_weather', arguments: { city: `c${i}` } },
          }),
        ),
      );
      expect(answers.filter((r) => r.status === 200)).toHaveLength(QUOTA);
      const limited = answers.filter((r) => r.status === 429);
      expect(limited).toHaveLength(60 - QUOTA);
      expect(limited.every((r) => r.body.code === 'quota_exceeded')).toBe(true);
      expect(api.seen.filter((r) => r.url.startsWith('/weather')).length - calls).toBe(QUOTA);
      await api.close();

      // Rate limit of role `user` is 30 per window here: 40 requests alternating instances → 30 pass.
      const plain = await testUser(A);
      const hits = [];
      for (let i = 0; i < 40; i++) hits.push(await httpCall(at(i), 'GET', '/v1/auth/me', { headers: plain.headers }));
      expect(hits.filter((r) => r.status === 200).length).toBe(30);
      expect(hits.filter((r) => r.status === 429).length).toBe(10);
    }, 120_000);

    it('an MCP session continues when consecutive requests land on different instances', async () => {
      const api = await startJsonApi();
      const owner = await testUser(A);
      const svc = await registerWeather(A, owner, api.url);
      await publishThroughWorker(owner, svc.id, api);
      const user = await testUser(B, ['pro']);
      await expectHttp(A, 'POST', '/subscriptions', 201, {
        headers: user.headers,
        body: { service_id: svc.id, plan: 'free' },
      });

      // The SDK's own client; its fetch sends request n to instance n % 2 (initialize on A, the next on B, …).
      const served: Array<{ on: string; method: string; session: string | null; status: number }> = [];
      let n = 0;
      const alternate = async (url: string | URL, init?: RequestInit) => {
        const on = at(n++);
        const target = new URL(String(url));
        const res = await fetch(`${on}${target.pathname}${target.search}`, init);
        served.push({
          on,
          method: init?.method ?? 'GET',
          session: new Headers(init?.headers).get('mcp-session-id'),
          status: res.status,
        });
        return res;
      };
      const client = new Client({ name: 'topology-mcp', version: '1.0.0' });
      const transport = new StreamableHTTPClientTransport(new URL(`${c.lb}/mcp`), {
        requestInit: { headers: user.headers },
        fetch: alternate,
      });
      await client.connect(transport);
      const sid = transport.sessionId!;
      expect(sid).toMatch(/^mcs_/);
      const call = async (name: string, args: Record<string, unknown>) =>
        (await client.callTool({ name, arguments: args })) as { isError?: boolean; structuredContent?: any };

      const runs = [];
      for (let i = 0; i < 4; i++)
        runs.push(
          await call('execute_tool', { service: svc.name, tool: 'get_weather', arguments: { city: `mcp${i}` } }),
        );
      expect(runs.every((r) => !r.isError && r.structuredContent.status === 'succeeded')).toBe(true);
      // One platform session for the MCP session, whichever instance created it.
      expect(new Set(runs.map((r) => r.structuredContent.session_id)).size).toBe(1);
      const stored = await call('remember', { content: `The ${svc.name} forecast for Oslo says sleet tomorrow` });
      expect(stored.isError).toBeFalsy();
      const recalled = await call('recall', { query: `sleet Oslo ${svc.name}`, limit: 3 });
      expect(recalled.structuredContent.memories.map((m: any) => m.id)).toContain(stored.structuredContent.id);

      // Every POST after initialize carried the same session id, and both instances served it.
      const posts = served.filter((s) => s.method === 'POST' && s.session);
      expect(posts.length).toBeGreaterThanOrEqual(6);
      expect(posts.every((s) => s.session === sid && (s.status === 200 || s.status === 202))).toBe(true); // 202: notifications
      expect(new Set(posts.map((s) => s.on))).toEqual(new Set([A, B]));

      // Ended on one instance, the session is gone on the other (404: the client must initialize again).
      await transport.terminateSession();
      const after = await fetch(`${served.at(-1)!.on === A ? B : A}/mcp`, {
        method: 'POST',
        headers: {
          ...user.headers,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-session-id': sid,
          'mcp-protocol-version': '2025-06-18',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'tools/list' }),
      });
      expect(served.at(-1)!.method).toBe('DELETE');
      expect(after.status).toBe(404);
      await client.close();
      await api.close();
    }, 120_000);

    it('agent memory ETags hold across instances', async () => {
      const owner = await testUser(A, ['pro']);
      const { body: agent } = await expectHttp(A, 'POST', '/v2/agents', 201, {
        headers: owner.headers,
        body: { name: `kv-${randomBytes(3).toString('hex')}` },
      });
      const url = `/v2/agents/${agent.id}/memory/plan`;
      const first = await expectHttp(A, 'PUT', url, 201, { headers: owner.headers, body: { value: { step: 1 } } });
      const etag = first.headers.get('etag')!;
      expect(etag).toBeTruthy();
      await expectHttp(B, 'PUT', url, 200, {
        headers: { ...owner.headers, 'if-match': etag },
        body: { value: { step: 2 } },
      });
      const stale = await httpCall(A, 'PUT', url, {
        headers: { ...owner.headers, 'if-match': etag },
        body: { value: { step: 3 } },
      });
      expect(stale.status).toBe(412);
      const { body: list } = await expectHttp(B, 'GET', `/v2/agents/${agent.id}/memory`, 200, {
        headers: owner.headers,
      });
      expect(list.data.find((e: any) => e.key === 'plan')?.value).toEqual({ step: 2 });
    });

    it('deploys on the worker, invokes through both instances, and a rollback on one is seen on the other at once', async () => {
      const owner = await testUser(A, ['pro']); // pro: the polling below stays under the rate limit
      const { body: agent } = await expectHttp(B, 'POST', '/v2/agents', 201, {
        headers: owner.headers,
        body: { name: `dep-${randomBytes(3).toString('hex')}` },
      });
      const base = `/v2/agents/${agent.id}`;
      const deploy = async (on: string, source: string) => {
        const form = new FormData();
        form.append(
          'artifact',
          new Blob([new Uint8Array(await tarball({ 'index.mjs': source }))], { type: 'application/gzip' }),
          'agent.tgz',
        );
        const res = await fetch(`${on}${base}/deploy`, { method: 'POST', headers: owner.headers, body: form });
        expect(res.status).toBe(202);
        return (await res.json()) as { id: string; version: number };
      };
      const active = (version: number) =>
        poll(
          async () => {
            const { body } = await expectHttp(A, 'GET', `${base}/deployments`, 200, { headers: owner.headers });
            const d = body.data.find((x: any) => x.version === version);
            if (d?.status === 'failed') throw new Error(`v${version} failed: ${JSON.stringify(d)}`);
            return d?.status === 'active' ? d : null;
          },
          90_000,
          `v${version} active`,
        );
      const handler = (v: number) => `export async function handler(input) { return { v: ${v}, input }; }\n`;

      await deploy(A, handler(1));
      await active(1);
      await deploy(B, handler(2));
      await active(2);
      for (let i = 0; i < 4; i++) {
        const { body } = await expectHttp(at(i), 'POST', `${base}/invoke`, 200, {
          headers: owner.headers,
          body: { input: i },
        });
        expect(body.output).toEqual({ v: 2, input: i });
      }
      await expectHttp(A, 'POST', `${base}/deployments/rollback`, 200, { headers: owner.headers });
      const { body: after } = await expectHttp(B, 'POST', `${base}/invoke`, 200, {
        headers: owner.headers,
        body: { input: 'x' },
      });
      expect(after.output).toEqual({ v: 1, input: 'x' });

      // Kill the worker while it prepares v3 (the module's top level takes 4 s); the restarted worker
      // picks the stalled job up (BullMQ) and v3 becomes active exactly once.
      const slow = `await new Promise((r) => setTimeout(r, 4000));\n${handler(3)}`;
      await deploy(A, slow);
      await new Promise((r) => setTimeout(r, 1500));
      await c.killWorker();
      await c.restartWorker();
      await active(3);
      const { body: list } = await expectHttp(B, 'GET', `${base}/deployments`, 200, { headers: owner.headers });
      expect(list.data.map((d: any) => d.version).sort()).toEqual([1, 2, 3]);
      expect(list.data.filter((d: any) => d.status === 'active')).toHaveLength(1);
      const { body: v3 } = await expectHttp(A, 'POST', `${base}/invoke`, 200, {
        headers: owner.headers,
        body: { input: 3 },
      });
      expect(v3.output).toEqual({ v: 3, input: 3 });
    }, 180_000);
  },
);

async function poll<T>(fn: () => Promise<T | null>, timeoutMs: number, what: string): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
