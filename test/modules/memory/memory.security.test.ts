import { describe, expect, it } from 'vitest';
import { flushMemoryWrites } from '../../../src/modules/memory/runtime.js';
import { agentToken, createAgent } from '../../helpers/agents.js';
import { call, createUser, setupApp, type TestUser } from '../../helpers/app.js';
import { seedExecutions, seedSession } from './helpers.js';

const { app, ctx } = await setupApp();

const NEAR_IDENTICAL = [
  'The user prefers aisle seats on long-haul flights to Lisbon',
  'Booked Hotel Aurora in Lisbon for three nights, confirmation QX7P2A',
  'Incident on payments-api: the TLS certificate expired',
];

async function add(u: TestUser, content: string, extra: Record<string, unknown> = {}) {
  return (await call(app, { method: 'POST', url: '/memory', headers: u.headers, payload: { content, ...extra } }, 201))
    .body;
}

describe('memory — isolation between users', () => {
  it('no endpoint returns another user’s near-identical memories', async () => {
    const alice = await createUser(app);
    const bob = await createUser(app);
    const aSession = await seedSession(ctx, alice.userId, { name: 'alice trip' });
    const bSession = await seedSession(ctx, bob.userId, { name: 'bob trip' });
    const mine = new Map<string, Set<string>>([
      [alice.userId, new Set()],
      [bob.userId, new Set()],
    ]);
    for (const c of NEAR_IDENTICAL) {
      mine.get(alice.userId)!.add((await add(alice, c, { session_id: aSession })).id);
      mine.get(bob.userId)!.add((await add(bob, `${c}.`, { session_id: bSession })).id);
    }
    await seedExecutions(ctx, alice.userId, aSession, null, [
      { tool: 'book_hotel', args: { city: 'Lisbon' }, output: { hotel: 'Hotel Aurora' } },
    ]);
    await seedExecutions(ctx, bob.userId, bSession, null, [
      { tool: 'book_hotel', args: { city: 'Lisbon' }, output: { hotel: 'Hotel Aurora' } },
    ]);
    await flushMemoryWrites(ctx);
    await call(app, { method: 'POST', url: `/memory/sessions/${aSession}/summarize`, headers: alice.headers }, 200);
    await call(app, { method: 'POST', url: `/memory/sessions/${bSession}/summarize`, headers: bob.headers }, 200);

    for (const [u, other] of [
      [alice, bob],
      [bob, alice],
    ] as const) {
      const owned = (id: string) => {
        expect(mine.get(other.userId)!.has(id)).toBe(false);
      };
      const { body: list } = await call(
        app,
        { method: 'GET', url: '/memory?limit=100&kind=all', headers: u.headers },
        200,
      );
      expect(list.data).toHaveLength(5); // 3 notes + 1 execution + 1 summary
      list.data.forEach((m: any) => owned(m.id));
      const ownIds = new Set(list.data.map((m: any) => m.id));
      for (const q of [...NEAR_IDENTICAL, 'Lisbon', 'book_hotel Hotel Aurora']) {
        for (const mode of ['hybrid', 'vector', 'text']) {
          const { body } = await call(
            app,
            {
              method: 'GET',
              url: `/memory/search?q=${encodeURIComponent(q)}&mode=${mode}&limit=100&kind=all`,
              headers: u.headers,
            },
            200,
          );
          expect(
            body.data.every((h: any) => ownIds.has(h.id)),
            `${mode} ${q}`,
          ).toBe(true);
        }
      }
      const { body: paged } = await call(
        app,
        { method: 'GET', url: '/memory/paginated?page_size=100&kind=all', headers: u.headers },
        200,
      );
      expect(paged.total).toBe(5);
      const { body: stats } = await call(app, { method: 'GET', url: '/memory/stats', headers: u.headers }, 200);
      expect(stats.total_memories).toBe(5);
      expect(stats.summaries).toBe(1);
      const { body: context } = await call(
        app,
        { method: 'GET', url: '/memory/context/agent?q=Lisbon&limit=50', headers: u.headers },
        200,
      );
      expect(context.relevant_memories.every((m: any) => ownIds.has(m.id))).toBe(true);
      expect(context.recent_sessions.map((s: any) => s.id)).toEqual([u === alice ? aSession : bSession]);
      // filtering by the other user's session yields nothing
      const otherSession = u === alice ? bSession : aSession;
      const { body: filtered } = await call(
        app,
        { method: 'GET', url: `/memory?session_id=${otherSession}`, headers: u.headers },
        200,
      );
      expect(filtered.data).toEqual([]);
      const { body: searched } = await call(
        app,
        { method: 'GET', url: `/memory/search?q=Lisbon&session_id=${otherSession}`, headers: u.headers },
        200,
      );
      expect(searched.data).toEqual([]);
    }
  });

  it('another user’s session is not found on every session route, and DELETE spares other users', async () => {
    const alice = await createUser(app);
    const mallory = await createUser(app);
    const sid = await seedSession(ctx, alice.userId);
    await seedExecutions(ctx, alice.userId, sid, null, [{ tool: 'ping' }]);
    await add(alice, 'alice secret plan', { session_id: sid });
    await call(app, { method: 'POST', url: `/memory/sessions/${sid}/summarize`, headers: alice.headers }, 200);
    for (const [method, url] of [
      ['GET', `/memory/sessions/${sid}`],
      ['GET', `/memory/sessions/${sid}/timeline`],
      ['POST', `/memory/sessions/${sid}/summarize`],
      ['DELETE', `/memory?session_id=${sid}`],
    ] as const) {
      const { body } = await call(app, { method, url, headers: mallory.headers }, 404);
      expect(body.detail).toBe('Session not found');
    }
    await call(
      app,
      { method: 'POST', url: '/memory', headers: mallory.headers, payload: { content: 'inject', session_id: sid } },
      404,
    );
    const { body: del } = await call(app, { method: 'DELETE', url: '/memory', headers: mallory.headers }, 200);
    expect(del).toEqual({ deleted: 0, deleted_summaries: 0 });
    const { body: still } = await call(app, { method: 'GET', url: '/memory/stats', headers: alice.headers }, 200);
    expect(still).toMatchObject({ total_memories: 3, summaries: 1 });
    await call(app, { method: 'GET', url: `/memory/sessions/${sid}`, headers: alice.headers }, 200);
  });

  it('treats query text as data (no SQL or tsquery injection)', async () => {
    const u = await createUser(app);
    await add(u, "O'Brien's invoice: 100% paid & closed | archived (final)");
    for (const q of [
      "' OR 1=1 --",
      'a & | ! ( ) : * <->',
      "O'Brien's",
      '\\',
      '%',
      '"; drop table memories; --',
      'ünïcødé 日本語',
    ]) {
      const { body } = await call(
        app,
        { method: 'GET', url: `/memory/search?q=${encodeURIComponent(q)}`, headers: u.headers },
        200,
      );
      expect(body.data.length).toBeLessThanOrEqual(1);
    }
    const { body } = await call(
      app,
      { method: 'GET', url: `/memory/search?q=${encodeURIComponent("O'Brien invoice")}&mode=text`, headers: u.headers },
      200,
    );
    expect(body.data).toHaveLength(1);
  });
});

