import { describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { seedExecutions, seedSession } from './helpers.js';

// Sessions of user memory: summaries, the timeline, an agent's context, statistics and deletion.
const { app, ctx } = await setupApp();

async function add(headers: Record<string, string>, content: string, extra: Record<string, unknown> = {}) {
  return (await call(app, { method: 'POST', url: '/memory', headers, payload: { content, ...extra } }, 201)).body;
}

describe('memory — sessions: summary, timeline, context, stats, delete', () => {
  it('summarises a session extractively, stores it as a memory and rebuilds it', async () => {
    const u = await createUser(app);
    const sid = await seedSession(ctx, u.userId, { name: 'Lisbon trip' });
    await seedExecutions(ctx, u.userId, sid, null, [
      {
        tool: 'search_flights',
        args: { destination: 'Lisbon' },
        output: { flights: [{ airline: 'TAP', price: 142 }] },
      },
      { tool: 'book_hotel', args: { city: 'Lisbon' }, output: { confirmation: 'QX7P2A', hotel: 'Hotel Aurora' } },
      { tool: 'book_hotel', args: { city: 'Porto' }, status: 'failed' },
    ]);
    await add(u.headers, 'Ask for a quiet room', { session_id: sid });
    await call(app, { method: 'GET', url: `/memory/sessions/${sid}`, headers: u.headers }, 404);

    const { body: s } = await call(
      app,
      { method: 'POST', url: `/memory/sessions/${sid}/summarize`, headers: u.headers },
      200,
    );
    expect(s).toMatchObject({
      session_id: sid,
      execution_count: 3,
      generator: 'extractive',
      model: null,
      ended_at: expect.any(String),
      started_at: expect.any(String),
    });
    expect(s.summary).toContain('Session "Lisbon trip" made 3 tool calls');
    expect(s.summary).toContain('2 succeeded and 1 failed (book_hotel)');
    expect(s.tools_used).toEqual([
      expect.objectContaining({ tool_name: 'book_hotel', calls: 2, succeeded: 1, failed: 1 }),
      expect.objectContaining({ tool_name: 'search_flights', calls: 1, succeeded: 1, failed: 0 }),
    ]);
    expect(s.key_points.some((k: string) => k.includes('failed') && k.includes('Porto'))).toBe(true);
    expect(s.key_points).toContain('Note: Ask for a quiet room');
    const { body: got } = await call(app, { method: 'GET', url: `/memory/sessions/${sid}`, headers: u.headers }, 200);
    expect(got).toEqual(s);

    const { body: mems } = await call(
      app,
      { method: 'GET', url: `/memory?session_id=${sid}&limit=100`, headers: u.headers },
      200,
    );
    const summaries = mems.data.filter((m: any) => m.source === 'summary');
    expect(summaries).toHaveLength(1);
    expect(summaries[0].id).toBe(s.memory_id);
    expect(summaries[0].content.startsWith(s.summary)).toBe(true);

    const { body: s2 } = await call(
      app,
      { method: 'POST', url: `/memory/sessions/${sid}/summarize`, headers: u.headers },
      200,
    );
    expect(s2.id).not.toBe(s.id);
    const { body: mems2 } = await call(
      app,
      { method: 'GET', url: `/memory?session_id=${sid}&limit=100`, headers: u.headers },
      200,
    );
    expect(mems2.data.filter((m: any) => m.source === 'summary').map((m: any) => m.id)).toEqual([s2.memory_id]);
  });

  it('lists the timeline in order with cursor pagination', async () => {
    const u = await createUser(app);
    const sid = await seedSession(ctx, u.userId);
    const [e1] = await seedExecutions(ctx, u.userId, sid, null, [
      { tool: 'get_forecast', args: { location: 'Oslo' }, output: { summary: 'snow' }, durationMs: 87 },
    ]);
    const note = await add(u.headers, 'Pack warm clothes', { session_id: sid });
    await new Promise((r) => setTimeout(r, 2));
    const [e2] = await seedExecutions(ctx, u.userId, sid, null, [
      { tool: 'book_hotel', status: 'failed', durationMs: 30000 },
    ]);
    const { body: sum } = await call(
      app,
      { method: 'POST', url: `/memory/sessions/${sid}/summarize`, headers: u.headers },
      200,
    );

    const events: any[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const url: string = `/memory/sessions/${sid}/timeline?limit=2${cursor ? `&cursor=${cursor}` : ''}`;
      const { body } = await call(app, { method: 'GET', url, headers: u.headers }, 200);
      events.push(...body.data);
      cursor = body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(2);
    expect(events.map((e) => [e.type, e.id])).toEqual([
      ['execution', e1],
      ['memory', note.id],
      ['execution', e2],
      ['summary', sum.id],
    ]);
    expect(events[0].execution).toMatchObject({
      tool_name: 'get_forecast',
      status: 'succeeded',
      duration_ms: 87,
      http_status: 200,
      error: null,
    });
    expect(events[0].execution.memory).toContain('Called get_forecast on travel with location "Oslo"');
    expect(events[2].execution).toMatchObject({
      status: 'failed',
      duration_ms: 30000,
      error: { code: 'upstream_timeout' },
    });
    expect(events[1].memory).toMatchObject({ source: 'explicit', content: 'Pack warm clothes' });
    expect(events[3].summary.summary).toBe(sum.summary);
    const times = events.map((e) => Date.parse(e.at));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
  });

  it('gives an agent its context in one call', async () => {
    const u = await createUser(app);
    const sid = await seedSession(ctx, u.userId, { name: 'older' });
    const sid2 = await seedSession(ctx, u.userId, { name: 'newer' });
    await seedExecutions(ctx, u.userId, sid, null, [
      { tool: 'get_quote', args: { symbol: 'NVDA' }, output: { price: 130.5 } },
      { tool: 'get_quote', args: { symbol: 'AAPL' }, output: { price: 201.1 } },
      { tool: 'get_quote', args: { symbol: 'XXXX' }, status: 'failed' },
      { tool: 'convert', args: { from: 'EUR', to: 'USD' }, output: { rate: 1.08 } },
    ]);
    await call(app, { method: 'POST', url: `/memory/sessions/${sid}/summarize`, headers: u.headers }, 200);
    await add(u.headers, 'The user holds Nvidia shares in a long-term portfolio', { session_id: sid2 });
    const { body } = await call(
      app,
      {
        method: 'GET',
        url: `/memory/context/agent?q=${encodeURIComponent('Nvidia share price')}&limit=3`,
        headers: u.headers,
      },
      200,
    );
    expect(body.query).toBe('Nvidia share price');
    expect(body.relevant_memories.length).toBeGreaterThan(0);
    expect(body.relevant_memories.length).toBeLessThanOrEqual(3);
    expect(body.relevant_memories.map((m: any) => m.content).join(' ')).toMatch(/Nvidia|NVDA/);
    expect(body.recent_sessions.map((s: any) => s.id)).toEqual([sid2, sid]);
    expect(body.recent_sessions[1].summary).toMatchObject({ session_id: sid, execution_count: 4 });
    expect(body.recent_sessions[0].summary).toBeNull();
    expect(body.frequent_tools[0]).toMatchObject({
      tool_name: 'get_quote',
      calls: 3,
      successes: 2,
      failures: 1,
      success_rate: 0.6667,
    });
    expect(body.frequent_tools[1]).toMatchObject({ tool_name: 'convert', calls: 1, success_rate: 1 });
    expect(body.stats.total_memories).toBe(6); // 4 execution memories + 1 summary + 1 note
    const { body: recent } = await call(app, { method: 'GET', url: '/memory/context/agent', headers: u.headers }, 200);
    expect(recent.query).toBeNull();
    expect(recent.relevant_memories[0].content).toBe('The user holds Nvidia shares in a long-term portfolio');
  });

  it('reports statistics', async () => {
    const u = await createUser(app);
    const { body: empty } = await call(app, { method: 'GET', url: '/memory/stats', headers: u.headers }, 200);
    expect(empty).toMatchObject({
      total_memories: 0,
      sessions_with_memories: 0,
      oldest_at: null,
      newest_at: null,
      storage_bytes: 0,
    });
    const sid = await seedSession(ctx, u.userId);
    await seedExecutions(ctx, u.userId, sid, null, [{ tool: 'ping' }, { tool: 'ping' }]);
    const first = await add(u.headers, 'first explicit');
    const last = await add(u.headers, 'second explicit', { session_id: sid });
    await call(app, { method: 'POST', url: `/memory/sessions/${sid}/summarize`, headers: u.headers }, 200);
    const { body } = await call(app, { method: 'GET', url: '/memory/stats', headers: u.headers }, 200);
    expect(body).toMatchObject({
      total_memories: 5,
      by_source: { explicit: 2, execution: 2, summary: 1 },
      sessions_with_memories: 1,
      summaries: 1,
      embedding: { provider: 'local', model: 'local-hash-v1', dimensions: 384 },
      vector_search: ctx.database.hasVector ? 'pgvector_hnsw' : 'exact_real_array',
    });
    expect(Date.parse(body.oldest_at)).toBeLessThanOrEqual(Date.parse(first.created_at));
    expect(Date.parse(body.newest_at)).toBeGreaterThanOrEqual(Date.parse(last.created_at));
    expect(body.storage_bytes).toBeGreaterThan(5 * 200); // rows with vectors (PostgreSQL may compress them)
  });

  it("deletes one session's memories, then all of the caller's", async () => {
    const u = await createUser(app);
    const sid = await seedSession(ctx, u.userId);
    await seedExecutions(ctx, u.userId, sid, null, [{ tool: 'ping' }]);
    await add(u.headers, 'in session', { session_id: sid });
    await add(u.headers, 'outside');
    await call(app, { method: 'POST', url: `/memory/sessions/${sid}/summarize`, headers: u.headers }, 200);
    const { body: d1 } = await call(
      app,
      { method: 'DELETE', url: `/memory?session_id=${sid}`, headers: u.headers },
      200,
    );
    expect(d1).toEqual({ deleted: 3, deleted_summaries: 1 });
    await call(app, { method: 'GET', url: `/memory/sessions/${sid}`, headers: u.headers }, 404);
    const { body: left } = await call(app, { method: 'GET', url: '/memory', headers: u.headers }, 200);
    expect(left.data.map((m: any) => m.content)).toEqual(['outside']);
    const { body: d2 } = await call(app, { method: 'DELETE', url: '/memory', headers: u.headers }, 200);
    expect(d2).toEqual({ deleted: 1, deleted_summaries: 0 });
    const { body: stats } = await call(app, { method: 'GET', url: '/memory/stats', headers: u.headers }, 200);
    expect(stats.total_memories).toBe(0);
  });
});
