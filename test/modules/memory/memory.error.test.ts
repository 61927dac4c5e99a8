import { describe, expect, it } from 'vitest';
import type { AppContext } from '../../../src/context.js';
import { initMemory, settleMemoryEmbeddings } from '../../../src/modules/memory/runtime.js';
import { addMemory, searchMemories } from '../../../src/modules/memory/service.js';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { seedSession } from './helpers.js';

const { app, ctx } = await setupApp();
// a private in-memory database for the embedding-space test (it changes the space)
const own = await setupApp({ DATABASE_URL: undefined });

describe('memory — bad input', () => {
  it('accepts content up to 16 KiB (UTF-8 bytes) and answers 413 beyond', async () => {
    const u = await createUser(app);
    const exact = 'é'.repeat(8192); // 16384 bytes
    await call(app, { method: 'POST', url: '/memory', headers: u.headers, payload: { content: exact } }, 201);
    const { body } = await call(
      app,
      { method: 'POST', url: '/memory', headers: u.headers, payload: { content: `${exact}a` } },
      413,
    );
    expect(body).toMatchObject({ code: 'payload_too_large', status: 413 });
    expect(body.detail).toContain('16385 bytes');
    const { body: meta } = await call(
      app,
      {
        method: 'POST',
        url: '/memory',
        headers: u.headers,
        payload: { content: 'x', metadata: { blob: 'y'.repeat(9000) } },
      },
      413,
    );
    expect(meta.detail).toContain('metadata');
  });

  it('rejects malformed bodies with 400 and field pointers', async () => {
    const u = await createUser(app);
    const bad = async (payload: unknown, pointer: string) => {
      const { body } = await call(
        app,
        { method: 'POST', url: '/memory', headers: u.headers, payload: payload as object },
        400,
      );
      expect(body.code).toBe('validation_failed');
      expect(body.errors.map((e: any) => e.pointer)).toContain(pointer);
    };
    await bad({}, '/content');
    await bad({ content: '' }, '/content');
    await bad({ content: '   \n ' }, '/content');
    await bad({ content: 42 }, '/content');
    await bad({ content: 'ok', unknown: 1 }, '/unknown');
    await bad({ content: 'ok', metadata: 'not an object' }, '/metadata');
    await bad({ content: 'ok', session_id: '' }, '/session_id');
    await bad({ content: 'ok', kind: 'execution' }, '/kind'); // executions are the hook's own
    await bad({ content: 'ok', kind: 'diary' }, '/kind');
    const { body } = await call(
      app,
      {
        method: 'POST',
        url: '/memory',
        headers: { ...u.headers, 'content-type': 'application/json' },
        payload: '{"content":',
      },
      400,
    );
    expect(body.code).toBe('validation_failed');
  });

  it('404s unknown sessions and agents on write', async () => {
    const u = await createUser(app);
    await call(
      app,
      {
        method: 'POST',
        url: '/memory',
        headers: u.headers,
        payload: { content: 'x', session_id: 'ses_00000000000000000000000000' },
      },
      404,
    );
    await call(
      app,
      {
        method: 'POST',
        url: '/memory',
        headers: u.headers,
        payload: { content: 'x', agent_id: 'agt_00000000000000000000000000' },
      },
      404,
    );
  });

  it('validates search, list and page parameters', async () => {
    const u = await createUser(app);
    const bad = async (url: string) => {
      const { body } = await call(app, { method: 'GET', url, headers: u.headers }, 400);
      expect(body.code).toBe('validation_failed');
      return body;
    };
    await bad('/memory/search');
    await bad('/memory/search?q=');
    const blank = await bad('/memory/search?q=%20%20');
    expect(blank.errors[0]).toMatchObject({ in: 'query', pointer: '/q' });
    await bad('/memory/search?q=x&threshold=1.5');
    await bad('/memory/search?q=x&threshold=-0.1');
    await bad('/memory/search?q=x&threshold=high');
    await bad('/memory/search?q=x&limit=0');
    await bad('/memory/search?q=x&limit=101');
    await bad('/memory/search?q=x&mode=semantic');
    await bad('/memory/search?q=x&expand=summary');
    await bad('/memory/search?q=x&kind=diary');
    await bad('/memory/search?q=x&kind=note,');
    await bad('/memory?kind=executions');
    await bad('/memory/paginated?kind=ALL');
    await bad(`/memory/search?q=${'x'.repeat(2001)}`);
    await bad('/memory/paginated?page_size=101');
    await bad('/memory/paginated?page=0');
    await bad('/memory?limit=500');
    await bad('/memory?since=yesterday');
    await bad('/memory?cursor=%00%01');
    await bad('/memory/context/agent?limit=51');
    await bad('/memory/sessions/ses_x/timeline?limit=0');
  });

  it('404s sessions without summary, unknown sessions and bad timeline cursors', async () => {
    const u = await createUser(app);
    const sid = await seedSession(ctx, u.userId);
    const { body } = await call(app, { method: 'GET', url: `/memory/sessions/${sid}`, headers: u.headers }, 404);
    expect(body.detail).toContain('no summary yet');
    await call(app, { method: 'GET', url: '/memory/sessions/ses_00000000000000000000000000', headers: u.headers }, 404);
    await call(
      app,
      { method: 'GET', url: '/memory/sessions/ses_00000000000000000000000000/timeline', headers: u.headers },
      404,
    );
    await call(
      app,
      { method: 'POST', url: '/memory/sessions/ses_00000000000000000000000000/summarize', headers: u.headers },
      404,
    );
    await call(
      app,
      { method: 'DELETE', url: '/memory?session_id=ses_00000000000000000000000000', headers: u.headers },
      404,
    );
    const { body: empty } = await call(
      app,
      { method: 'GET', url: `/memory/sessions/${sid}/timeline`, headers: u.headers },
      200,
    );
    expect(empty).toEqual({ data: [], next_cursor: null });
    const { body: s } = await call(
      app,
      { method: 'POST', url: `/memory/sessions/${sid}/summarize`, headers: u.headers },
      200,
    );
    expect(s).toMatchObject({ execution_count: 0, summary: 'The session ran no tools.', key_points: [] });
  });

  it('needs authentication everywhere', async () => {
    const routes: Array<[string, string]> = [
      ['POST', '/memory'],
      ['GET', '/memory'],
      ['GET', '/memory/paginated'],
      ['GET', '/memory/search?q=x'],
      ['GET', '/memory/context/agent'],
      ['GET', '/memory/sessions/ses_x'],
      ['GET', '/memory/sessions/ses_x/timeline'],
      ['POST', '/memory/sessions/ses_x/summarize'],
      ['GET', '/memory/stats'],
      ['DELETE', '/memory'],
    ];
    for (const [method, url] of routes) {
      const res = await app.inject({
        method: method as 'GET',
        url,
        ...(method === 'POST' ? { payload: { content: 'x' } } : {}),
      });
      expect(res.statusCode, `${method} ${url}`).toBe(401);
      expect(res.json().code).toBe('unauthenticated');
      const bad = await app.inject({ method: method as 'GET', url, headers: { authorization: 'Bearer not-a-jwt' } });
      expect(bad.statusCode, `${method} ${url}`).toBe(401);
    }
  });
});

