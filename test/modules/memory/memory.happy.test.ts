import { describe, expect, it } from 'vitest';
import { dot, LocalHashEmbedder } from '../../../src/modules/memory/embeddings.js';
import { flushMemoryWrites, rememberExecution } from '../../../src/modules/memory/runtime.js';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { finishedCall } from '../../helpers/exec.js';
import { seedExecutions, seedSession } from './helpers.js';

const { app, ctx } = await setupApp();

async function add(headers: Record<string, string>, content: string, extra: Record<string, unknown> = {}) {
  return (await call(app, { method: 'POST', url: '/memory', headers, payload: { content, ...extra } }, 201)).body;
}

describe('memory — writing and listing', () => {
  it('stores an explicit memory and lists newest first with cursor pagination', async () => {
    const u = await createUser(app);
    const m1 = await add(u.headers, 'The user prefers aisle seats on long flights', {
      metadata: { kind: 'preference' },
    });
    expect(m1).toMatchObject({
      content: 'The user prefers aisle seats on long flights',
      source: 'explicit',
      session_id: null,
      agent_id: null,
      metadata: { kind: 'preference' },
    });
    expect(m1.id).toMatch(/^mem_[0-9a-z]{26}$/);
    expect(Date.parse(m1.created_at)).toBeGreaterThan(Date.now() - 60_000);
    const m2 = await add(u.headers, 'Booked Hotel Aurora in Lisbon for three nights');
    const m3 = await add(u.headers, 'Deployed billing-worker 2.3.1 to production');

    const { body: page1 } = await call(app, { method: 'GET', url: '/memory?limit=2', headers: u.headers }, 200);
    expect(page1.data.map((m: any) => m.id)).toEqual([m3.id, m2.id]);
    expect(page1.next_cursor).toEqual(expect.any(String));
    const { body: page2 } = await call(
      app,
      { method: 'GET', url: `/memory?limit=2&cursor=${page1.next_cursor}`, headers: u.headers },
      200,
    );
    expect(page2.data.map((m: any) => m.id)).toEqual([m1.id]);
    expect(page2.next_cursor).toBeNull();
  });

  it('filters by session, agent and time window', async () => {
    const u = await createUser(app);
    const sid = await seedSession(ctx, u.userId, { name: 'trip' });
    const inSession = await add(u.headers, 'Note inside the session', { session_id: sid });
    const outside = await add(u.headers, 'Note outside any session');
    const { body: bySession } = await call(
      app,
      { method: 'GET', url: `/memory?session_id=${sid}`, headers: u.headers },
      200,
    );
    expect(bySession.data.map((m: any) => m.id)).toEqual([inSession.id]);

    const since = encodeURIComponent(outside.created_at);
    const { body: late } = await call(app, { method: 'GET', url: `/memory?since=${since}`, headers: u.headers }, 200);
    expect(late.data.map((m: any) => m.id)).toEqual([outside.id]);
    const until = encodeURIComponent(inSession.created_at);
    const { body: early } = await call(app, { method: 'GET', url: `/memory?until=${until}`, headers: u.headers }, 200);
    expect(early.data.map((m: any) => m.id)).toEqual([inSession.id]);
    const { body: none } = await call(
      app,
      { method: 'GET', url: '/memory?agent_id=agt_nobody', headers: u.headers },
      200,
    );
    expect(none.data).toEqual([]);
  });

  it('pages with totals', async () => {
    const u = await createUser(app);
    for (let i = 0; i < 5; i++) await add(u.headers, `memory number ${i}`);
    const { body } = await call(
      app,
      { method: 'GET', url: '/memory/paginated?page=2&page_size=2', headers: u.headers },
      200,
    );
    expect(body).toMatchObject({ page: 2, page_size: 2, total: 5, total_pages: 3 });
    expect(body.data.map((m: any) => m.content)).toEqual(['memory number 2', 'memory number 1']);
    const { body: last } = await call(
      app,
      { method: 'GET', url: '/memory/paginated?page=3&page_size=2', headers: u.headers },
      200,
    );
    expect(last.data.map((m: any) => m.content)).toEqual(['memory number 0']);
    const { body: beyond } = await call(
      app,
      { method: 'GET', url: '/memory/paginated?page=9&page_size=2', headers: u.headers },
      200,
    );
    expect(beyond).toMatchObject({ data: [], total: 5, total_pages: 3 });
  });
});

const CORPUS = [
  'Called search_flights on skyscanner-api with origin "BER", destination "Lisbon" — succeeded (412 ms, HTTP 200): 3 flights; first: airline "TAP", price 142.',
  'Booked Hotel Aurora in Lisbon for three nights, confirmation QX7P2A.',
  'The user prefers aisle seats on long-haul flights.',
  'Deployed checkout-service version 2.4.0 to production; smoke tests passed.',
  'Incident on payments-api: error rate spiked because the TLS certificate expired.',
  'Maria Santos is allergic to shellfish.',
  'Weather forecast for Oslo: heavy snow, highs around -3 °C.',
  'Invoice totals were rounded incorrectly in acme/billing issue 431.',
];

