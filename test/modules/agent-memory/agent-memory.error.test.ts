import { describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { agentToken, createAgent } from '../../helpers/agents.js';

const { app } = await setupApp();
const capped = await setupApp({ AGENT_MEMORY_MAX_ENTRIES: '3' });

async function newAgent(target = app) {
  const a = await createAgent(target, await createUser(target));
  return { ...a, ...(await agentToken(target, a)) };
}

describe('agent memory — errors', () => {
  it('413 for values over 256 KiB; exactly 256 KiB is accepted', async () => {
    const a = await newAgent();
    const limit = 256 * 1024;
    const exact = 'x'.repeat(limit - 2); // JSON string quotes make it exactly the limit
    await call(app, { method: 'PUT', url: '/v2/memory/big', headers: a.headers, payload: { value: exact } }, 201);
    const { body } = await call(
      app,
      { method: 'PUT', url: '/v2/memory/big', headers: a.headers, payload: { value: `${exact}x` } },
      413,
    );
    expect(body.code).toBe('payload_too_large');
    const { body: multi } = await call(
      app,
      { method: 'PUT', url: '/v2/memory/big2', headers: a.headers, payload: { value: 'é'.repeat(limit / 2) } },
      413,
    );
    expect(multi.code).toBe('payload_too_large');
    const { body: got } = await call(app, { method: 'GET', url: '/v2/memory/big', headers: a.headers }, 200);
    expect(got.value).toBe(exact);
  });

  it('412 when If-Match does not match, or If-None-Match: * and the entry exists', async () => {
    const a = await newAgent();
    await call(app, { method: 'PUT', url: '/v2/memory/k', headers: a.headers, payload: { value: 1 } }, 201);
    for (const h of [
      { 'if-match': '"2"' },
      { 'if-match': 'W/"1"' },
      { 'if-match': '"abc"' },
      { 'if-none-match': '*' },
      { 'if-none-match': '"1"' },
    ]) {
      const { body } = await call(
        app,
        { method: 'PUT', url: '/v2/memory/k', headers: { ...a.headers, ...h }, payload: { value: 2 } },
        412,
      );
      expect(body.code).toBe('precondition_failed');
    }
    await call(
      app,
      { method: 'PUT', url: '/v2/memory/missing', headers: { ...a.headers, 'if-match': '"1"' }, payload: { value: 1 } },
      412,
    );
    await call(
      app,
      { method: 'PUT', url: '/v2/memory/missing', headers: { ...a.headers, 'if-match': '*' }, payload: { value: 1 } },
      412,
    );
    await call(app, { method: 'DELETE', url: '/v2/memory/k', headers: { ...a.headers, 'if-match': '"7"' } }, 412);
    const { body } = await call(app, { method: 'GET', url: '/v2/memory/k', headers: a.headers }, 200);
    expect(body).toMatchObject({ value: 1, version: 1 });
  });

  it('400 for malformed bodies, keys, conditions and cursors', async () => {
    const a = await newAgent();
    for (const payload of [
      {},
      { value: 1, extra: true },
      { value: 1, ttl_seconds: 0 },
      { value: 1, ttl_seconds: 1.5 },
      { value: 1, ttl_seconds: 'soon' },
    ]) {
      const { body } = await call(app, { method: 'PUT', url: '/v2/memory/k', headers: a.headers, payload }, 400);
      expect(body.code).toBe('validation_failed');
    }
    await call(
      app,
      { method: 'PUT', url: `/v2/memory/${'k'.repeat(257)}`, headers: a.headers, payload: { value: 1 } },
      400,
    );
    await call(app, { method: 'GET', url: `/v2/memory/${'k'.repeat(257)}`, headers: a.headers }, 400);
    await call(
      app,
      { method: 'PUT', url: '/v2/memory/k', headers: { ...a.headers, 'if-match': 'not-a-tag' }, payload: { value: 1 } },
      400,
    );
    await call(app, { method: 'GET', url: '/v2/memory?cursor=@@@', headers: a.headers }, 400);
    await call(
      app,
      {
        method: 'PUT',
        url: '/v2/memory/k',
        headers: { ...a.headers, 'content-type': 'application/json' },
        payload: '{"value":',
      },
      400,
    );
  });

  // The app's preValidation walk of the body refuses these before the handler, with the value's
  // pointer (its depth counts from the body: one level stricter than putEntry's own walk of the value).
  it('400 for values jsonb cannot hold (U+0000, lone surrogate, too deep), nothing stored', async () => {
    const a = await newAgent();
    const headers = { ...a.headers, 'content-type': 'application/json' };
    const nested = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
    for (const [raw, pointer] of [
      ['{"value":{"a":"x\\u0000y"}}', '/value/a'],
      ['{"value":["ok","\\ud800"]}', '/value/1'],
      [`{"value":${nested(64)}}`, `/value${'/0'.repeat(63)}`],
    ] as const) {
      const { body } = await call(app, { method: 'PUT', url: '/v2/memory/bad', headers, payload: raw }, 400);
      expect(body.code).toBe('validation_failed');
      expect(body.errors[0]).toMatchObject({ in: 'body', pointer });
    }
    await call(app, { method: 'GET', url: '/v2/memory/bad', headers: a.headers }, 404);
    // One level less is stored and read back as sent.
    await call(app, { method: 'PUT', url: '/v2/memory/bad', headers, payload: `{"value":${nested(63)}}` }, 201);
    const { body } = await call(app, { method: 'GET', url: '/v2/memory/bad', headers: a.headers }, 200);
    expect(JSON.stringify(body.value)).toBe(nested(63));
  });

  it('404 for missing entries', async () => {
    const a = await newAgent();
    await call(app, { method: 'GET', url: '/v2/memory/nope', headers: a.headers }, 404);
    await call(app, { method: 'DELETE', url: '/v2/memory/nope', headers: a.headers }, 404);
  });

  it('409 memory_entry_limit at the per-agent cap; updates and re-creation after delete still work', async () => {
    const a = await newAgent(capped.app);
    for (const k of ['a', 'b', 'c'])
      await call(capped.app, { method: 'PUT', url: `/v2/memory/${k}`, headers: a.headers, payload: { value: k } }, 201);
    const { body } = await call(
      capped.app,
      { method: 'PUT', url: '/v2/memory/d', headers: a.headers, payload: { value: 'd' } },
      409,
    );
    expect(body.code).toBe('memory_entry_limit');
    expect(body.limit).toBe(3);
    await call(capped.app, { method: 'GET', url: '/v2/memory/d', headers: a.headers }, 404);
    await call(capped.app, { method: 'PUT', url: '/v2/memory/a', headers: a.headers, payload: { value: 'a2' } }, 200);
    await call(capped.app, { method: 'DELETE', url: '/v2/memory/b', headers: a.headers }, 204);
    await call(capped.app, { method: 'PUT', url: '/v2/memory/d', headers: a.headers, payload: { value: 'd' } }, 201);
    // Other agents have their own cap.
    const b = await newAgent(capped.app);
    await call(capped.app, { method: 'PUT', url: '/v2/memory/a', headers: b.headers, payload: { value: 1 } }, 201);
  });

  it('expired entries do not count against the cap', async () => {
    const a = await newAgent(capped.app);
    for (const k of ['a', 'b'])
      await call(capped.app, { method: 'PUT', url: `/v2/memory/${k}`, headers: a.headers, payload: { value: k } }, 201);
    await call(
      capped.app,
      { method: 'PUT', url: '/v2/memory/t', headers: a.headers, payload: { value: 1, ttl_seconds: 1 } },
      201,
    );
    await new Promise((r) => setTimeout(r, 1200));
    await call(capped.app, { method: 'PUT', url: '/v2/memory/c', headers: a.headers, payload: { value: 'c' } }, 201);
  });
});
