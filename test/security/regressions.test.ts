/**
 * Regression tests for inputs that answered 500 in a probe of main (issue #11 §3.3–3.5): deep
 * JSON, numbers beyond a column's range, and lone UTF-16 surrogates. Each must be a 400 problem.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { agentToken, createAgent } from '../helpers/agents.js';
import { createUser, setupApp, type TestUser } from '../helpers/app.js';

let app: Awaited<ReturnType<typeof setupApp>>['app'];
let owner: TestUser;
let agentId: string;
let agentHeaders: { authorization: string };

beforeAll(async () => {
  ({ app } = await setupApp());
  owner = await createUser(app);
  const agent = await createAgent(app, owner);
  agentId = agent.id;
  ({ headers: agentHeaders } = await agentToken(app, agent));
});

function expectProblem(
  res: { statusCode: number; headers: Record<string, unknown>; body: string },
  status = 400,
): void {
  expect(res.statusCode, res.body.slice(0, 300)).toBe(status);
  expect(String(res.headers['content-type'])).toContain('application/problem+json');
}

describe('deep JSON (§3.3)', () => {
  const depth = 5_000;
  const arrays = `${'['.repeat(depth)}${']'.repeat(depth)}`;
  const objects = `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

  it.each([
    ['POST', '/memory', 'content'],
    ['POST', '/v2/agents', 'metadata'],
    ['PUT', '/v2/memory/deep', 'value'],
  ])('%s %s with 5,000 levels of arrays and objects → 400', async (method, url, field) => {
    for (const nested of [arrays, objects]) {
      const headers = url.startsWith('/v2/memory') ? agentHeaders : owner.headers;
      const res = await app.inject({
        method: method as 'POST',
        url,
        headers: { ...headers, 'content-type': 'application/json' },
        payload: `{"${field}":${nested}}`,
      });
      expectProblem(res);
      expect(res.json().code).toBe('validation_failed');
    }
  });

  it('a whole body nested 5,000 levels → 400', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/memory',
      headers: { ...owner.headers, 'content-type': 'application/json' },
      payload: arrays,
    });
    expectProblem(res);
  });

  it('64 levels are still accepted', async () => {
    const value = `${'['.repeat(60)}1${']'.repeat(60)}`;
    const res = await app.inject({
      method: 'PUT',
      url: '/v2/memory/deep-ok',
      headers: { ...agentHeaders, 'content-type': 'application/json' },
      payload: `{"value":${value}}`,
    });
    expect(res.statusCode, res.body).toBe(201);
  });
});

describe('numbers beyond their range (§3.4)', () => {
  const lists = [
    '/v2/agents',
    '/memory',
    '/memory/paginated',
    '/api-keys',
    '/subscriptions',
    '/v1/sessions',
    '/owner/services',
    '/services',
    `/v2/agents/${'agt_x'}/deployments`,
  ];
  it.each(lists.flatMap((url) => ['limit', 'page', 'page_size'].map((q) => [url, q])))(
    '%s?%s=1e400 → 400',
    async (url, q) => {
      for (const v of ['1e400', '-1e400', '1e308', '2147483648', '9007199254740993']) {
        const res = await app.inject({ method: 'GET', url: `${url}?${q}=${v}`, headers: owner.headers });
        expect(res.statusCode, `${url}?${q}=${v}: ${res.body.slice(0, 200)}`).toBeLessThan(500);
      }
    },
  );

  it.each(['rollback', 'redeploy'])(
    'POST /v2/agents/:id/deployments/%s with an out-of-range version → 400',
    async (op) => {
      for (const v of ['1e308', '2147483648', '1e400', '-1']) {
        const res = await app.inject({
          method: 'POST',
          url: `/v2/agents/${agentId}/deployments/${op}`,
          headers: { ...owner.headers, 'content-type': 'application/json' },
          payload: `{"version":${v}}`,
        });
        expectProblem(res);
        expect(res.json().code).toBe('validation_failed');
      }
    },
  );
});

describe('lone surrogates (§3.5)', () => {
  it.each(['\\ud800', '\\udfff', 'a\\ud800b'])(
    'PUT /v2/memory/:key and /v2/agents/:id/memory/:key refuse %s alike',
    async (s) => {
      const payload = `{"value":"${s}"}`;
      const own = await app.inject({
        method: 'PUT',
        url: '/v2/memory/lone',
        headers: { ...agentHeaders, 'content-type': 'application/json' },
        payload,
      });
      const other = await app.inject({
        method: 'PUT',
        url: `/v2/agents/${agentId}/memory/lone`,
        headers: { ...agentHeaders, 'content-type': 'application/json' },
        payload,
      });
      expectProblem(own);
      expectProblem(other);
      expect(other.json().code).toBe(own.json().code);
    },
  );

  it('a lone surrogate in an object key or nested value is refused too', async () => {
    for (const payload of ['{"value":{"\\ud800":1}}', '{"value":[["\\udc00"]]}']) {
      const res = await app.inject({
        method: 'PUT',
        url: `/v2/agents/${agentId}/memory/nested`,
        headers: { ...agentHeaders, 'content-type': 'application/json' },
        payload,
      });
      expectProblem(res);
    }
  });

  it('a well-formed pair (emoji) is stored and read back', async () => {
    const res = await app.inject({
      method: 'PUT',
      url: `/v2/agents/${agentId}/memory/emoji`,
      headers: agentHeaders,
      payload: { value: '😀 \ud83d\ude00' },
    });
    expect(res.statusCode, res.body).toBe(201);
    const back = await app.inject({ method: 'GET', url: '/v2/memory/emoji', headers: agentHeaders });
    expect(back.json().value).toBe('😀 😀');
  });
});
