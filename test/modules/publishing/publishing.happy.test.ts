import { afterAll, describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { createAgent, agentToken } from '../../helpers/agents.js';
import { startJsonApi, startMcpServer, startOpenApiServer } from '../../helpers/upstreams.js';
import { publishService, registerService, uniq, verifyDomainByHttp, waitForRun, weatherManifest } from './helpers.js';

const { app } = await setupApp();
const api = await startJsonApi();
const mcp = await startMcpServer();
const pets = await startOpenApiServer();
afterAll(async () => {
  await Promise.all([api.close(), mcp.close(), pets.close()]);
});

describe('publishing — the whole flow to published', () => {
  it('verifies the domain by HTTP file, runs the test calls in the background and publishes', async () => {
    const owner = await createUser(app);
    const svc = await registerService(
      app,
      owner,
      weatherManifest(api.url, { category: uniq('cat'), tags: [uniq('tag')] }),
    );

    const { first, body: verified } = await verifyDomainByHttp(app, owner, svc.id, api);
    expect(first.status).toBe('pending');
    expect(first.token).toMatch(/^apv_[0-9a-f]{40}$/);
    expect(first.methods).toEqual([
      { type: 'dns', record_type: 'TXT', name: '_agent-platform.127.0.0.1', value: first.token },
      { type: 'http', url: `${api.url}/.well-known/agent-platform-verification.txt`, content: first.token },
    ]);
    expect(verified).toMatchObject({
      status: 'verified',
      method: 'http',
      token: first.token,
      host: `127.0.0.1:${api.port}`,
    });
    expect(verified.verified_at).toBeTruthy();

    const tests = [
      {
        tool: 'get_weather',
        arguments: { city: 'Oslo' },
        expect: {
          status: 200,
          json_schema: { type: 'object', required: ['temp_c'], properties: { temp_c: { type: 'number' } } },
        },
      },
      { tool: 'get_user', arguments: { id: '42' } },
    ];
    const { body: cfg } = await call(
      app,
      { method: 'POST', url: `/v1/services/${svc.id}/verification-config`, headers: owner.headers, payload: { tests } },
      200,
    );
    expect(cfg).toEqual({ service_id: svc.id, tests });

    const seenBefore = api.seen.length;
    const { body: started } = await call(
      app,
      { method: 'POST', url: `/v1/services/${svc.id}/publish`, headers: owner.headers },
      202,
    );
    expect(started.status).toBe('pending_verification');
    expect(started.checklist.manifest_valid.status).toBe('passed');
    expect(started.checklist.domain_verified.status).toBe('passed');
    expect(['pending', 'passed']).toContain(started.checklist.functional_verification.status);

    const done = await waitForRun(app, owner, svc.id);
    expect(done.status).toBe('published');
    expect(done.verification.state).toBe('passed');
    expect(done.verification.tests).toHaveLength(2);
    expect(done.verification.tests[0]).toMatchObject({
      tool: 'get_weather',
      status: 'passed',
      http_status: 200,
      error: null,
    });
    expect(typeof done.verification.tests[0].latency_ms).toBe('number');
    expect(done.verification.finished_at).toBeTruthy();
    expect(Object.values(done.checklist).map((c: any) => c.status)).toEqual(['passed', 'passed', 'passed']);

    // The test calls reached the real upstream, authenticated and signed.
    const calls = api.seen.slice(seenBefore).filter((r) => r.url.startsWith('/weather') || r.url.startsWith('/users'));
    expect(calls.map((r) => r.url)).toEqual(['/weather?city=Oslo', '/users/42']);
    expect(calls[0].headers.authorization).toBe('Bearer upstream-secret');
    expect(calls[0].headers['x-agent-platform-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);

    // Marketplace: visible to others, filterable.
    const other = await createUser(app);
    const { body: all } = await call(app, { method: 'GET', url: '/services?limit=100', headers: other.headers }, 200);
    const item = all.data.find((s: any) => s.id === svc.id);
    expect(item).toMatchObject({ name: svc.name, tool_count: 3, category: svc.category });
    expect(item.published_at).toBeTruthy();
    const { body: byCat } = await call(
      app,
      { method: 'GET', url: `/services?category=${svc.category}`, headers: other.headers },
      200,
    );
    expect(byCat.data.map((s: any) => s.id)).toEqual([svc.id]);
    const { body: byTag } = await call(
      app,
      { method: 'GET', url: `/services?tag=${svc.tags[0]}`, headers: other.headers },
      200,
    );
    expect(byTag.data.map((s: any) => s.id)).toEqual([svc.id]);
    const { body: byQ } = await call(
      app,
      { method: 'GET', url: `/services?q=${encodeURIComponent(svc.name.slice(0, 20))}`, headers: other.headers },
      200,
    );
    expect(byQ.data.map((s: any) => s.id)).toContain(svc.id);
    const { body: none } = await call(
      app,
      { method: 'GET', url: `/services?q=${encodeURIComponent('100%_no_such')}`, headers: other.headers },
      200,
    );
    expect(none.data).toEqual([]);
    const { body: man } = await call(
      app,
      { method: 'GET', url: `/services/${svc.name}/manifest`, headers: other.headers },
      200,
    );
    expect(man.status).toBe('published');
    expect(JSON.stringify(man)).not.toContain('upstream-secret');

    // Agents can browse the marketplace too.
    const agent = await agentToken(app, await createAgent(app, other));
    const { body: viaAgent } = await call(
      app,
      { method: 'GET', url: `/services?category=${svc.category}`, headers: agent.headers },
      200,
    );
    expect(viaAgent.data.map((s: any) => s.id)).toEqual([svc.id]);
  });

  it('paginates the marketplace with a cursor', async () => {
    const owner = await createUser(app);
    const category = uniq('pg');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push(
        (
          await publishService(app, owner, api, weatherManifest(api.url, { category }), [
            { tool: 'get_user', arguments: { id: '1' } },
          ])
        ).id,
      );
    }
    const { body: p1 } = await call(
      app,
      { method: 'GET', url: `/services?category=${category}&limit=2`, headers: owner.headers },
      200,
    );
    expect(p1.data.map((s: any) => s.id)).toEqual([ids[2], ids[1]]);
    const { body: p2 } = await call(
      app,
      { method: 'GET', url: `/services?category=${category}&limit=2&cursor=${p1.next_cursor}`, headers: owner.headers },
      200,
    );
    expect(p2.data.map((s: any) => s.id)).toEqual([ids[0]]);
    expect(p2.next_cursor).toBeNull();
  });

  it('publishes an OpenAPI service; test calls place each argument where the document says', async () => {
    const owner = await createUser(app);
    const before = pets.seen.length;
    await publishService(
      app,
      owner,
      pets,
      { openapi_url: `${pets.url}/openapi.json`, auth: { type: 'header', name: 'x-api-key', secret: 'pet-key' } },
      [
        {
          tool: 'listPets',
          arguments: { limit: 1, 'x-trace': 'abc' },
          expect: { json_schema: { type: 'array', maxItems: 1 } },
        },
        {
          tool: 'createPet',
          arguments: { name: 'Bo', tag: 'fish' },
          expect: { status: 201, json_schema: { type: 'object', required: ['id'] } },
        },
        {
          tool: 'get_pets_petId',
          arguments: { petId: 2 },
          expect: { json_schema: { properties: { name: { const: 'Tom' } } } },
        },
      ],
    );
    const calls = pets.seen.slice(before).filter((r) => r.url.startsWith('/pets'));
    expect(calls.map((r) => `${r.method} ${r.url}`)).toEqual(['GET /pets?limit=1', 'POST /pets', 'GET /pets/2']);
    expect(calls[0].headers['x-trace']).toBe('abc');
    expect(JSON.parse(calls[1].body)).toEqual({ name: 'Bo', tag: 'fish' });
    expect(calls.every((r) => r.headers['x-api-key'] === 'pet-key')).toBe(true);
  });

  it('publishes an MCP service whose test calls go through tools/call', async () => {
    const owner = await createUser(app);
    const svc = await publishService(app, owner, mcp, { mcp_url: mcp.mcpUrl, description: 'Calculator' }, [
      {
        tool: 'add',
        arguments: { a: 2, b: 3 },
        expect: { json_schema: { type: 'object', required: ['sum'], properties: { sum: { const: 5 } } } },
      },
    ]);
    const { body } = await call(
      app,
      { method: 'GET', url: `/v1/services/${svc.id}/publish/verification-status`, headers: owner.headers },
      200,
    );
    expect(body.verification.tests[0]).toMatchObject({ tool: 'add', status: 'passed', http_status: null });
  });
});

describe('publishing — rejection, unpublish and resubmit', () => {
  it('rejects a service whose functional test fails, then publishes after a fixed config is resubmitted', async () => {
    const owner = await createUser(app);
    const svc = await registerService(app, owner, weatherManifest(api.url));
    await verifyDomainByHttp(app, owner, svc.id, api);
    await call(
      app,
      {
        method: 'POST',
        url: `/v1/services/${svc.id}/verification-config`,
        headers: owner.headers,
        payload: {
          tests: [
            { tool: 'get_user', arguments: { id: '1' } },
            { tool: 'broken', arguments: {} },
          ],
        },
      },
      200,
    );
    await call(app, { method: 'POST', url: `/v1/services/${svc.id}/publish`, headers: owner.headers }, 202);
    const done = await waitForRun(app, owner, svc.id);
    expect(done.status).toBe('rejected');
    expect(done.verification.state).toBe('failed');
    expect(done.verification.tests[1]).toMatchObject({ tool: 'broken', status: 'failed', http_status: 500 });
    expect(done.verification.tests[1].error).toMatch(/expected HTTP 2xx, got 500/);
    expect(done.checklist.functional_verification).toMatchObject({
      status: 'failed',
      detail: '1 of 2 test call(s) failed',
    });
    const { body: list } = await call(app, { method: 'GET', url: '/services?limit=100', headers: owner.headers }, 200);
    expect(list.data.map((s: any) => s.id)).not.toContain(svc.id);

    // A json_schema mismatch fails too.
    await call(
      app,
      {
        method: 'POST',
        url: `/v1/services/${svc.id}/verification-config`,
        headers: owner.headers,
        payload: {
          tests: [
            {
              tool: 'get_weather',
              arguments: { city: 'x' },
              expect: { json_schema: { type: 'object', required: ['humidity'] } },
            },
          ],
        },
      },
      200,
    );
    await call(app, { method: 'POST', url: `/v1/services/${svc.id}/publish/resubmit`, headers: owner.headers }, 202);
    const again = await waitForRun(app, owner, svc.id);
    expect(again.status).toBe('rejected');
    expect(again.verification.tests[0].error).toMatch(/humidity/);

    await call(
      app,
      {
        method: 'POST',
        url: `/v1/services/${svc.id}/verification-config`,
        headers: owner.headers,
        payload: { tests: [{ tool: 'get_weather', arguments: { city: 'x' } }] },
      },
      200,
    );
    await call(app, { method: 'POST', url: `/v1/services/${svc.id}/publish/resubmit`, headers: owner.headers }, 202);
    expect((await waitForRun(app, owner, svc.id)).status).toBe('published');
  });

  it('rejects when the domain is not verified and no config exists', async () => {
    api.verificationToken = null;
    const owner = await createUser(app);
    const svc = await registerService(app, owner, weatherManifest(api.url));
    const { body: started } = await call(
      app,
      { method: 'POST', url: `/v1/services/${svc.id}/publish`, headers: owner.headers },
      202,
    );
    expect(started.checklist.functional_verification.status).toBe('failed');
    expect(started.checklist.functional_verification.detail).toMatch(/verification-config/);
    const done = await waitForRun(app, owner, svc.id);
    expect(done.status).toBe('rejected');
    expect(done.checklist.domain_verified.status).toBe('failed');
    expect(done.checklist.domain_verified.detail).toMatch(/HTTP file answered 404/);
  });

  it('unpublishes (gone from /services) and resubmits back to published', async () => {
    const owner = await createUser(app);
    const svc = await publishService(app, owner, api, weatherManifest(api.url), [
      { tool: 'get_user', arguments: { id: '1' } },
    ]);
    const { body: un } = await call(
      app,
      { method: 'POST', url: `/v1/services/${svc.id}/unpublish`, headers: owner.headers },
      200,
    );
    expect(un.status).toBe('unpublished');
    const other = await createUser(app);
    const { body: list } = await call(app, { method: 'GET', url: '/services?limit=100', headers: other.headers }, 200);
    expect(list.data.map((s: any) => s.id)).not.toContain(svc.id);
    await call(app, { method: 'GET', url: `/services/${svc.id}/manifest`, headers: other.headers }, 404);
    const { body: re } = await call(
      app,
      { method: 'POST', url: `/v1/services/${svc.id}/publish/resubmit`, headers: owner.headers },
      202,
    );
    expect(re.status).toBe('pending_verification');
    expect((await waitForRun(app, owner, svc.id)).status).toBe('published');
    await call(app, { method: 'GET', url: `/services/${svc.id}/manifest`, headers: other.headers }, 200);
  });

  it('deleting a published service removes it from the marketplace', async () => {
    const owner = await createUser(app);
    const svc = await publishService(app, owner, api, weatherManifest(api.url), [
      { tool: 'get_user', arguments: { id: '1' } },
    ]);
    await call(app, { method: 'DELETE', url: `/owner/services/${svc.id}`, headers: owner.headers }, 204);
    const { body: list } = await call(app, { method: 'GET', url: '/services?limit=100', headers: owner.headers }, 200);
    expect(list.data.map((s: any) => s.id)).not.toContain(svc.id);
  });
});
