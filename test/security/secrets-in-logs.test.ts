/**
 * Secrets never logged (issue #11 §2.3): the real server at LOG_LEVEL=trace mints an API key, an
 * agent client secret (and rotates it), an upstream credential, refresh tokens, a password and a
 * deployment env value, and uses each; none of them appears anywhere in its stdout/stderr.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { basicAuth } from '../helpers/agents.js';
import { tarball } from '../modules/deployments/fixtures.js';
import { freePort } from '../helpers/net.js';
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js';

let server: ServerProcess;
beforeAll(async () => {
  const port = String(await freePort());
  server = startServerProcess({
    PORT: port,
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    LOG_LEVEL: 'trace',
    ALLOW_LOOPBACK_UPSTREAMS: 'on',
    SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
    ...(process.env.TEST_DATABASE_URL ? { DATABASE_URL: process.env.TEST_DATABASE_URL } : { DATABASE_IN_MEMORY: 'on' }),
    ...(process.env.TEST_REDIS_URL ? { REDIS_URL: process.env.TEST_REDIS_URL } : {}),
  });
  await server.waitFor(/agent platform ready/, 240_000);
}, 300_000);
afterAll(() => {
  if (server.child.exitCode === null) server.child.kill('SIGKILL');
});

/** `fetch` against the server; JSON body in, parsed body out. */
async function http(
  base: string,
  method: string,
  url: string,
  opts: { headers?: Record<string, string>; body?: unknown; form?: FormData } = {},
): Promise<{ status: number; body: any }> {
  const res = await fetch(`${base}${url}`, {
    method,
    headers: { ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}), ...opts.headers },
    body: opts.form ?? (opts.body !== undefined ? JSON.stringify(opts.body) : undefined),
  });
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) };
  } catch {
    return { status: res.status, body: text };
  }
}

it('no minted secret appears in the logs', { timeout: 300_000 }, async () => {
  const b = server.base;
  const secrets: Record<string, string> = {};
  const call = async (method: string, url: string, opts: Parameters<typeof http>[3], status: number) => {
    const res = await http(b, method, url, opts);
    expect(res.status, `${method} ${url}: ${JSON.stringify(res.body).slice(0, 300)}`).toBe(status);
    return res.body;
  };

  secrets.password = `Pw-${randomBytes(12).toString('hex')}`;
  const email = `logs-${randomBytes(4).toString('hex')}@example.test`;
  await call('POST', '/auth/register', { body: { email, password: secrets.password } }, 201);
  const login = await call('POST', '/auth/login', { body: { email, password: secrets.password } }, 200);
  secrets.accessToken = login.access_token;
  secrets.refreshToken = login.refresh_token;
  const refreshed = await call('POST', '/v1/auth/refresh', { body: { refresh_token: login.refresh_token } }, 200);
  secrets.refreshToken2 = refreshed.refresh_token;
  const h = { authorization: `Bearer ${refreshed.access_token}` };
  // A reused refresh token (family revoked) is refused — and must not be logged either.
  await call('POST', '/v1/auth/refresh', { body: { refresh_token: login.refresh_token } }, 401);

  const key = await call('POST', '/api-keys', { headers: h, body: { name: 'logs' } }, 201);
  secrets.apiKey = key.key;
  await call('GET', '/v1/auth/me', { headers: { 'x-api-key': key.key } }, 200);
  await call('GET', '/v1/auth/me', { headers: { authorization: `Bearer ${key.key}` } }, 200);

  const agent = await call('POST', '/v2/agents', { headers: h, body: { name: 'logs agent' } }, 201);
  const rotated = await call('POST', `/v2/agents/${agent.id}/rotate-secret`, { headers: h, body: {} }, 200);
  secrets.clientSecretOld = agent.client_secret;
  secrets.clientSecret = rotated.client_secret;
  const tok = await call(
    'POST',
    '/auth/agent/token',
    { body: { grant_type: 'client_credentials', client_id: agent.client_id, client_secret: rotated.client_secret } },
    200,
  );
  secrets.agentToken = tok.access_token;
  const basic = await fetch(`${b}/auth/agent/token`, {
    method: 'POST',
    headers: {
      authorization: basicAuth(agent.client_id, rotated.client_secret),
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: 'grant_type=client_credentials',
  });
  expect(basic.status).toBe(200);
  await call(
    'POST',
    '/auth/agent/token',
    { body: { grant_type: 'client_credentials', client_id: agent.client_id, client_secret: agent.client_secret } },
    401,
  );

  secrets.upstream = `up-${randomBytes(16).toString('hex')}`;
  await call(
    'POST',
    '/owner/services',
    {
      headers: h,
      body: {
        name: `logs-${randomBytes(3).toString('hex')}`,
        description: 'd',
        base_url: 'http://127.0.0.1:9',
        auth: { type: 'bearer', secret: secrets.upstream },
        tools: [{ name: 't', description: 't', method: 'GET', path: '/t', input_schema: { type: 'object' } }],
      },
    },
    201,
  );

  secrets.envValue = `env-${randomBytes(16).toString('hex')}`;
  const form = new FormData();
  form.append(
    'artifact',
    new Blob([
      new Uint8Array(
        await tarball({
          'package.json': '{"type":"module","main":"index.js"}',
          'index.js': 'export default async () => ({ ok: true });',
        }),
      ),
    ]),
    'agent.tar.gz',
  );
  form.append('env', JSON.stringify({ API_TOKEN: secrets.envValue }));
  const dep = await http(b, 'POST', `/v2/agents/${agent.id}/deploy`, { headers: h, form });
  expect([201, 202], JSON.stringify(dep.body)).toContain(dep.status);

  server.child.kill('SIGTERM');
  const { stderr } = await server.exited;
  const logs = `${server.lines.join('\n')}\n${stderr}`;
  expect(
    logs.split('\n').filter((l) => l.includes('"msg":"request"')).length,
    'the capture holds the request logs',
  ).toBeGreaterThan(10);
  for (const [name, value] of Object.entries(secrets)) {
    expect(logs.includes(value), `${name} appears in the logs`).toBe(false);
    // Signature or secret halves should not appear either (e.g. a JWT logged without its header).
    expect(logs.includes(value.slice(-24)), `the end of ${name} appears in the logs`).toBe(false);
  }
});
