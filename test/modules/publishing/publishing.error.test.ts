import { afterAll, describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { startJsonApi } from '../../helpers/upstreams.js';
import { publishService, registerService, waitForRun, weatherManifest } from './helpers.js';

const { app } = await setupApp();
const api = await startJsonApi();
afterAll(async () => {
  await api.close();
});
const owner = await createUser(app);

describe('publishing — invalid transitions', () => {
  it('answers 409 invalid_state for impossible moves', async () => {
    const svc = await registerService(app, owner, weatherManifest(api.url));
    const un = await call(
      app,
      { method: 'POST', url: `/v1/services/${svc.id}/unpublish`, headers: owner.headers },
      409,
    );
    expect(un.body.code).toBe('invalid_state');
    const re = await call(
      app,
      { method: 'POST', url: `/v1/services/${svc.id}/publish/resubmit`, headers: owner.headers },
      409,
    );
    expect(re.body.detail).toMatch(/draft/);

    const published = await publishService(app, owner, api, weatherManifest(api.url), [
      { tool: 'get_user', arguments: { id: '1' } },
    ]);
    await call(app, { method: 'POST', url: `/v1/services/${published.id}/publish`, headers: owner.headers }, 409);
    await call(
      app,
      { method: 'POST', url: `/v1/services/${published.id}/publish/resubmit`, headers: owner.headers },
      409,
    );
  });

  it('cancels a pending run when unpublished before it finishes', async () => {
    const svc = await registerService(app, owner, weatherManifest(api.url));
    await call(
      app,
      {
        method: 'POST',
        url: `/v1/services/${svc.id}/verification-config`,
        headers: owner.headers,
        payload: { tests: [{ tool: 'get_user', arguments: { id: '1' } }] },
      },
      200,
    );
    await call(app, { method: 'POST', url: `/v1/services/${svc.id}/publish`, headers: owner.headers }, 202);
    await call(app, { method: 'POST', url: `/v1/services/${svc.id}/publish`, headers: owner.headers }, 409);
    const { body } = await call(
      app,
      { method: 'POST', url: `/v1/services/${svc.id}/unpublish`, headers: owner.headers },
      200,
    );
    expect(body.status).toBe('unpublished');
    const after = await waitForRun(app, owner, svc.id);
    expect(after.status).toBe('unpublished');
  });
});

describe('publishing — invalid input', () => {
  it('lists every problem of a verification config with pointers', async () => {
    const svc = await registerService(app, owner, weatherManifest(api.url));
    const { body } = await call(
      app,
      {
        method: 'POST',
        url: `/v1/services/${svc.id}/verification-config`,
        headers: owner.headers,
        payload: {
          tests: [
            { tool: 'nope', arguments: {} },
            { tool: 'get_weather', arguments: { city: 7 } },
            { tool: 'get_user', arguments: {} },
            { tool: 'get_user', arguments: { id: '1' }, expect: { json_schema: { type: 'nonsense' } } },
          ],
        },
      },
      400,
    );
    expect(body.code).toBe('validation_failed');
    const ps = body.errors.map((e: any) => e.pointer);
    expect(ps).toEqual(
      expect.arrayContaining([
        '/tests/0/tool',
        '/tests/1/arguments/city',
        '/tests/2/arguments/id',
        '/tests/3/expect/json_schema/type',
      ]),
    );
    await call(
      app,
      {
        method: 'POST',
        url: `/v1/services/${svc.id}/verification-config`,
        headers: owner.headers,
        payload: { tests: [] },
      },
      400,
    );
    await call(
      app,
      {
        method: 'POST',
        url: `/v1/services/${svc.id}/verification-config`,
        headers: owner.headers,
        payload: { tests: [{ tool: 'get_user', arguments: {}, expect: { status: 99 } }] },
      },
      400,
    );
    await call(
      app,
      {
        method: 'POST',
        url: `/v1/services/${svc.id}/verification-config`,
        headers: owner.headers,
        payload: { tests: [{ tool: 'get_user', arguments: {}, extra: 1 }] },
      },
      400,
    );
  });

  it('rejects a service whose stored manifest fails re-validation (undescribed tools)', async () => {
    const doc = {
      openapi: '3.1.0',
      info: { title: 'Quiet', version: '1' },
      servers: [{ url: api.url }],
      paths: {
        '/users/{id}': {
          get: {
            parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
            responses: { '200': { description: 'ok' } },
          },
        },
      },
    };
    const svc = await registerService(app, owner, { openapi: doc, description: 'quiet api' });
    expect(svc.warnings.map((w: any) => w.pointer)).toContain('/openapi/tools/0/description');
    const { body } = await call(
      app,
      { method: 'POST', url: `/v1/services/${svc.id}/publish`, headers: owner.headers },
      202,
    );
    expect(body.checklist.manifest_valid.status).toBe('failed');
    expect(body.checklist.manifest_valid.detail).toMatch(/\/tools\/0\/description/);
    expect((await waitForRun(app, owner, svc.id)).status).toBe('rejected');
  });

  it('validates reports and renames', async () => {
    const svc = await publishService(app, owner, api, weatherManifest(api.url), [
      { tool: 'get_user', arguments: { id: '1' } },
    ]);
    const reporter = await createUser(app);
    await call(
      app,
      {
        method: 'POST',
        url: `/v1/services/${svc.id}/report`,
        headers: reporter.headers,
        payload: { tool_id: 'tool_nope', reason: 'broken' },
      },
      404,
    );
    await call(
      app,
      { method: 'POST', url: `/v1/services/${svc.id}/report`, headers: reporter.headers, payload: { reason: 'angry' } },
      400,
    );
    await call(
      app,
      { method: 'POST', url: `/v1/services/${svc.id}/report`, headers: reporter.headers, payload: {} },
      400,
    );
    await call(
      app,
      {
        method: 'POST',
        url: '/v1/services/svc_00000000000000000000000000/report',
        headers: reporter.headers,
        payload: { reason: 'broken' },
      },
      404,
    );
    await call(
      app,
      {
        method: 'PATCH',
        url: `/v1/services/${svc.id}/tools/nope/rename`,
        headers: owner.headers,
        payload: { name: 'x' },
      },
      404,
    );
    await call(
      app,
      { method: 'PATCH', url: `/v1/services/${svc.id}/tools/get_user/rename`, headers: owner.headers, payload: {} },
      400,
    );
    await call(
      app,
      {
        method: 'POST',
        url: `/owner/services/${svc.id}/reports/rep_00000000000000000000000000/resolve`,
        headers: owner.headers,
      },
      404,
    );
  });
});
