import { afterAll, describe, expect, it } from 'vitest';
import { resolveExecutableTool, getServiceSummary } from '../../../src/modules/registry/executable.js';
import { decryptSecret, encryptSecret } from '../../../src/lib/secrets.js';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { petStoreDocument, startJsonApi, startMcpServer, startOpenApiServer } from '../../helpers/upstreams.js';

const { app, ctx } = await setupApp();
const api = await startJsonApi();
const pets = await startOpenApiServer();
const mcp = await startMcpServer();
afterAll(async () => {
  await Promise.all([api.close(), pets.close(), mcp.close()]);
});

let n = 0;
const uniq = (p: string) => `${p}-${Date.now().toString(36)}-${n++}`;

/** A valid native manifest against the JSON API. */
function weatherManifest(baseUrl: string, name = uniq('weather')) {
  return {
    name,
    display_name: 'Weather',
    description: 'Current weather by city',
    base_url: baseUrl,
    category: 'weather',
    tags: ['weather', 'demo'],
    version: '1.0.0',
    auth: { type: 'bearer', secret: 'upstream-secret-123' },
    tools: [
      {
        name: 'get_weather',
        description: 'Current weather for a city',
        method: 'GET',
        path: '/weather',
        input_schema: {
          type: 'object',
          properties: { city: { type: 'string', minLength: 1 } },
          required: ['city'],
          additionalProperties: false,
        },
        output_schema: { type: 'object', properties: { city: { type: 'string' }, temp_c: { type: 'number' } } },
      },
      {
        name: 'get_user',
        description: 'A user by id',
        method: 'get',
        path: '/users/{id}',
        input_schema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
      },
    ],
  };
}

