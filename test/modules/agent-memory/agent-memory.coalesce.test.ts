/**
 * Coalesced reads and writes of the agent KV memory (agent-memory/coalesce.ts, issue 18 §3): requests
 * that arrive together share one statement, and each still gets exactly its own answer — the
 * entries of several agents, awkward keys, missing and expired entries, one key written many times
 * at once, and a bad entry that must fail alone.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { sql } from 'drizzle-orm';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { agentToken, createAgent } from '../../helpers/agents.js';
import { execRows } from '../../../src/db/client.js';
import { getEntry, putEntry } from '../../../src/modules/agent-memory/service.js';
import { prepareAgentMemoryStatements } from '../../../src/modules/agent-memory/statements.js';

const { app, ctx } = await setupApp();
const statements = prepareAgentMemoryStatements(ctx.db);

async function newAgent() {
  const a = await createAgent(app, await createUser(app));
  return { ...a, ...(await agentToken(app, a)) };
}

/** Counts the runs of the single-row and the batched statements (the coalescers call them by property). */
function spyStatements() {
  return {
    get: vi.spyOn(statements.get, 'run'),
    getMany: vi.spyOn(statements.getMany, 'run'),
    upsert: vi.spyOn(statements.upsert, 'run'),
    upsertMany: vi.spyOn(statements.upsertMany, 'run'),
  };
}

afterEach(() => vi.restoreAllMocks());

const AWKWARD = ['a,b', '"quoted"', '{braces}', 'back\\slash', 'NULL', 'with space', 'ünïcødé 😀', 'k'.repeat(256)];