describe('memory — embedding space at start-up', () => {
  it('refuses another dimension count once vectors are stored, and re-embeds when asked', async () => {
    const u = await createUser(own.app);
    await call(
      own.app,
      { method: 'POST', url: '/memory', headers: u.headers, payload: { content: 'Flight to Lisbon with TAP' } },
      201,
    );
    await call(
      own.app,
      { method: 'POST', url: '/memory', headers: u.headers, payload: { content: 'Snow in Oslo' } },
      201,
    );
    const with512 = (reembed: boolean): AppContext => ({
      ...own.ctx,
      config: {
        ...own.ctx.config,
        memory: {
          ...own.ctx.config.memory,
          reembedOnStart: reembed,
          embeddings: { ...own.ctx.config.memory.embeddings, dimensions: 512 },
        },
      },
      onClose: [],
      memory: undefined, // a fresh memory runtime (provider, writer) for the new configuration
    });
    await expect(initMemory(with512(false))).rejects.toThrow(
      /2 stored memories were embedded with local\/local-hash-v1 \(384 dimensions\), but the configuration asks for local\/local-hash-v1 \(512 dimensions\).*MEMORY_REEMBED=on/,
    );
    const next = with512(true);
    await initMemory(next);
    const actor = { accountId: u.userId, agentId: null };
    // the app is up at once; the vectors come from the background back-fill, full text finds the rows meanwhile
    const early = await searchMemories(next, actor, { q: 'flight Lisbon', mode: 'text' });
    expect(early.data.map((m) => m.content)).toContain('Flight to Lisbon with TAP');
    await settleMemoryEmbeddings(next);
    const hits = await searchMemories(next, actor, { q: 'flight Lisbon', mode: 'vector' });
    expect(hits.data[0].content).toBe('Flight to Lisbon with TAP');
    expect(hits.data[0].similarity).toBeGreaterThan(0.2);
    const stored = await addMemory(next, actor, { content: 'a third one' });
    expect(stored.id).toMatch(/^mem_/);
  });
});
