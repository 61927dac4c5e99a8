/**
 * The `memory.search` span (issue #41): with the in-process trace store on, `GET /memory/search`
 * yields a `memory.search` span inside the request's trace, owned by the caller's account, with what
 * each arm found and how long it took (service.ts `searchAttributes`). Runs on PGlite (both arms in
 * process) and on PostgreSQL (TEST_DATABASE_URL: the fused statement).
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { call, createUser, setupApp, type TestUser } from '../../helpers/app.js';

const { app, ctx } = await setupApp({ TRACES_STORE: 'on' });

interface StoredSpan {
  span_id: string;
  parent_span_id: string | null;
  name: string;
  attributes: Record<string, unknown>;
}

/** Search with a caller's `traceparent`; the stored spans of that trace. */
async function tracedSearch(u: TestUser, q: string, mode?: string): Promise<{ hits: number; spans: StoredSpan[] }> {
  const traceId = randomBytes(16).toString('hex');
  const { body } = await call(
    app,
    {
      method: 'GET',
      url: `/memory/search?q=${encodeURIComponent(q)}&limit=5${mode ? `&mode=${mode}` : ''}`,
      headers: { ...u.headers, traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` },
    },
    200,
  );
  for (let i = 0; i < 50; i++) {
    const res = await app.inject({ method: 'GET', url: `/v1/traces/${traceId}`, headers: u.headers });
    const spans = res.statusCode === 200 ? (res.json().spans as StoredSpan[]) : [];
    if (spans.some((s) => s.name === 'memory.search')) return { hits: body.data.length, spans };
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no memory.search span in trace ${traceId}`);
}

describe(`memory — the memory.search span (${ctx.database.engine})`, () => {
  it('records both arms’ candidates and durations, the path and the query embedding, under the request span', async () => {
    const u = await createUser(app);
    for (const content of [
      'Caroline: I went to the pottery class on Saturday',
      'Melanie: The pottery we made was lovely',
      'Caroline: My sister adopted a puppy last week',
    ])
      await call(app, { method: 'POST', url: '/memory', headers: u.headers, payload: { content } }, 201);

    const { hits, spans } = await tracedSearch(u, 'pottery class');
    const span = spans.find((s) => s.name === 'memory.search')!;
    const a = span.attributes;
    expect(a['platform.account_id']).toBe(u.userId);
    expect(a['memory.search.mode']).toBe('hybrid');
    expect(a['memory.search.limit']).toBe(5);
    expect(a['memory.search.path']).toBe(ctx.database.engine === 'pglite' ? 'in_process' : 'sql');
    expect(a['memory.search.results']).toBe(hits);
    expect(a['memory.search.text.candidates']).toBe(2); // the two memories that say "pottery"
    expect(a['memory.search.vector.candidates']).toBe(3); // every memory has a vector
    expect(a['memory.search.embedding.cached']).toBe(false);
    expect(typeof a['memory.search.embedding.duration_ms']).toBe('number');
    if (ctx.database.engine === 'pglite') {
      expect(a['memory.search.text.duration_ms']).toBeGreaterThanOrEqual(0);
      expect(a['memory.search.vector.duration_ms']).toBeGreaterThanOrEqual(0);
    }
    // a child of the request's span (the trace's root here is the HTTP SERVER span)
    const parent = spans.find((s) => s.span_id === span.parent_span_id);
    expect(parent?.name).toMatch(/^GET \/memory\/search/);

    // the same query again: its vector comes from the query cache
    const again = (await tracedSearch(u, 'pottery class')).spans.find((s) => s.name === 'memory.search')!;
    expect(again.attributes['memory.search.embedding.cached']).toBe(true);
  });

  it('leaves out the arm a mode does not run', async () => {
    const u = await createUser(app);
    await call(
      app,
      { method: 'POST', url: '/memory', headers: u.headers, payload: { content: 'Harvest festival' } },
      201,
    );
    const text = (await tracedSearch(u, 'harvest', 'text')).spans.find((s) => s.name === 'memory.search')!;
    expect(text.attributes['memory.search.mode']).toBe('text');
    expect(text.attributes['memory.search.text.candidates']).toBe(1);
    expect(text.attributes).not.toHaveProperty('memory.search.vector.candidates');
    expect(text.attributes).not.toHaveProperty('memory.search.vector.duration_ms');
    const vector = (await tracedSearch(u, 'harvest', 'vector')).spans.find((s) => s.name === 'memory.search')!;
    expect(vector.attributes['memory.search.vector.candidates']).toBe(1);
    expect(vector.attributes).not.toHaveProperty('memory.search.text.candidates');
  });
});
