import { afterAll, describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { petStoreDocument, startJsonApi, startMcpServer } from '../../helpers/upstreams.js';

const { app } = await setupApp();
const api = await startJsonApi();
const mcp = await startMcpServer();
afterAll(async () => {
  await Promise.all([api.close(), mcp.close()]);
});
const owner = await createUser(app);
let n = 0;
const uniq = (p: string) => `${p}-${Date.now().toString(36)}-${n++}`;

const tool = (over: Record<string, unknown> = {}) => ({
  name: 'ok_tool',
  description: 'fine',
  method: 'GET',
  path: '/weather',
  input_schema: { type: 'object', properties: { city: { type: 'string' } } },
  ...over,
});

async function register(payload: unknown, status = 400) {
  return (
    await call(
      app,
      { method: 'POST', url: '/owner/services', headers: owner.headers, payload: payload as object },
      status,
    )
  ).body;
}

const pointers = (body: any) => body.errors.map((e: any) => e.pointer).sort();

describe('registry — bad manifests list every problem with a JSON pointer', () => {
  it('reports all semantic problems of a native manifest at once', async () => {
    const body = await register({
      name: 'Bad Name!',
      description: '',
      base_url: 'ftp://example.test',
      auth: { type: 'header', secret: 's' },
      tools: [
        tool({ name: 'dup' }),
        tool({ name: 'dup', description: '' }),
        tool({ name: 'bad name', path: '/users/{id}' }),
        tool({ name: 'schema_bad', input_schema: { type: 'object', properties: { a: { type: 'strin' } } } }),
        tool({ name: 'not_object', input_schema: { type: 'string' } }),
        tool({ name: 'bad_out', output_schema: { type: 42 } }),
        tool({ name: 'no_slash', path: 'weather' }),
      ],
    });
    expect(body.code).toBe('validation_failed');
    expect(body.status).toBe(400);
    const ps = pointers(body);
    for (const p of [
      '/name',
      '/description',
      '/base_url',
      '/auth/name',
      '/tools/1/name',
      '/tools/1/description',
      '/tools/2/name',
      '/tools/2/path',
      '/tools/3/input_schema/properties/a/type',
      '/tools/4/input_schema/type',
      '/tools/5/output_schema/type',
      '/tools/6/path',
    ]) {
      expect(ps, p).toContain(p);
    }
    expect(body.errors.every((e: any) => e.in === 'body' && typeof e.message === 'string')).toBe(true);
    expect(body.errors.find((e: any) => e.pointer === '/tools/1/name').message).toMatch(/duplicates/);
    expect(body.errors.find((e: any) => e.pointer === '/tools/2/path').message).toMatch(/\{id\}/);
  });

  it('rejects unknown fields, wrong types and a missing source through the schema', async () => {
    const a = await register({ name: uniq('x'), description: 'd', base_url: api.url, tools: [tool({ extra: 1 })] });
    expect(pointers(a)).toContain('/tools/0/extra');
    const b = await register({ name: uniq('x'), description: 'd', base_url: api.url });
    expect(b.errors[0].pointer).toBe('/');
    expect(b.detail).toMatch(/exactly one source/);
    const c = await register({
      name: uniq('x'),
      description: 'd',
      base_url: api.url,
      tools: [tool()],
      mcp_url: mcp.mcpUrl,
    });
    expect(c.detail).toMatch(/got tools, mcp_url/);
    const d = await register({ name: uniq('x'), description: 'd', base_url: api.url, tools: [] });
    expect(pointers(d)).toEqual(['/tools']);
    const e = await register({
      name: uniq('x'),
      description: 'd',
      base_url: api.url,
      tools: [tool({ method: 'TRACE' })],
    });
    expect(pointers(e)).toContain('/tools/0/method');
    const f = await register({
      name: uniq('x'),
      description: 'd',
      base_url: api.url,
      tools: [tool({ input_schema: { type: 'object', $schema: 'http://json-schema.org/draft-04/schema#' } })],
    });
    expect(pointers(f)).toEqual(['/tools/0/input_schema/$schema']);
  });

  it('rejects malformed JSON and non-object bodies without a 500', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/owner/services',
      headers: { ...owner.headers, 'content-type': 'application/json' },
      payload: '{"name":',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('validation_failed');
    const arr = await app.inject({
      method: 'POST',
      url: '/owner/services',
      headers: { ...owner.headers, 'content-type': 'application/json' },
      payload: '[1,2]',
    });
    expect(arr.statusCode).toBe(400);
  });

  it('reports problems of an OpenAPI document', async () => {
    const a = await register({ openapi: { swagger: '2.0', info: { title: 't', version: '1' }, paths: {} } });
    expect(pointers(a)).toContain('/openapi/openapi');
    const b = await register({
      openapi: { openapi: '3.1.0', info: { title: 't', version: '1' }, servers: [{ url: api.url }], paths: {} },
    });
    expect(pointers(b)).toContain('/openapi/paths');
    const doc = petStoreDocument(api.url);
    delete (doc as any).servers;
    const c = await register({ openapi: doc });
    expect(pointers(c)).toContain('/base_url');
    const d = await register({ openapi_url: `${api.url}/missing.json` });
    expect(d.errors[0]).toMatchObject({ pointer: '/openapi_url' });
    expect(d.errors[0].message).toMatch(/404/);
    const e = await register({ openapi_url: 'not a url' });
    expect(pointers(e)).toEqual(['/openapi_url']);
  });

  it('reports an unreachable or broken MCP server', async () => {
    const a = await register({ mcp_url: `${api.url}/nope` });
    expect(a.errors[0].pointer).toBe('/mcp_url');
    const b = await register({ mcp_url: 'gopher://x' });
    expect(pointers(b)).toEqual(['/mcp_url']);
  });

  it('answers 409 for a taken name', async () => {
    const name = uniq('taken');
    await register({ name, description: 'd', base_url: api.url, tools: [tool()] }, 201);
    const other = await createUser(app);
    const res = await call(
      app,
      {
        method: 'POST',
        url: '/owner/services',
        headers: other.headers,
        payload: { name, description: 'd', base_url: api.url, tools: [tool()] },
      },
      409,
    );
    expect(res.body.code).toBe('conflict');
  });

  it('validates updates, and refuses tools for imported services and sync for inline sources', async () => {
    const { body: svc } = await call(
      app,
      {
        method: 'POST',
        url: '/owner/services',
        headers: owner.headers,
        payload: { name: uniq('u'), description: 'd', base_url: api.url, tools: [tool()] },
      },
      201,
    );
    const bad = await call(
      app,
      {
        method: 'PATCH',
        url: `/owner/services/${svc.id}`,
        headers: owner.headers,
        payload: { base_url: 'nope', tools: [tool({ name: 'x y' })] },
      },
      400,
    );
    expect(pointers(bad.body)).toEqual(['/base_url', '/tools/0/name']);
    await call(
      app,
      { method: 'PATCH', url: `/owner/services/${svc.id}`, headers: owner.headers, payload: { unknown: 1 } },
      400,
    );
    const sync = await call(
      app,
      { method: 'POST', url: `/owner/services/${svc.id}/sync`, headers: owner.headers },
      409,
    );
    expect(sync.body.code).toBe('invalid_state');

    const { body: m } = await call(
      app,
      { method: 'POST', url: '/owner/services', headers: owner.headers, payload: { mcp_url: mcp.mcpUrl } },
      201,
    );
    const t = await call(
      app,
      { method: 'PATCH', url: `/owner/services/${m.id}`, headers: owner.headers, payload: { tools: [tool()] } },
      400,
    );
    expect(pointers(t.body)).toEqual(['/tools']);
  });

  it('answers 404 for unknown services and a bad cursor with 400', async () => {
    await call(
      app,
      { method: 'GET', url: '/owner/services/svc_00000000000000000000000000', headers: owner.headers },
      404,
    );
    await call(
      app,
      { method: 'GET', url: '/services/svc_00000000000000000000000000/manifest', headers: owner.headers },
      404,
    );
    await call(app, { method: 'GET', url: '/owner/services?cursor=%%%', headers: owner.headers }, 400);
    await call(app, { method: 'GET', url: '/services?limit=1000', headers: owner.headers }, 400);
  });
});
