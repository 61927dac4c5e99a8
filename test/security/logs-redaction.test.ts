/**
 * What the real server writes to its log stream (stdout, pino JSON), read line by line:
 * - credentials in a query string are replaced by `[redacted]` under every common name (`api_key`,
 *   `apikey`, `key`, `x-api-key`, `password`, `secret`, `authorization`, any case or encoding),
 *   by the one secret-name rule the execution memory uses too; other parameters stay readable;
 * - an SSRF refusal is a client error: 400 `upstream_blocked`, its request line at `info`, and
 *   no `error` line for it.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isSecretName } from '../../src/lib/secret-names.js';
import { execute, expectHttp, newSession, registerService } from '../helpers/exec.js';
import { freePort } from '../helpers/net.js';
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { startToolUpstream, type ToolUpstream } from '../helpers/tool-upstream.js';

let server: ServerProcess;
let upstream: ToolUpstream;
beforeAll(async () => {
  const port = String(await freePort());
  upstream = await startToolUpstream();
  const engine: Record<string, string> = process.env.TEST_DATABASE_URL
    ? {
        DATABASE_URL: process.env.TEST_DATABASE_URL,
        ...(process.env.TEST_REDIS_URL ? { REDIS_URL: process.env.TEST_REDIS_URL } : {}),
      }
    : { DATABASE_IN_MEMORY: 'on' };
  // LOG_LEVEL=info: the level operators run at; loopback upstreams admitted so only the redirect to 169.254.169.254 is refused.
  server = startServerProcess({
    ...engine,
    PORT: port,
    LOG_LEVEL: 'info',
    ALLOW_LOOPBACK_UPSTREAMS: 'on',
    SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
  });
  await server.waitFor(/agent platform ready/, 240_000);
}, 300_000);
afterAll(async () => {
  if (server.child.exitCode === null) server.child.kill('SIGKILL');
  await upstream?.close();
});

/** The parsed log lines of the request whose `x-request-id` is `reqId` (waits for its request line). */
async function linesOf(reqId: string): Promise<Array<Record<string, any>>> {
  await server.waitFor(new RegExp(`"reqId":"${reqId}".*"msg":"request"`), 20_000);
  return server.lines.filter((l) => l.includes(`"reqId":"${reqId}"`)).map((l) => JSON.parse(l));
}

async function testUser(): Promise<Record<string, string>> {
  const { body } = await expectHttp(server.base, 'POST', '/auth/test', 200, {
    body: { email: `logs-${randomBytes(4).toString('hex')}@example.test` },
  });
  return { authorization: `Bearer ${body.access_token}` };
}

describe('query-string credentials in the request log', () => {
  it('are redacted under every common name; other parameters stay readable', async () => {
    const names = [
      'api_key',
      'apikey',
      'key',
      'x-api-key',
      'password',
      'secret',
      'authorization',
      'API_KEY',
      'Api-Key',
      'X-API-KEY',
      'Authorization',
      'access_token',
      'client_secret',
      'code',
      'state',
      'apiKey',
      'private_key',
      'pass',
    ];
    const values = names.map((n) => `SECRET${randomBytes(6).toString('hex')}${n.length}`);
    const pairs = names.map((n, i) => `${encodeURIComponent(n)}=${values[i]}`);
    // The same name percent-encoded is the same parameter.
    const encoded = `SECRET${randomBytes(6).toString('hex')}enc`;
    pairs.push(`api%5Fkey=${encoded}`);
    const visible = `visible-${randomBytes(4).toString('hex')}`;
    const res = await fetch(`${server.base}/v1/auth/me?${pairs.join('&')}&q=${visible}&author=${visible}`, {
      headers: await testUser(),
    });
    const reqId = res.headers.get('x-request-id')!;
    const lines = await linesOf(reqId);
    const request = lines.find((l) => l.msg === 'request')!;
    expect(request.req.url).toContain(`q=${visible}`);
    expect(request.req.url).toContain(`author=${visible}`);
    for (const n of names) expect(request.req.url).toContain(`${encodeURIComponent(n)}=[redacted]`);
    expect(request.req.url).toContain('api%5Fkey=[redacted]');
    const everything = server.lines.join('\n');
    for (const v of [...values, encoded]) expect(everything).not.toContain(v);
  });

  it('the rule is the execution memory’s: the same names are secret there', () => {
    for (const n of [
      'api_key',
      'apikey',
      'key',
      'x-api-key',
      'password',
      'secret',
      'authorization',
      'clientSecret',
      'accessToken',
      'X-Auth-Token',
      'card_number',
      'pin',
      'code_verifier',
    ])
      expect(isSecretName(n), n).toBe(true);
    for (const n of ['q', 'city', 'author', 'keyword', 'passengers', 'compass', 'monkey', 'limit', 'destination'])
      expect(isSecretName(n), n).toBe(false);
  });
});

describe('SSRF refusal', () => {
  it('answers 400 upstream_blocked, logged at info, with no error line', async () => {
    const owner = await testUser();
    const svc = await registerService(server.base, { headers: owner } as never, {
      name: `ssrf-log-${randomBytes(4).toString('hex')}`,
      description: 'ssrf',
      base_url: upstream.url,
      tools: [
        {
          name: 'redirect',
          description: 'redirect',
          method: 'GET',
          path: '/redirect',
          input_schema: { type: 'object', properties: { to: { type: 'string' } } },
        },
      ],
    });
    const sid = await newSession(server.base, owner);
    const res = await execute(server.base, owner, sid, {
      service: svc.name,
      tool: 'redirect',
      arguments: { to: 'http://169.254.169.254/latest/meta-data/' },
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      code: 'upstream_blocked',
      status: 400,
      detail: expect.stringMatching(/link_local/),
    });
    const lines = await linesOf(res.headers.get('x-request-id')!);
    const request = lines.find((l) => l.msg === 'request')!;
    expect(request).toMatchObject({ level: 30, res: { statusCode: 400 } });
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
  });
});
