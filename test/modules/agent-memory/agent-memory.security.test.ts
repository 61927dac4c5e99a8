import { describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { agentToken, createAgent } from '../../helpers/agents.js';

const { app } = await setupApp();

describe('agent memory — security', () => {
  it('is agent-only: user tokens get 403 agent_token_required, no token 401', async () => {
    const u = await createUser(app);
    const routes = [
      ['GET', '/v2/memory'],
      ['GET', '/v2/memory/k'],
      ['PUT', '/v2/memory/k'],
      ['DELETE', '/v2/memory/k'],
    ] as const;
    for (const [method, url] of routes) {
      const payload = method === 'PUT' ? { payload: { value: 1 } } : {};
      const res = await app.inject({ method, url, headers: u.headers, ...payload });
      expect(res.statusCode, `${method} ${url}`).toBe(403);
      expect(res.json().code).toBe('agent_token_required');
      const anon = await app.inject({ method, url, ...payload });
      expect(anon.statusCode).toBe(401);
    }
  });

  it('keeps each agent’s memory apart, also between agents of one account', async () => {
    const u = await createUser(app);
    const a = await createAgent(app, u);
    const b = await createAgent(app, u);
    const ta = await agentToken(app, a);
    const tb = await agentToken(app, b);
    await call(
      app,
      { method: 'PUT', url: '/v2/memory/secret', headers: ta.headers, payload: { value: 'a-only' } },
      201,
    );
    await call(app, { method: 'GET', url: '/v2/memory/secret', headers: tb.headers }, 404);
    const { body } = await call(app, { method: 'GET', url: '/v2/memory', headers: tb.headers }, 200);
    expect(body.data).toEqual([]);
    await call(
      app,
      { method: 'PUT', url: '/v2/memory/secret', headers: tb.headers, payload: { value: 'b-only' } },
      201,
    );
    await call(app, { method: 'DELETE', url: '/v2/memory/secret', headers: tb.headers }, 204);
    const { body: still } = await call(app, { method: 'GET', url: '/v2/memory/secret', headers: ta.headers }, 200);
    expect(still.value).toBe('a-only');
  });

  it('enforces token scopes: memory:read cannot write, memory:write cannot read', async () => {
    const a = await createAgent(app, await createUser(app));
    const reader = await agentToken(app, a, 'memory:read');
    const writer = await agentToken(app, a, 'memory:write');
    await call(app, { method: 'PUT', url: '/v2/memory/k', headers: writer.headers, payload: { value: 1 } }, 201);
    for (const [headers, method, url] of [
      [reader.headers, 'PUT', '/v2/memory/k'],
      [reader.headers, 'DELETE', '/v2/memory/k'],
      [writer.headers, 'GET', '/v2/memory/k'],
      [writer.headers, 'GET', '/v2/memory'],
    ] as const) {
      const res = await app.inject({ method, url, headers, ...(method === 'PUT' ? { payload: { value: 2 } } : {}) });
      expect(res.statusCode, `${method} ${url}`).toBe(403);
      expect(res.json().code).toBe('insufficient_scope');
    }
    const { body } = await call(app, { method: 'GET', url: '/v2/memory/k', headers: reader.headers }, 200);
    expect(body.value).toBe(1);
  });
});