describe('memory — hybrid search', () => {
  it('ranks the relevant memory first and reports score and similarity', async () => {
    const u = await createUser(app);
    for (const c of CORPUS) await add(u.headers, c);
    const { body } = await call(
      app,
      {
        method: 'GET',
        url: `/memory/search?q=${encodeURIComponent('which flights to Lisbon did I look up?')}`,
        headers: u.headers,
      },
      200,
    );
    expect(body.mode).toBe('hybrid');
    expect(body.vector_index).toBe(ctx.database.hasVector ? 'hnsw' : 'exact');
    expect(body.data[0].content).toBe(CORPUS[0]);
    for (const h of body.data) {
      expect(h.similarity).toBeGreaterThanOrEqual(0);
      expect(h.similarity).toBeLessThanOrEqual(1);
      expect(h.score).toBeGreaterThanOrEqual(0);
      expect(h.score).toBeLessThanOrEqual(1);
    }
    const scores = body.data.map((h: any) => h.score);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    expect(body.data[0].vector_rank).toBe(1);
    expect(body.data[0].text_rank).toBe(1);
    // similarity is the cosine of the two embeddings
    const e = new LocalHashEmbedder(384);
    expect(body.data[0].similarity).toBeCloseTo(
      dot(e.embedOne('which flights to Lisbon did I look up?'), e.embedOne(CORPUS[0])),
      4,
    );
  });

  it('drops hits under the threshold and says how many', async () => {
    const u = await createUser(app);
    for (const c of CORPUS) await add(u.headers, c);
    const q = encodeURIComponent('shellfish allergy of Maria');
    const { body: all } = await call(
      app,
      { method: 'GET', url: `/memory/search?q=${q}&limit=20`, headers: u.headers },
      200,
    );
    expect(all.filtered_count).toBe(0);
    expect(all.data).toHaveLength(CORPUS.length);
    const top = all.data[0];
    expect(top.content).toBe(CORPUS[5]);
    const threshold = (top.similarity + all.data[1].similarity) / 2;
    const { body: some } = await call(
      app,
      { method: 'GET', url: `/memory/search?q=${q}&limit=20&threshold=${threshold}`, headers: u.headers },
      200,
    );
    expect(some.data.map((h: any) => h.id)).toEqual(
      all.data.filter((h: any) => h.similarity >= threshold).map((h: any) => h.id),
    );
    expect(some.filtered_count).toBe(CORPUS.length - some.data.length);
    expect(some.data.length).toBeGreaterThanOrEqual(1);
    const { body: none } = await call(
      app,
      { method: 'GET', url: `/memory/search?q=${q}&threshold=1`, headers: u.headers },
      200,
    );
    expect(none.data).toEqual([]);
    expect(none.filtered_count).toBe(CORPUS.length);
  });

  it('offers vector-only and text-only modes and honours limit and filters', async () => {
    const u = await createUser(app);
    const sid = await seedSession(ctx, u.userId);
    for (const c of CORPUS) await add(u.headers, c);
    await add(u.headers, 'Hotel in Lisbon: switched to a room with a balcony', { session_id: sid });
    const q = encodeURIComponent('Lisbon hotel');
    const { body: text } = await call(
      app,
      { method: 'GET', url: `/memory/search?q=${q}&mode=text`, headers: u.headers },
      200,
    );
    expect(text.data.every((h: any) => h.text_rank !== null && h.vector_rank === null)).toBe(true);
    expect(text.data.length).toBeGreaterThanOrEqual(2);
    const { body: vec } = await call(
      app,
      { method: 'GET', url: `/memory/search?q=${q}&mode=vector&limit=3`, headers: u.headers },
      200,
    );
    expect(vec.data).toHaveLength(3);
    expect(vec.data.every((h: any) => h.vector_rank !== null && h.text_rank === null)).toBe(true);
    const sims = vec.data.map((h: any) => h.similarity);
    expect([...sims].sort((a, b) => b - a)).toEqual(sims);
    const { body: scoped } = await call(
      app,
      { method: 'GET', url: `/memory/search?q=${q}&session_id=${sid}`, headers: u.headers },
      200,
    );
    expect(scoped.data.map((h: any) => h.content)).toEqual(['Hotel in Lisbon: switched to a room with a balcony']);
  });

  it('returns the same hits on every storage path (golden ranking)', async () => {
    // The expected orders below were produced once; the suite runs on PGlite (pgvector + HNSW) and
    // on PostgreSQL 15 (real[] + exact cosine), so passing on both proves both paths agree.
    const u = await createUser(app);
    for (const c of CORPUS) await add(u.headers, c);
    const order = async (q: string, mode: string) =>
      (
        await call(
          app,
          {
            method: 'GET',
            url: `/memory/search?q=${encodeURIComponent(q)}&mode=${mode}&limit=${mode === 'vector' ? 5 : 3}`,
            headers: u.headers,
          },
          200,
        )
      ).body.data.map((h: any) => CORPUS.indexOf(h.content));
    expect(await order('certificate expiry outage on the payment API', 'hybrid')).toEqual(GOLDEN.outage);
    expect(await order('billing rounding bug', 'hybrid')).toEqual(GOLDEN.rounding);
    expect(await order('snow in Oslo', 'hybrid')).toEqual(GOLDEN.snow);
    // vector arm = exact cosine ranking computed here
    const e = new LocalHashEmbedder(384);
    const q = 'production deployment of checkout';
    const expected = CORPUS.map((c, i) => [i, dot(e.embedOne(q), e.embedOne(c))] as const)
      .sort((a, b) => b[1] - a[1])
      .slice(0, 5)
      .map(([i]) => i);
    expect(await order(q, 'vector')).toEqual(expected);
  });
});