describe('agent memory — coalesced statements', () => {
  it('answers concurrent GETs of several agents from fewer statements than requests, each with its own entry, 404 for missing ones', async () => {
    const agents = [await newAgent(), await newAgent(), await newAgent()];
    for (const [n, a] of agents.entries()) {
      for (const key of AWKWARD)
        await call(
          app,
          {
            method: 'PUT',
            url: `/v2/memory/${encodeURIComponent(key)}`,
            headers: a.headers,
            payload: { value: { agent: n, key } },
          },
          201,
        );
    }
    const spies = spyStatements();
    const asks = agents.flatMap((a, n) => [...AWKWARD, 'missing'].map((key) => ({ a, n, key })));
    const answers = await Promise.all(
      asks.map(({ a, key }) =>
        app.inject({ method: 'GET', url: `/v2/memory/${encodeURIComponent(key)}`, headers: a.headers }),
      ),
    );
    answers.forEach((res, i) => {
      const { n, key } = asks[i];
      if (key === 'missing') return expect(res.statusCode).toBe(404);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ key, value: { agent: n, key }, version: 1 });
      expect(res.headers.etag).toBe('"1"');
    });
    expect(spies.getMany).toHaveBeenCalled();
    const carried =
      spies.getMany.mock.calls.reduce((n, [v]) => n + (v.keys as string[]).length, 0) + spies.get.mock.calls.length;
    expect(carried).toBe(asks.length);
    expect(spies.getMany.mock.calls.length + spies.get.mock.calls.length).toBeLessThan(asks.length);
  });

  it('an expired entry read in a batch is 404 and purged', async () => {
    const a = await newAgent();
    await call(
      app,
      { method: 'PUT', url: '/v2/memory/old', headers: a.headers, payload: { value: 1, ttl_seconds: 60 } },
      201,
    );
    await call(app, { method: 'PUT', url: '/v2/memory/fresh', headers: a.headers, payload: { value: 2 } }, 201);
    await ctx.db.execute(
      sql`update agent_memory set expires_at = now() - interval '1 second' where agent_id = ${a.id} and key = 'old'`,
    );
    const [old, fresh] = await Promise.all(
      ['old', 'fresh'].map((k) => app.inject({ method: 'GET', url: `/v2/memory/${k}`, headers: a.headers })),
    );
    expect(old.statusCode).toBe(404);
    expect(fresh.json()).toMatchObject({ key: 'fresh', value: 2 });
    await vi.waitFor(async () => {
      expect(
        await execRows(ctx.db, sql`select 1 from agent_memory where agent_id = ${a.id} and key = 'old'`),
      ).toHaveLength(0);
    });
  });

  it('concurrent PUTs of one key are applied one after the other: versions 1..n, one 201, the last write stays', async () => {
    const a = await newAgent();
    const other = await newAgent();
    const spies = spyStatements();
    const n = 12;
    const writes = [
      ...Array.from({ length: n }, (_, i) =>
        app.inject({ method: 'PUT', url: '/v2/memory/counter', headers: a.headers, payload: { value: { i } } }),
      ),
      ...AWKWARD.map((key) =>
        app.inject({
          method: 'PUT',
          url: `/v2/memory/${encodeURIComponent(key)}`,
          headers: other.headers,
          payload: { value: key, ttl_seconds: 3600 },
        }),
      ),
    ];
    const answers = await Promise.all(writes);
    const mine = answers.slice(0, n);
    expect(mine.map((r) => r.statusCode).sort((x, y) => x - y)).toEqual([...Array(n - 1).fill(200), 201]);
    const versions = mine.map((r) => r.json().version as number);
    expect([...versions].sort((x, y) => x - y)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    mine.forEach((r) => expect(r.headers.etag).toBe(`"${r.json().version}"`));
    const last = mine[versions.indexOf(n)].json();
    const { body } = await call(app, { method: 'GET', url: '/v2/memory/counter', headers: a.headers }, 200);
    expect(body).toEqual(last);
    for (const [i, key] of AWKWARD.entries()) {
      const r = answers[n + i];
      expect(r.statusCode).toBe(201);
      expect(r.json()).toMatchObject({ key, value: key, version: 1, expires_at: expect.any(String) });
    }
    expect(spies.upsertMany).toHaveBeenCalled();
    const statementsRun = spies.upsertMany.mock.calls.length + spies.upsert.mock.calls.length;
    expect(statementsRun).toBeLessThan(writes.length);
  });

  it('a bad entry fails alone: the others of its batch are written once and read back', async () => {
    const a = await newAgent();
    const keys = ['x1', 'x2', 'x3'];
    const results = await Promise.allSettled([
      ...keys.map((k) => putEntry(ctx, a.id, k, { value: k })),
      putEntry(ctx, 'agt_does_not_exist', 'x1', { value: 'orphan' }), // foreign key violation
    ]);
    expect(results.slice(0, 3).map((r) => r.status === 'fulfilled' && r.value.entry.version)).toEqual([1, 1, 1]);
    expect(results[3].status).toBe('rejected');
    const reads = await Promise.allSettled([
      ...keys.map((k) => getEntry(ctx, a.id, k)),
      getEntry(ctx, a.id, 'nul\u0000key'),
    ]);
    expect(reads.slice(0, 3).map((r) => r.status === 'fulfilled' && r.value.value)).toEqual(keys);
    expect(reads[3].status).toBe('rejected');
  });

  it('large values are split so one statement carries at most 4 MiB, and every write lands', async () => {
    const a = await newAgent();
    const spies = spyStatements();
    const big = (i: number) => `${i}:`.padEnd(250 * 1024, 'v');
    const n = 24; // 6 MiB of values
    const written = await Promise.all(
      Array.from({ length: n }, (_, i) => putEntry(ctx, a.id, `big-${i}`, { value: big(i) })),
    );
    expect(written.map((w) => w.entry.version)).toEqual(Array(n).fill(1));
    const sizes = spies.upsertMany.mock.calls.map(([v]) => (v.bytes as number[]).reduce((x, y) => x + y, 0));
    expect(sizes.length + spies.upsert.mock.calls.length).toBeGreaterThan(1);
    for (const size of sizes) expect(size).toBeLessThanOrEqual(4 * 1024 * 1024);
    const read = await Promise.all(Array.from({ length: n }, (_, i) => getEntry(ctx, a.id, `big-${i}`)));
    read.forEach((e, i) => expect(e.value).toBe(big(i)));
  });
});