describe('registry — registration from a native manifest', () => {
  it('registers, returns tools with ids and the signing secret once, and never the upstream secret', async () => {
    const owner = await createUser(app);
    const manifest = weatherManifest(api.url);
    const { body, res } = await call(
      app,
      { method: 'POST', url: '/owner/services', headers: owner.headers, payload: manifest },
      201,
    );
    expect(res.headers['cache-control']).toBe('no-store');
    expect(body.id).toMatch(/^svc_[0-9a-z]{26}$/);
    expect(body).toMatchObject({
      name: manifest.name,
      display_name: 'Weather',
      status: 'draft',
      source: 'manifest',
      base_url: api.url,
      category: 'weather',
      tags: ['weather', 'demo'],
      version: '1.0.0',
      auth: { type: 'bearer', name: null },
    });
    expect(body.signing_secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(body.tools.map((t: any) => t.name)).toEqual(['get_weather', 'get_user']);
    expect(body.tools[0].id).toMatch(/^tool_/);
    expect(body.tools[1].method).toBe('GET');
    expect(body.tools[0].status).toBe('active');
    expect(body.warnings).toEqual([]);
    expect(res.body).not.toContain('upstream-secret-123');

    const { body: detail } = await call(
      app,
      { method: 'GET', url: `/owner/services/${body.id}`, headers: owner.headers },
      200,
    );
    expect(detail.signing_secret).toBeUndefined();
    expect(JSON.stringify(detail)).not.toContain('upstream-secret-123');
    expect(detail.checklist.manifest_valid.status).toBe('pending');
    expect(detail.checklist.domain_verified.status).toBe('pending');
    expect(detail.reports).toEqual({ open: 0, degraded_tools: 0 });
    expect(detail.tools[0].open_reports).toBe(0);

    const exec = await resolveExecutableTool(ctx, body.id, 'get_weather');
    expect(exec).not.toBeNull();
    expect(exec!.upstreamAuth).toEqual({ type: 'bearer', secret: 'upstream-secret-123' });
    expect(exec!.signingSecret).toBe(body.signing_secret);
    expect(exec!.service).toMatchObject({
      id: body.id,
      ownerId: owner.userId,
      name: manifest.name,
      status: 'draft',
      baseUrl: api.url,
      source: 'manifest',
      mcpUrl: null,
    });
    expect(exec!.tool).toMatchObject({ name: 'get_weather', method: 'GET', path: '/weather', status: 'active' });
    expect(await resolveExecutableTool(ctx, manifest.name, body.tools[1].id)).toMatchObject({
      tool: { name: 'get_user' },
    });
    expect(await resolveExecutableTool(ctx, body.id, 'nope')).toBeNull();
    expect(await resolveExecutableTool(ctx, 'svc_00000000000000000000000000', 'get_weather')).toBeNull();
    expect(await getServiceSummary(ctx, manifest.name)).toEqual({
      id: body.id,
      name: manifest.name,
      ownerId: owner.userId,
      status: 'draft',
    });
  });

  it('lists the owner services with cursor pagination', async () => {
    const owner = await createUser(app);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push(
        (
          await call(
            app,
            { method: 'POST', url: '/owner/services', headers: owner.headers, payload: weatherManifest(api.url) },
            201,
          )
        ).body.id,
      );
    const { body: p1 } = await call(
      app,
      { method: 'GET', url: '/owner/services?limit=2', headers: owner.headers },
      200,
    );
    expect(p1.data.map((s: any) => s.id)).toEqual([ids[2], ids[1]]);
    expect(p1.data[0].tool_count).toBe(2);
    expect(p1.next_cursor).toBeTruthy();
    const { body: p2 } = await call(
      app,
      { method: 'GET', url: `/owner/services?limit=2&cursor=${p1.next_cursor}`, headers: owner.headers },
      200,
    );
    expect(p2.data.map((s: any) => s.id)).toEqual([ids[0]]);
    expect(p2.next_cursor).toBeNull();
  });

  it('derives a unique slug when the name is absent… for OpenAPI sources', async () => {
    const owner = await createUser(app);
    const { body: a } = await call(
      app,
      {
        method: 'POST',
        url: '/owner/services',
        headers: owner.headers,
        payload: {
          openapi: petStoreDocument(pets.url),
          auth: { type: 'header', name: 'x-api-key', secret: 'pet-key' },
        },
      },
      201,
    );
    const { body: b } = await call(
      app,
      {
        method: 'POST',
        url: '/owner/services',
        headers: owner.headers,
        payload: {
          openapi: petStoreDocument(pets.url),
          auth: { type: 'header', name: 'x-api-key', secret: 'pet-key' },
        },
      },
      201,
    );
    expect(a.name).toMatch(/^pet-store/);
    expect(b.name).toMatch(/^pet-store-/);
    expect(a.name).not.toBe(b.name);
  });

  it('updates top-level fields and the tool list (ids of kept tools survive), rotates the signing secret, deletes', async () => {
    const owner = await createUser(app);
    const m = weatherManifest(api.url);
    const { body: svc } = await call(
      app,
      { method: 'POST', url: '/owner/services', headers: owner.headers, payload: m },
      201,
    );
    const weatherId = svc.tools[0].id;
    const { body: upd } = await call(
      app,
      {
        method: 'PATCH',
        url: `/owner/services/${svc.id}`,
        headers: owner.headers,
        payload: {
          display_name: 'Weather 2',
          tags: ['x'],
          category: null,
          auth: { type: 'none' },
          tools: [m.tools[0], { ...m.tools[1], name: 'user_by_id' }],
        },
      },
      200,
    );
    expect(upd).toMatchObject({
      display_name: 'Weather 2',
      tags: ['x'],
      category: null,
      auth: { type: 'none', name: null },
    });
    expect(upd.tools.map((t: any) => t.name)).toEqual(['get_weather', 'user_by_id']);
    expect(upd.tools[0].id).toBe(weatherId);
    expect((await resolveExecutableTool(ctx, svc.id, 'get_weather'))!.upstreamAuth).toEqual({ type: 'none' });

    const { body: rot } = await call(
      app,
      { method: 'POST', url: `/owner/services/${svc.id}/signing-secret`, headers: owner.headers },
      200,
    );
    expect(rot.signing_secret).toMatch(/^whsec_/);
    expect(rot.signing_secret).not.toBe(svc.signing_secret);
    expect((await resolveExecutableTool(ctx, svc.id, 'get_weather'))!.signingSecret).toBe(rot.signing_secret);

    await call(app, { method: 'DELETE', url: `/owner/services/${svc.id}`, headers: owner.headers }, 204);
    await call(app, { method: 'GET', url: `/owner/services/${svc.id}`, headers: owner.headers }, 404);
    expect(await getServiceSummary(ctx, svc.id)).toBeNull();
    expect(await resolveExecutableTool(ctx, svc.id, 'get_weather')).toBeNull();
  });
});

describe('registry — registration from OpenAPI', () => {
  it('turns each operation into a tool, folding parameters and body into one input_schema', async () => {
    const owner = await createUser(app);
    const { body } = await call(
      app,
      {
        method: 'POST',
        url: '/owner/services',
        headers: owner.headers,
        payload: {
          openapi: petStoreDocument(pets.url),
          category: 'pets',
          auth: { type: 'header', name: 'x-api-key', secret: 'pet-key' },
        },
      },
      201,
    );
    expect(body).toMatchObject({
      source: 'openapi',
      display_name: 'Pet Store',
      description: 'Pets, by id and by tag.',
      version: '1.2.0',
      base_url: pets.url,
      category: 'pets',
      source_url: null,
    });
    const byName = Object.fromEntries(body.tools.map((t: any) => [t.name, t]));
    expect(Object.keys(byName).sort()).toEqual(['createPet', 'get_pets_petId', 'listPets']);
    expect(byName.listPets.input_schema).toEqual({
      type: 'object',
      properties: {
        limit: { type: 'integer', minimum: 1, maximum: 100, description: 'page size' },
        'x-trace': { type: 'string' },
      },
    });
    expect(byName.createPet).toMatchObject({ method: 'POST', path: '/pets', description: 'Create a pet' });
    expect(byName.createPet.input_schema).toEqual({
      type: 'object',
      properties: { name: { type: 'string', minLength: 1 }, tag: { type: 'string' } },
      required: ['name'],
    });
    expect(byName.get_pets_petId.input_schema.required).toEqual(['petId']);
    // OpenAPI 3.0 `nullable` became a JSON Schema type union in the output schema.
    expect(byName.get_pets_petId.output_schema.properties.tag).toEqual({ type: ['string', 'null'] });

    const exec = await resolveExecutableTool(ctx, body.id, 'listPets');
    expect(exec!.tool.argLocations).toEqual({ limit: 'query', 'x-trace': 'header' });
    expect((await resolveExecutableTool(ctx, body.id, 'createPet'))!.tool.argLocations).toEqual({
      name: 'body',
      tag: 'body',
    });
    expect((await resolveExecutableTool(ctx, body.id, 'get_pets_petId'))!.tool.argLocations).toEqual({ petId: 'path' });
    expect(exec!.upstreamAuth).toEqual({ type: 'header', name: 'x-api-key', secret: 'pet-key' });
  });

  it('fetches openapi_url through the guarded client, and sync re-reads it keeping renamed tools', async () => {
    const owner = await createUser(app);
    const { body } = await call(
      app,
      {
        method: 'POST',
        url: '/owner/services',
        headers: owner.headers,
        payload: { openapi_url: `${pets.url}/openapi.json`, name: uniq('pets') },
      },
      201,
    );
    expect(body.source_url).toBe(`${pets.url}/openapi.json`);
    expect(body.tools).toHaveLength(3);
    expect(body.warnings.some((w: any) => w.pointer === '/auth')).toBe(true);
    const list = body.tools.find((t: any) => t.name === 'listPets');
    await call(
      app,
      {
        method: 'PATCH',
        url: `/v1/services/${body.id}/tools/${list.id}/rename`,
        headers: owner.headers,
        payload: { name: 'pets_list' },
      },
      200,
    );
    const { body: synced } = await call(
      app,
      { method: 'POST', url: `/owner/services/${body.id}/sync`, headers: owner.headers },
      200,
    );
    const again = synced.tools.find((t: any) => t.id === list.id);
    expect(again.name).toBe('pets_list');
    expect(again.aliases).toEqual(['listPets']);
    expect(synced.tools).toHaveLength(3);
  });

  it('reads a YAML document from openapi_url', async () => {
    const owner = await createUser(app);
    const { body } = await call(
      app,
      {
        method: 'POST',
        url: '/owner/services',
        headers: owner.headers,
        payload: { openapi_url: `${pets.url}/openapi.yaml` },
      },
      201,
    );
    expect(body.display_name).toBe('Pet Store');
    expect(body.tools.map((t: any) => t.name)).toEqual(['listPets', 'createPet', 'get_pets_petId']);
  });
});

describe('registry — registration from an MCP server', () => {
  it('lists tools over Streamable HTTP and syncs them', async () => {
    const owner = await createUser(app);
    const { body } = await call(
      app,
      {
        method: 'POST',
        url: '/owner/services',
        headers: owner.headers,
        payload: { mcp_url: mcp.mcpUrl, description: 'A calculator', tags: ['math'] },
      },
      201,
    );
    expect(body).toMatchObject({
      source: 'mcp',
      display_name: 'Calculator MCP',
      version: '2.1.0',
      base_url: mcp.url,
      source_url: mcp.mcpUrl,
      description: 'A calculator',
    });
    expect(body.name).toMatch(/^calculator-mcp/);
    const add = body.tools.find((t: any) => t.name === 'add');
    expect(add).toMatchObject({ method: 'MCP', path: 'add', description: 'Add two numbers' });
    expect(add.input_schema.type).toBe('object');
    expect(add.input_schema.required).toEqual(['a', 'b']);
    expect(add.input_schema.$schema).toBeUndefined();
    // The tool's declared outputSchema (MCP 2025-06-18) is kept; tools without one have null.
    expect(add.output_schema).toMatchObject({
      type: 'object',
      properties: { sum: { type: 'number' } },
      required: ['sum'],
    });
    expect(add.output_schema.$schema).toBeUndefined();
    expect(body.tools.find((t: any) => t.name === 'echo').output_schema).toBeNull();
    expect(body.tools.map((t: any) => t.name).sort()).toEqual(['add', 'echo', 'explode']);

    const exec = await resolveExecutableTool(ctx, body.id, 'add');
    expect(exec!.service.mcpUrl).toBe(mcp.mcpUrl);

    const { body: synced } = await call(
      app,
      { method: 'POST', url: `/owner/services/${body.id}/sync`, headers: owner.headers },
      200,
    );
    expect(synced.tools.find((t: any) => t.name === 'add').id).toBe(add.id);
  });

  it('sends the upstream credential to the MCP server', async () => {
    const locked = await startMcpServer({ requireToken: 'mcp-token' });
    try {
      const owner = await createUser(app);
      await call(
        app,
        {
          method: 'POST',
          url: '/owner/services',
          headers: owner.headers,
          payload: { mcp_url: locked.mcpUrl, description: 'x' },
        },
        400,
      );
      const { body } = await call(
        app,
        {
          method: 'POST',
          url: '/owner/services',
          headers: owner.headers,
          payload: { mcp_url: locked.mcpUrl, description: 'x', auth: { type: 'bearer', secret: 'mcp-token' } },
        },
        201,
      );
      expect(body.tools).toHaveLength(3);
    } finally {
      await locked.close();
    }
  });
});

describe('registry — marketplace', () => {
  it('hides drafts from /services; the owner sees the manifest, others get 404', async () => {
    const owner = await createUser(app);
    const other = await createUser(app);
    const { body } = await call(
      app,
      { method: 'POST', url: '/owner/services', headers: owner.headers, payload: weatherManifest(api.url) },
      201,
    );
    const { body: list } = await call(app, { method: 'GET', url: '/services?limit=100', headers: other.headers }, 200);
    expect(list.data.map((s: any) => s.id)).not.toContain(body.id);
    const { body: man } = await call(
      app,
      { method: 'GET', url: `/services/${body.id}/manifest`, headers: owner.headers },
      200,
    );
    expect(man).toMatchObject({ id: body.id, status: 'draft', auth: { type: 'bearer', name: null } });
    expect(man.tools).toHaveLength(2);
    expect(JSON.stringify(man)).not.toContain('upstream-secret-123');
    await call(app, { method: 'GET', url: `/services/${body.id}/manifest`, headers: other.headers }, 404);
  });
});

describe('secrets', () => {
  it('round-trips with AES-256-GCM and uses a fresh IV each time', () => {
    const a = encryptSecret(ctx, 'hello');
    const b = encryptSecret(ctx, 'hello');
    expect(a).not.toBe(b);
    expect(a).toMatch(/^v1\./);
    expect(decryptSecret(ctx, a)).toBe('hello');
    const parts = a.split('.');
    const tampered = [parts[0], parts[1], parts[2], Buffer.from('zzzz').toString('base64url')].join('.');
    expect(() => decryptSecret(ctx, tampered)).toThrow(/cannot be decrypted/);
  });
});
