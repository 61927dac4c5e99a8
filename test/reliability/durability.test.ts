/**
 * Durability under SIGKILL (issue 11 §2.4), on PostgreSQL + Redis only: a real server process
 * (`node --import tsx src/main.ts`) takes concurrent writes — agent-memory PUTs, memory adds
 * (`POST /memory`) and tool executions against a loopback upstream — and is killed with SIGKILL in
 * the middle of them, then started again on the same database. A ledger keeps every write that
 * was answered 2xx; after the restart every one of them is read back.
 *
 * The contract (docs/adr/0207-durability-a-2xx-means-committed.md): a 2xx means committed — agent-memory entries,
 * explicit memories and execution records are in PostgreSQL before the answer is sent. The one
 * thing an acknowledged request may lose is the *automatic* memory of an execution (written behind
 * the answer by the memory module's batching writer, at most its flush delay later): the test
 * asserts that every automatic memory that exists belongs to an acknowledged or in-flight
 * execution, never more than one per execution, and reports how many were lost.
 *
 * Quotas with two API processes (exact counts under 60 concurrent executions, the upstream seeing
 * exactly the quota) are covered by test/topology/topology.test.ts ("counts quotas and rate limits
 * once across both instances"), which runs two API processes behind HAProxy on PostgreSQL + Redis.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/net.js';
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js';

const why =
  'needs TEST_DATABASE_URL and TEST_REDIS_URL: a killed PGlite process holds its data in its own memory (embedded mode keeps nothing to restart on)';
const enabled = !!process.env.TEST_DATABASE_URL && !!process.env.TEST_REDIS_URL;

type Json = Record<string, any>;

async function httpCall(
  base: string,
  method: string,
  url: string,
  opts: { headers?: Record<string, string>; body?: unknown } = {},
): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${base}${url}`, {
    method,
    headers: { ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}), ...opts.headers },
    body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Json) : {} };
}

async function expectHttp(
  base: string,
  method: string,
  url: string,
  status: number,
  opts: { headers?: Record<string, string>; body?: unknown } = {},
): Promise<Json> {
  const r = await httpCall(base, method, url, opts);
  if (r.status !== status)
    throw new Error(`${method} ${url}: expected ${status}, got ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body;
}

describe.skipIf(!enabled)(`durability under SIGKILL ${enabled ? '' : `(skipped: ${why})`}`, () => {
  const dirs: string[] = [];
  const procs: ServerProcess[] = [];
  let upstream: http.Server | undefined;
  afterAll(async () => {
    for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    upstream?.close();
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  async function start(port: number): Promise<ServerProcess> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-durable-'));
    dirs.push(dir);
    const p = startServerProcess({
      DATABASE_URL: process.env.TEST_DATABASE_URL!,
      REDIS_URL: process.env.TEST_REDIS_URL!,
      PORT: String(port),
      DATA_DIR: dir,
      LOG_LEVEL: 'warn',
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      RATE_LIMIT_REDIS_PREFIX: `durable:${randomBytes(4).toString('hex')}:rl:`,
      SECRETS_KEY: Buffer.alloc(32, 5).toString('base64'),
      AUTH_TEST_TOKENS: 'on',
      AUTH_TEST_ROLES: 'on',
      ALLOW_LOOPBACK_UPSTREAMS: 'on',
      RATE_LIMIT_PRO: '1000000',
    });
    procs.push(p);
    // Ready = answers /readyz (LOG_LEVEL=warn hides the "ready" line).
    const until = Date.now() + 150_000;
    for (;;) {
      try {
        if ((await fetch(`${p.base}/readyz`)).ok) return p;
      } catch {
        /* not listening yet */
      }
      if (p.child.exitCode !== null) throw new Error(`server exited: ${(await p.exited).stderr}`);
      if (Date.now() > until) throw new Error('server did not become ready');
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  it('every write answered 2xx before the SIGKILL is there after the restart', async () => {
    let upstreamCalls = 0;
    upstream = http.createServer((req, res) => {
      upstreamCalls++;
      req.resume();
      req.on('end', () =>
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true, temperature: 20 })),
      );
    });
    await new Promise<void>((r) => upstream!.listen(0, '127.0.0.1', r));
    const upstreamUrl = `http://127.0.0.1:${(upstream.address() as { port: number }).port}`;

    const port = await freePort();
    const first = await start(port);
    const base = first.base;
    const email = `durable-${randomBytes(5).toString('hex')}@example.test`;
    const { access_token } = await expectHttp(base, 'POST', '/auth/test', 200, { body: { email, roles: ['pro'] } });
    const user = { authorization: `Bearer ${access_token}` };
    const svc = await expectHttp(base, 'POST', '/owner/services', 201, {
      headers: user,
      body: {
        name: `durable-${randomBytes(4).toString('hex')}`,
        description: 'durability upstream',
        base_url: upstreamUrl,
        tools: [
          {
            name: 'current',
            description: 'Current weather',
            method: 'GET',
            path: '/weather',
            input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
          },
        ],
      },
    });
    const agent = await expectHttp(base, 'POST', '/v2/agents', 201, { headers: user, body: { name: 'durable agent' } });
    const { access_token: agentToken } = await expectHttp(base, 'POST', '/auth/agent/token', 200, {
      body: { grant_type: 'client_credentials', client_id: agent.client_id, client_secret: agent.client_secret },
    });
    const agentHeaders = { authorization: `Bearer ${agentToken}` };
    const session = await expectHttp(base, 'POST', '/v1/agents', 201, { headers: user, body: { name: 'durable' } });

    // The ledger: what the server acknowledged (2xx), and how many requests were in flight at the kill.
    const ledger = { kv: new Map<string, number>(), memories: new Set<string>(), executions: new Set<string>() };
    let inFlight = 0;
    let killed = false;
    const writers = Array.from({ length: 6 }, async (_, w) => {
      for (let i = 0; !killed; i++) {
        const kind = (w + i) % 3;
        inFlight++;
        try {
          if (kind === 0) {
            const key = `k-${w}-${i % 20}`;
            const r = await httpCall(base, 'PUT', `/v2/memory/${key}`, {
              headers: agentHeaders,
              body: { value: { w, i } },
            });
            if (r.status === 200 || r.status === 201) ledger.kv.set(key, i);
          } else if (kind === 1) {
            const r = await httpCall(base, 'POST', '/memory', {
              headers: user,
              body: { content: `durable note ${w}/${i}`, session_id: session.id },
            });
            if (r.status === 201) ledger.memories.add(r.body.id);
          } else {
            const r = await httpCall(base, 'POST', `/v1/agents/${session.id}/execute`, {
              headers: user,
              body: { service: svc.name, tool: 'current', arguments: { city: `c${w}-${i}` } },
            });
            if (r.status === 200) ledger.executions.add(r.body.execution_id);
          }
        } catch {
          // Connection reset by the kill: not acknowledged, so not in the ledger.
        } finally {
          inFlight--;
        }
      }
    });
    // Kill in the middle of the load, once enough writes are acknowledged.
    const until = Date.now() + 60_000;
    while (ledger.kv.size + ledger.memories.size + ledger.executions.size < 60 && Date.now() < until)
      await new Promise((r) => setTimeout(r, 50));
    const inFlightAtKill = inFlight;
    first.child.kill('SIGKILL');
    killed = true;
    expect((await first.exited).signal).toBe('SIGKILL');
    await Promise.all(writers);
    expect(ledger.kv.size).toBeGreaterThan(5);
    expect(ledger.memories.size).toBeGreaterThan(5);
    expect(ledger.executions.size).toBeGreaterThan(5);

    // Restart on the same database and read every acknowledged write back.
    const second = await start(port);
    for (const [key, i] of ledger.kv) {
      const entry = await httpCall(second.base, 'GET', `/v2/memory/${key}`, { headers: agentHeaders });
      expect(entry.status, key).toBe(200);
      // The last acknowledged value, or a later one whose answer was lost with the kill.
      expect(entry.body.value.i, key).toBeGreaterThanOrEqual(i);
    }
    const events: Json[] = [];
    let cursor: string | null = null;
    do {
      const page = await expectHttp(
        second.base,
        'GET',
        `/memory/sessions/${session.id}/timeline?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        200,
        { headers: user },
      );
      events.push(...page.data);
      cursor = page.next_cursor;
    } while (cursor);
    const executionIds = new Set(events.filter((e) => e.type === 'execution').map((e) => e.id));
    const memoryEvents = events.filter((e) => e.type === 'memory');
    for (const id of ledger.executions) expect(executionIds.has(id), id).toBe(true);
    for (const id of ledger.memories)
      expect(
        memoryEvents.some((e) => e.id === id),
        id,
      ).toBe(true);
    // Nothing appears that was neither acknowledged nor in flight at the kill.
    expect(executionIds.size - ledger.executions.size).toBeGreaterThanOrEqual(0);
    expect(executionIds.size - ledger.executions.size).toBeLessThanOrEqual(inFlightAtKill);
    // Automatic memories (shown on their execution's event): written behind the answer, so the
    // ones of executions finished just before the kill may be missing (the documented loss),
    // counted here; they never appear as separate memory events.
    expect(memoryEvents.every((e) => e.memory?.source !== 'execution')).toBe(true);
    const automatic = events.filter((e) => e.type === 'execution' && typeof e.execution?.memory === 'string').length;
    // Every upstream call that was recorded is one execution (the ones in flight may be unrecorded).
    expect(upstreamCalls).toBeGreaterThanOrEqual(executionIds.size);
    expect(upstreamCalls - executionIds.size).toBeLessThanOrEqual(inFlightAtKill);
    console.log(
      JSON.stringify({
        test: 'durability',
        acknowledged: { kv: ledger.kv.size, memories: ledger.memories.size, executions: ledger.executions.size },
        in_flight_at_kill: inFlightAtKill,
        automatic_memories_lost: executionIds.size - automatic,
        upstream_calls: upstreamCalls,
      }),
    );
    second.child.kill('SIGTERM');
    await second.exited;
  }, 300_000);
});
