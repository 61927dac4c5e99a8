import { describe, expect, it } from 'vitest';
import { and, eq } from 'drizzle-orm';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { agentToken, createAgent } from '../../helpers/agents.js';
import { agentMemory } from '../../../src/db/schema/index.js';

const { app, ctx } = await setupApp({ AGENT_MEMORY_PURGE_INTERVAL_MS: '200' });

async function newAgent() {
  const a = await createAgent(app, await createUser(app));
  return { ...a, ...(await agentToken(app, a)) };
}

describe('agent memory — happy paths', () => {
  it('creates (201), updates (200), reads with ETags, answers 304, deletes (204)', async () => {
    const a = await newAgent();
    const { res: c, body: created } = await call(
      app,
      { method: 'PUT', url: '/v2/memory/plan', headers: a.headers, payload: { value: { steps: ['a', 'b'] } } },
      201,
    );
    expect(c.headers.etag).toBe('"1"');
    expect(c.headers.location).toBe('/v2/memory/plan');
    expect(created).toEqual({
      key: 'plan',
      value: { steps: ['a', 'b'] },
      version: 1,
      updated_at: expect.any(String),
      expires_at: null,
    });

    const { res: u, body: updated } = await call(
      app,
      {
        method: 'PUT',
        url: '/v2/memory/plan',
        headers: { ...a.headers, 'if-match': '"1"' },
        payload: { value: { steps: ['a', 'b', 'c'] } },
      },
      200,
    );
    expect(u.headers.etag).toBe('"2"');
    expect(u.headers.location).toBeUndefined();
    expect(updated.version).toBe(2);
    expect(new Date(updated.updated_at).getTime()).toBeGreaterThanOrEqual(new Date(created.updated_at).getTime());

    const { res: g, body: got } = await call(app, { method: 'GET', url: '/v2/memory/plan', headers: a.headers }, 200);
    expect(g.headers.etag).toBe('"2"');
    expect(got).toEqual(updated);
    const { res: nm } = await call(
      app,
      { method: 'GET', url: '/v2/memory/plan', headers: { ...a.headers, 'if-none-match': '"1", "2"' } },
      304,
    );
    expect(nm.headers.etag).toBe('"2"');
    expect(nm.body).toBe('');
    await call(app, { method: 'GET', url: '/v2/memory/plan', headers: { ...a.headers, 'if-none-match': '"1"' } }, 200);

    await call(app, { method: 'DELETE', url: '/v2/memory/plan', headers: { ...a.headers, 'if-match': '"2"' } }, 204);
    await call(app, { method: 'GET', url: '/v2/memory/plan', headers: a.headers }, 404);
    const { body: again } = await call(
      app,
      { method: 'PUT', url: '/v2/memory/plan', headers: { ...a.headers, 'if-none-match': '*' }, payload: { value: 1 } },
      201,
    );
    expect(again.version).toBe(1);
  });

  it('stores any JSON value', async () => {
    const a = await newAgent();
    const values = [
      'text',
      42,
      3.5,
      true,
      false,
      null,
      [1, 'two', { three: 3 }],
      { nested: { deep: [null, { x: 'é😀' }] } },
      {},
      [],
    ];
    for (const [i, value] of values.entries()) {
      await call(app, { method: 'PUT', url: `/v2/memory/v${i}`, headers: a.headers, payload: { value } }, 201);
      const { body } = await call(app, { method: 'GET', url: `/v2/memory/v${i}`, headers: a.headers }, 200);
      expect(body.value).toEqual(value);
    }
  });

  it('accepts URL-encoded keys: slashes, spaces, Unicode, 256 characters', async () => {
    const a = await newAgent();
    for (const key of ['a/b/c', 'with space', 'ünïcødé 😀', '?#&=%', 'k'.repeat(256), '😀'.repeat(256)]) {
      const url = `/v2/memory/${encodeURIComponent(key)}`;
      const { res, body } = await call(app, { method: 'PUT', url, headers: a.headers, payload: { value: key } }, 201);
      expect(body.key).toBe(key);
      expect(res.headers.location).toBe(url);
      const { body: got } = await call(app, { method: 'GET', url, headers: a.headers }, 200);
      expect(got.value).toBe(key);
    }
  });

  it('If-None-Match: * creates only; If-Match: * updates only', async () => {
    const a = await newAgent();
    await call(
      app,
      {
        method: 'PUT',
        url: '/v2/memory/lock',
        headers: { ...a.headers, 'if-none-match': '*' },
        payload: { value: 'mine' },
      },
      201,
    );
    await call(
      app,
      {
        method: 'PUT',
        url: '/v2/memory/lock',
        headers: { ...a.headers, 'if-match': '*' },
        payload: { value: 'still mine' },
      },
      200,
    );
    await call(
      app,
      {
        method: 'PUT',
        url: '/v2/memory/lock',
        headers: { ...a.headers, 'if-match': '"9", "2"' },
        payload: { value: 'v3' },
      },
      200,
    );
  });

  it('lists own entries in key order with prefix and cursor pagination', async () => {
    const a = await newAgent();
    for (const k of ['b/2', 'a/1', 'b/1', 'c', 'b/3'])
      await call(
        app,
        { method: 'PUT', url: `/v2/memory/${encodeURIComponent(k)}`, headers: a.headers, payload: { value: k } },
        201,
      );
    const { body: all } = await call(app, { method: 'GET', url: '/v2/memory', headers: a.headers }, 200);
    expect(all.data.map((e: { key: string }) => e.key)).toEqual(['a/1', 'b/1', 'b/2', 'b/3', 'c']);
    const { body: p1 } = await call(
      app,
      { method: 'GET', url: '/v2/memory?prefix=b%2F&limit=2', headers: a.headers },
      200,
    );
    expect(p1.data.map((e: { key: string }) => e.key)).toEqual(['b/1', 'b/2']);
    const { body: p2 } = await call(
      app,
      { method: 'GET', url: `/v2/memory?prefix=b%2F&limit=2&cursor=${p1.next_cursor}`, headers: a.headers },
      200,
    );
    expect(p2.data.map((e: { key: string }) => e.key)).toEqual(['b/3']);
    expect(p2.next_cursor).toBeNull();
  });

  it('expires entries: invisible after ttl, then purged; a PUT without ttl clears the expiry', async () => {
    const a = await newAgent();
    const { body } = await call(
      app,
      { method: 'PUT', url: '/v2/memory/temp', headers: a.headers, payload: { value: 1, ttl_seconds: 1 } },
      201,
    );
    const exp = new Date(body.expires_at).getTime();
    expect(exp).toBeGreaterThan(Date.now() - 5000);
    expect(exp).toBeLessThan(Date.now() + 5000);
    const { body: kept } = await call(
      app,
      { method: 'PUT', url: '/v2/memory/kept', headers: a.headers, payload: { value: 1, ttl_seconds: 1 } },
      201,
    );
    expect(kept.expires_at).not.toBeNull();
    const { body: cleared } = await call(
      app,
      { method: 'PUT', url: '/v2/memory/kept', headers: a.headers, payload: { value: 2 } },
      200,
    );
    expect(cleared.expires_at).toBeNull();

    await new Promise((r) => setTimeout(r, 1300));
    await call(app, { method: 'GET', url: '/v2/memory/temp', headers: a.headers }, 404);
    const { body: list } = await call(app, { method: 'GET', url: '/v2/memory', headers: a.headers }, 200);
    expect(list.data.map((e: { key: string }) => e.key)).toEqual(['kept']);
    const rows = await ctx.db
      .select()
      .from(agentMemory)
      .where(and(eq(agentMemory.agentId, a.id), eq(agentMemory.key, 'temp')));
    expect(rows).toHaveLength(0);
    // Writing an expired key creates it anew.
    const { body: recreated } = await call(
      app,
      { method: 'PUT', url: '/v2/memory/temp', headers: a.headers, payload: { value: 2 } },
      201,
    );
    expect(recreated.version).toBe(1);
  });

  it('the periodic purge removes expired entries nobody reads', async () => {
    const a = await newAgent();
    await call(
      app,
      { method: 'PUT', url: '/v2/memory/forgotten', headers: a.headers, payload: { value: 1, ttl_seconds: 1 } },
      201,
    );
    await new Promise((r) => setTimeout(r, 1500));
    const rows = await ctx.db.select().from(agentMemory).where(eq(agentMemory.agentId, a.id));
    expect(rows).toHaveLength(0);
  });
});
