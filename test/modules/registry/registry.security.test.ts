import { afterAll, describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { describeAuthCases } from '../../helpers/auth-cases.js';
import { agentToken, createAgent } from '../../helpers/agents.js';
import { petStoreDocument, startJsonApi, startMcpServer } from '../../helpers/upstreams.js';

const { app } = await setupApp();
const api = await startJsonApi();
const mcp = await startMcpServer();
afterAll(async () => {
  await Promise.all([api.close(), mcp.close()]);
});

let n = 0;
const manifest = (over: Record<string, unknown> = {}) => ({
  name: `sec-${Date.now().toString(36)}-${n++}`,
  description: 'd',
  base_url: api.url,
  auth: { type: 'query', name: 'api_key', secret: 'query-secret' },
  tools: [{ name: 't', description: 'd', method: 'GET', path: '/weather', input_schema: { type: 'object' } }],
  ...over,
});

const owner = await createUser(app);
const intruder = await createUser(app);
const { body: svc } = await call(
  app,
  { method: 'POST', url: '/owner/services', headers: owner.headers, payload: manifest() },
  201,
);
const { body: report } = await call(
  app,
  {
    method: 'POST',
    url: `/v1/services/${svc.id}/report`,
    headers: owner.headers,
    payload: { tool_id: 't', reason: 'other' },
  },
  201,
);

/** Every owner-only route of the registry and publishing modules, for `svc`. */
const ownerRoutes = () =>
  [
    { method: 'GET', url: `/owner/services/${svc.id}` },
    { method: 'GET', url: `/owner/services/${svc.name}` },
    { method: 'PATCH', url: `/owner/services/${svc.id}`, payload: { display_name: 'pwned' } },
    { method: 'DELETE', url: `/owner/services/${svc.id}` },
    { method: 'POST', url: `/owner/services/${svc.id}/sync` },
    { method: 'POST', url: `/owner/services/${svc.id}/signing-secret` },
    { method: 'GET', url: `/owner/services/${svc.id}/reports` },
    { method: 'POST', url: `/owner/services/${svc.id}/reports/${report.id}/resolve` },
    { method: 'POST', url: `/v1/services/${svc.id}/publish` },
    { method: 'POST', url: `/v1/services/${svc.id}/publish/resubmit` },
    { method: 'GET', url: `/v1/services/${svc.id}/publish/verification-status` },
    { method: 'POST', url: `/v1/services/${svc.id}/verify-domain` },
    {
      method: 'POST',
      url: `/v1/services/${svc.id}/verification-config`,
      payload: { tests: [{ tool: 't', arguments: {} }] },
    },
    { method: 'POST', url: `/v1/services/${svc.id}/unpublish` },
    { method: 'PATCH', url: `/v1/services/${svc.id}/tools/${svc.tools[0].id}/rename`, payload: { name: 'pwned' } },
  ] as const;

describeAuthCases(
  'registry & publishing',
  () => app,
  () => [
    ...ownerRoutes(),
    { method: 'GET', url: '/services' },
    { method: 'GET', url: `/services/${svc.id}/manifest` },
    { method: 'POST', url: '/owner/services', payload: manifest() },
    { method: 'POST', url: `/v1/services/${svc.id}/report`, payload: { reason: 'other' } },
  ],
);

describe('registry & publishing — ownership', () => {
  it('answers 404 to another user on every owner-only route, and changes nothing', async () => {
    for (const r of ownerRoutes()) {
      const res = await app.inject({ ...r, headers: intruder.headers } as never);
      expect(res.statusCode, `${r.method} ${r.url}`).toBe(404);
      expect(res.json().code).toBe('not_found');
    }
    const { body } = await call(app, { method: 'GET', url: `/owner/services/${svc.id}`, headers: owner.headers }, 200);
    expect(body.display_name).not.toBe('pwned');
    expect(body.tools[0].name).toBe('t');
    expect(body.status).toBe('draft');
    const { body: mine } = await call(app, { method: 'GET', url: '/owner/services', headers: intruder.headers }, 200);
    expect(mine.data).toEqual([]);
    // Drafts are invisible to others in the marketplace and cannot be reported by them.
    await call(app, { method: 'GET', url: `/services/${svc.id}/manifest`, headers: intruder.headers }, 404);
    await call(
      app,
      { method: 'POST', url: `/v1/services/${svc.id}/report`, headers: intruder.headers, payload: { reason: 'other' } },
      404,
    );
  });

  it('keeps agents off the owner routes (403) while letting them browse', async () => {
    const agent = await agentToken(app, await createAgent(app, owner));
    for (const r of ownerRoutes().slice(0, 3)) {
      const res = await app.inject({ ...r, headers: agent.headers } as never);
      expect(res.statusCode, `${r.method} ${r.url}`).toBe(403);
    }
    await call(app, { method: 'POST', url: '/owner/services', headers: agent.headers, payload: manifest() }, 403);
    // Its owner's draft manifest is visible to the agent (same account).
    await call(app, { method: 'GET', url: `/services/${svc.id}/manifest`, headers: agent.headers }, 200);
  });
});

describe('registry — secrets and SSRF at registration', () => {
  it('never returns the upstream secret and shows the signing secret only at creation/rotation', async () => {
    const { body: detail, res } = await call(
      app,
      { method: 'GET', url: `/owner/services/${svc.id}`, headers: owner.headers },
      200,
    );
    expect(res.body).not.toContain('query-secret');
    expect(detail.auth).toEqual({ type: 'query', name: 'api_key' });
    expect(res.body).not.toContain(svc.signing_secret);
    const { res: list } = await call(app, { method: 'GET', url: '/owner/services', headers: owner.headers }, 200);
    expect(list.body).not.toContain('query-secret');
    const rot = await call(
      app,
      { method: 'POST', url: `/owner/services/${svc.id}/signing-secret`, headers: owner.headers },
      200,
    );
    expect(rot.res.headers['cache-control']).toBe('no-store');
  });

  it('refuses base URLs on private or link-local IP literals', async () => {
    for (const base of [
      'http://169.254.169.254',
      'http://10.0.0.1:8080',
      'http://[fd00::1]',
      'http://[::ffff:192.168.0.1]',
    ]) {
      const { body } = await call(
        app,
        { method: 'POST', url: '/owner/services', headers: owner.headers, payload: manifest({ base_url: base }) },
        400,
      );
      expect(
        body.errors.map((e: any) => e.pointer),
        base,
      ).toEqual(['/base_url']);
    }
  });

  it('refuses to fetch an OpenAPI document or list an MCP server on a blocked address', async () => {
    const a = await call(
      app,
      {
        method: 'POST',
        url: '/owner/services',
        headers: owner.headers,
        payload: { openapi_url: 'http://169.254.169.254/openapi.json' },
      },
      400,
    );
    expect(a.body.code).toBe('upstream_blocked');
    const b = await call(
      app,
      { method: 'POST', url: '/owner/services', headers: owner.headers, payload: { mcp_url: 'http://10.0.0.1/mcp' } },
      400,
    );
    expect(b.body.code).toBe('upstream_blocked');
  });

  it('does not follow external $refs of an OpenAPI document', async () => {
    const doc = petStoreDocument(api.url) as any;
    doc.paths['/pets'].post.requestBody.content['application/json'].schema = {
      $ref: `${api.url}/schemas/new-pet.json`,
    };
    const before = api.seen.length;
    const { body } = await call(
      app,
      { method: 'POST', url: '/owner/services', headers: owner.headers, payload: { openapi: doc } },
      201,
    );
    expect(api.seen.length).toBe(before);
    expect(body.warnings.some((w: any) => /\$ref/.test(w.message))).toBe(true);
  });
});

describe('registry — loopback upstreams with ALLOW_LOOPBACK_UPSTREAMS off', async () => {
  const strict = await setupApp({ ALLOW_LOOPBACK_UPSTREAMS: 'off' });
  const user = await createUser(strict.app);

  it('refuses loopback base URLs, OpenAPI URLs and MCP servers', async () => {
    const a = await call(
      strict.app,
      {
        method: 'POST',
        url: '/owner/services',
        headers: user.headers,
        payload: manifest({ base_url: 'http://127.0.0.1:9' }),
      },
      400,
    );
    expect(a.body.errors[0]).toMatchObject({ pointer: '/base_url' });
    const before = mcp.seen.length;
    const b = await call(
      strict.app,
      { method: 'POST', url: '/owner/services', headers: user.headers, payload: { mcp_url: mcp.mcpUrl } },
      400,
    );
    expect(b.body.code).toBe('upstream_blocked');
    const c = await call(
      strict.app,
      {
        method: 'POST',
        url: '/owner/services',
        headers: user.headers,
        payload: { openapi_url: `http://localhost:${api.port}/openapi.json` },
      },
      400,
    );
    expect(c.body.code).toBe('upstream_blocked');
    expect(mcp.seen.length).toBe(before);
  });
});