describe('memory — agent principals', () => {
  it('an agent reads and writes only its own memories within its owner’s account', async () => {
    const owner = await createUser(app);
    const agentA = await createAgent(app, owner, { name: 'planner' });
    const agentB = await createAgent(app, owner, { name: 'booker' });
    const tokA = await agentToken(app, agentA);
    const stranger = await createUser(app);

    const userNote = await add(owner, 'owner private note about Lisbon');
    const byB = await add(owner, 'note for the booker about Lisbon', { agent_id: agentB.id });
    const { body: byA } = await call(
      app,
      {
        method: 'POST',
        url: '/memory',
        headers: tokA.headers,
        payload: { content: 'agent A learned Lisbon hotels are cheap in March' },
      },
      201,
    );
    expect(byA.agent_id).toBe(agentA.id);
    await call(
      app,
      { method: 'POST', url: '/memory', headers: tokA.headers, payload: { content: 'x', agent_id: agentB.id } },
      403,
    );
    // a user cannot file memories under someone else's agent
    await call(
      app,
      { method: 'POST', url: '/memory', headers: stranger.headers, payload: { content: 'x', agent_id: agentA.id } },
      404,
    );

    const { body: seenByA } = await call(app, { method: 'GET', url: '/memory', headers: tokA.headers }, 200);
    expect(seenByA.data.map((m: any) => m.id)).toEqual([byA.id]);
    const { body: searchA } = await call(
      app,
      { method: 'GET', url: '/memory/search?q=Lisbon&limit=50', headers: tokA.headers },
      200,
    );
    expect(searchA.data.map((m: any) => m.id)).toEqual([byA.id]);
    const { body: peek } = await call(
      app,
      { method: 'GET', url: `/memory?agent_id=${agentB.id}`, headers: tokA.headers },
      200,
    );
    expect(peek.data).toEqual([]);
    const { body: statsA } = await call(app, { method: 'GET', url: '/memory/stats', headers: tokA.headers }, 200);
    expect(statsA.total_memories).toBe(1);
    const { body: ctxA } = await call(
      app,
      { method: 'GET', url: '/memory/context/agent?q=Lisbon', headers: tokA.headers },
      200,
    );
    expect(ctxA.agent_id).toBe(agentA.id);
    expect(ctxA.relevant_memories.map((m: any) => m.id)).toEqual([byA.id]);

    // the owner sees everything, and can narrow to one agent
    const { body: all } = await call(app, { method: 'GET', url: '/memory', headers: owner.headers }, 200);
    expect(new Set(all.data.map((m: any) => m.id))).toEqual(new Set([userNote.id, byB.id, byA.id]));
    const { body: onlyB } = await call(
      app,
      { method: 'GET', url: `/memory?agent_id=${agentB.id}`, headers: owner.headers },
      200,
    );
    expect(onlyB.data.map((m: any) => m.id)).toEqual([byB.id]);

    // agent sessions: a note the owner adds to the agent's session is the agent's; other sessions are not found
    const agentSession = await seedSession(ctx, owner.userId, { agentId: agentA.id });
    const ownerSession = await seedSession(ctx, owner.userId);
    const shared = await add(owner, 'owner hint inside the agent session', { session_id: agentSession });
    expect(shared.agent_id).toBe(agentA.id);
    await call(app, { method: 'GET', url: `/memory/sessions/${ownerSession}/timeline`, headers: tokA.headers }, 404);
    await call(
      app,
      { method: 'POST', url: '/memory', headers: tokA.headers, payload: { content: 'x', session_id: ownerSession } },
      404,
    );
    const { body: tl } = await call(
      app,
      { method: 'GET', url: `/memory/sessions/${agentSession}/timeline`, headers: tokA.headers },
      200,
    );
    expect(tl.data.map((e: any) => e.id)).toEqual([shared.id]);

    // an agent's DELETE removes only its own memories
    const { body: del } = await call(app, { method: 'DELETE', url: '/memory', headers: tokA.headers }, 200);
    expect(del.deleted).toBe(2);
    const { body: after } = await call(app, { method: 'GET', url: '/memory', headers: owner.headers }, 200);
    expect(new Set(after.data.map((m: any) => m.id))).toEqual(new Set([userNote.id, byB.id]));
  });

  it("expand=neighbors shows an agent only its own memories as a hit's neighbours, never another user's", async () => {
    const owner = await createUser(app);
    const other = await createUser(app);
    const agentA = await createAgent(app, owner, { name: 'planner' });
    const agentB = await createAgent(app, owner, { name: 'booker' });
    const tokA = await agentToken(app, agentA);
    const s = await seedSession(ctx, owner.userId); // a session of the owner, no agent: anyone of the account may file into it
    await add(owner, 'owner: which ferry goes to the island?', { session_id: s });
    const hit = await add(owner, 'planner: the ferry to Ilha leaves at nine', { session_id: s, agent_id: agentA.id });
    await add(owner, 'booker: ferry tickets are booked', { session_id: s, agent_id: agentB.id });
    const next = await add(owner, 'planner: pack for rain', { session_id: s, agent_id: agentA.id });
    const search = async (u: { headers: Record<string, string> }) =>
      (
        await call(
          app,
          { method: 'GET', url: '/memory/search?q=ferry%20Ilha&expand=neighbors', headers: u.headers },
          200,
        )
      ).body.data;
    const seenByA = (await search(tokA)).find((h: any) => h.id === hit.id);
    expect(seenByA.neighbors.previous).toBeNull(); // the owner's own turn is not the agent's
    expect(seenByA.neighbors.next.id).toBe(next.id); // agent B's turn is skipped
    const seenByOwner = (await search(owner)).find((h: any) => h.id === hit.id);
    expect(seenByOwner.neighbors.previous.content).toBe('owner: which ferry goes to the island?');
    expect(seenByOwner.neighbors.next.content).toBe('booker: ferry tickets are booked');
    expect(await search(other)).toEqual([]);
  });
});