const GOLDEN = {
  outage: [4, 0, 1],
  rounding: [7, 4, 0],
  snow: [6, 1, 2],
};

describe('memory — automatic execution memories', () => {
  it('writes one sentence per execution off the request path, without secrets, once per execution', async () => {
    const u = await createUser(app);
    const sid = await seedSession(ctx, u.userId, { name: 'trip planning' });
    const [exe] = await seedExecutions(ctx, u.userId, sid, null, [
      {
        tool: 'search_flights',
        service: 'skyscanner',
        args: { origin: 'BER', destination: 'LIS', api_key: 'sk-live-very-secret', password: 'hunter2' },
        output: {
          flights: [
            { airline: 'TAP', price: 142, token: 'tok_secret' },
            { airline: 'easyJet', price: 99 },
          ],
        },
      },
    ]);
    await flushMemoryWrites(ctx);
    const { body } = await call(
      app,
      { method: 'GET', url: `/memory?session_id=${sid}&kind=execution`, headers: u.headers },
      200,
    );
    expect(body.data).toHaveLength(1);
    const m = body.data[0];
    expect(m).toMatchObject({
      source: 'execution',
      session_id: sid,
      execution_id: exe,
      metadata: { tool_name: 'search_flights', service_name: 'skyscanner', status: 'succeeded' },
    });
    expect(m.service_id).toMatch(/^svc_/);
    expect(m.tool_id).toMatch(/^tool_/);
    expect(m.content).toBe(
      'Called search_flights on skyscanner with origin "BER", destination "LIS" — succeeded (120 ms, HTTP 200): 2 flights; first: airline "TAP", price 142.',
    );
    expect(m.content).not.toMatch(/secret|hunter2|tok_/);
    // a replay of the same execution writes nothing new
    rememberExecution(ctx, {
      ...finishedCall({
        userId: u.userId,
        sessionId: sid,
        agentId: null,
        serviceId: 'svc_x',
        toolId: 'tool_x',
        toolName: 'x',
      }),
      executionId: exe,
      serviceName: 'x',
    });
    await flushMemoryWrites(ctx);
    const { body: again } = await call(
      app,
      { method: 'GET', url: `/memory?session_id=${sid}&kind=execution`, headers: u.headers },
      200,
    );
    expect(again.data).toHaveLength(1);
    // and it is searchable
    const { body: hits } = await call(
      app,
      {
        method: 'GET',
        url: `/memory/search?q=${encodeURIComponent('flights to LIS')}&kind=execution`,
        headers: u.headers,
      },
      200,
    );
    expect(hits.data[0].execution_id).toBe(exe);
  });

  it('adds well under 0.2 ms to the caller', async () => {
    const u = await createUser(app);
    const sid = await seedSession(ctx, u.userId);
    const n = 300;
    const input = (i: number) => ({
      executionId: `exe_perf${String(i).padStart(22, '0')}${u.userId.slice(-4)}`,
      userId: u.userId,
      sessionId: sid,
      agentId: null,
      serviceId: 'svc_perf',
      serviceName: 'perf',
      toolId: 'tool_perf',
      toolName: 'ping',
      arguments: { n: i },
      status: 'succeeded' as const,
      httpStatus: 200,
      output: { ok: true, items: [1, 2, 3] },
      error: null,
      durationMs: 3,
    });
    const t0 = performance.now();
    for (let i = 0; i < n; i++) rememberExecution(ctx, input(i));
    const perCall = (performance.now() - t0) / n;
    expect(perCall).toBeLessThan(0.2);
    await flushMemoryWrites(ctx);
    const { body } = await call(
      app,
      { method: 'GET', url: `/memory/paginated?session_id=${sid}&page_size=1&kind=execution`, headers: u.headers },
      200,
    );
    expect(body.total).toBe(n);
  });
});
