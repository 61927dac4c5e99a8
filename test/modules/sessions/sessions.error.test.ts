import { describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../../helpers/app.js';

const { app } = await setupApp();

describe('sessions — errors', () => {
  it('rejects unknown fields, bad types and oversized metadata with 400', async () => {
    const u = await createUser(app);
    const { body } = await call(
      app,
      { method: 'POST', url: '/v1/agents', headers: u.headers, payload: { name: 'x', colour: 'red' } },
      400,
    );
    expect(body.code).toBe('validation_failed');
    expect(body.errors[0].pointer).toBe('/colour');
    await call(app, { method: 'POST', url: '/v1/agents', headers: u.headers, payload: { name: '' } }, 400);
    await call(
      app,
      { method: 'POST', url: '/v1/agents', headers: u.headers, payload: { metadata: 'not an object' } },
      400,
    );
    const many = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i]));
    await call(app, { method: 'POST', url: '/v1/agents', headers: u.headers, payload: { metadata: many } }, 400);
  });

  it('answers 404 for unknown sessions and agents', async () => {
    const u = await createUser(app);
    const { body } = await call(
      app,
      { method: 'GET', url: '/v1/agents/ses_00000000000000000000000000', headers: u.headers },
      404,
    );
    expect(body.code).toBe('not_found');
    await call(app, { method: 'GET', url: '/v1/sessions/nope', headers: u.headers }, 404);
    await call(
      app,
      { method: 'POST', url: '/v1/sessions/ses_00000000000000000000000000/close', headers: u.headers },
      404,
    );
    await call(
      app,
      {
        method: 'POST',
        url: '/v1/agents',
        headers: u.headers,
        payload: { agent_id: 'agt_00000000000000000000000000' },
      },
      404,
    );
  });

  it('rejects bad list queries', async () => {
    const u = await createUser(app);
    await call(app, { method: 'GET', url: '/v1/agents?status=open', headers: u.headers }, 400);
    await call(app, { method: 'GET', url: '/v1/agents?limit=0', headers: u.headers }, 400);
    await call(app, { method: 'GET', url: '/v1/agents?limit=101', headers: u.headers }, 400);
  });

  it('refuses executions in a closed session with 409 session_closed', async () => {
    const u = await createUser(app);
    const { body: s } = await call(app, { method: 'POST', url: '/v1/agents', headers: u.headers, payload: {} }, 201);
    await call(app, { method: 'POST', url: `/v1/sessions/${s.id}/close`, headers: u.headers }, 200);
    const { body } = await call(
      app,
      {
        method: 'POST',
        url: `/v1/agents/${s.id}/execute`,
        headers: u.headers,
        payload: { service: 'anything', tool: 'x', arguments: {} },
      },
      409,
    );
    expect(body.code).toBe('session_closed');
  });

  it('validates the execute body', async () => {
    const u = await createUser(app);
    const { body: s } = await call(app, { method: 'POST', url: '/v1/agents', headers: u.headers, payload: {} }, 201);
    const url = `/v1/agents/${s.id}/execute`;
    await call(app, { method: 'POST', url, headers: u.headers, payload: { tool: 'x' } }, 400);
    await call(
      app,
      { method: 'POST', url, headers: u.headers, payload: { service: 's', tool: 'x', arguments: [] } },
      400,
    );
    await call(
      app,
      { method: 'POST', url, headers: u.headers, payload: { service: 's', tool: 'x', timeout_ms: 5 } },
      400,
    );
    await call(app, { method: 'POST', url, headers: u.headers, payload: { service: 's', tool: 'x', extra: 1 } }, 400);
    const { body } = await call(
      app,
      { method: 'POST', url, headers: u.headers, payload: { service: 'no-such-service', tool: 'x' } },
      404,
    );
    expect(body.code).toBe('not_found');
  });
});
