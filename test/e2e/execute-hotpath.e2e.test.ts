/**
 * The execution hot path's caches and group commit, end to end: every write that matters to an
 * execution (rename, unpublish, signing-secret rotation, session close) is seen by the very next
 * execution although lookups are cached; parallel executions are all recorded with exact session
 * and usage counters (the same ones whether records are written one by one or together); a record
 * that cannot be stored fails alone; U+0000 in upstream JSON is stored.
 */
import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { execRows } from '../../src/db/client.js';
import { newId } from '../../src/http/ids.js';
import { recordExecution, usageTotals, type ExecutionRecord } from '../../src/modules/sessions/usage.js';
import { createUser, setupApp } from '../helpers/app.js';
import { execute, expectHttp, listen, newSession, publish, registerService, subscribe } from '../helpers/exec.js';
import { startToolUpstream } from '../helpers/tool-upstream.js';

const { app, ctx } = await setupApp({ QUOTA_FREE_DAY: '1000' });
const base = await listen(app);
const upstream = await startToolUpstream();
afterAll(() => upstream.close());

const tools = [
  { name: 'fast', description: 'fast', method: 'GET', path: '/fast', input_schema: { type: 'object' } },
  { name: 'nul', description: 'answers U+0000', method: 'GET', path: '/nul', input_schema: { type: 'object' } },
];

async function setup() {
  const owner = await createUser(app);
  const user = await createUser(app);
  const svc = await registerService(base, owner, {
    name: `hot-${newId('svc').slice(-10).toLowerCase()}`,
    description: 'hot path',
    base_url: upstream.url,
    tools,
  });
  await publish(ctx, svc.id);
  const sub = await subscribe(base, user, svc.id);
  const sid = await newSession(base, user.headers);
  return { owner, user, svc, sid, sub };
}

describe(`execute — hot path caches and group commit (${ctx.database.engine})`, () => {
  it('sees renames, unpublication, secret rotation and session close on the next execution', async () => {
    const { owner, user, svc, sid, sub } = await setup();
    const run = (tool: string) => execute(base, user.headers, sid, { service: svc.name, tool });
    expect((await run('fast')).status).toBe(200); // lookups are cached from here on

    const fast = svc.tools.find((t) => t.name === 'fast')!;
    await expectHttp(base, 'PATCH', `/v1/services/${svc.id}/tools/${fast.id}/rename`, 200, {
      headers: owner.headers,
      body: { name: 'quick' },
    });
    // A rename changes the definition the subscriber pinned (its name): the next call sees it as a
    // 409 with the diff until the subscriber accepts it (docs/governance.md "Pinned tool definitions").
    const renamed = await run('quick');
    expect([renamed.status, renamed.body.code]).toEqual([409, 'tool_definition_changed']);
    expect(renamed.body.diff).toContainEqual({ op: 'replace', path: '/name', value: 'quick' });
    await expectHttp(base, 'POST', `/subscriptions/${sub.id}/accept-changes`, 200, { headers: user.headers, body: {} });
    expect((await run('quick')).status).toBe(200);
    expect((await run('fast')).status).toBe(200); // the old name is an alias

    await expectHttp(base, 'POST', `/v1/services/${svc.id}/unpublish`, 200, { headers: owner.headers });
    const hidden = await run('quick');
    expect(hidden.status).toBe(404);
    await publish(ctx, svc.id);
    expect((await run('quick')).status).toBe(200);

    // The upstream checks signatures with the secret it was given: after a rotation only the new one verifies.
    upstream.signingSecret = svc.signingSecret;
    await run('quick');
    expect(upstream.seen.at(-1)!.signatureValid).toBe(true);
    const { body: rotated } = await expectHttp(base, 'POST', `/owner/services/${svc.id}/signing-secret`, 200, {
      headers: owner.headers,
    });
    upstream.signingSecret = rotated.signing_secret;
    await run('quick');
    expect(upstream.seen.at(-1)!.signatureValid).toBe(true);
    upstream.signingSecret = null;

    await expectHttp(base, 'POST', `/v1/sessions/${sid}/close`, 200, { headers: user.headers });
    const closed = await run('quick');
    expect(closed.status).toBe(409);
    expect(closed.body.code).toBe('session_closed');
  });

  it('records every one of 40 parallel executions with exact session and usage counters', async () => {
    const { user, svc, sid } = await setup();
    const answers = await Promise.all(
      Array.from({ length: 40 }, () => execute(base, user.headers, sid, { service: svc.name, tool: 'fast' })),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(40).fill(200));
    const ids = new Set(answers.map((a) => a.body.execution_id));
    expect(ids.size).toBe(40);

    const { body: s } = await expectHttp(base, 'GET', `/v1/sessions/${sid}`, 200, { headers: user.headers });
    expect(s.execution_count).toBe(40);
    for (const e of s.executions) expect(ids.has(e.id)).toBe(true);
    const totals = await usageTotals(ctx, { userId: user.userId, serviceId: svc.id });
    expect(totals).toMatchObject({ calls: 40, successes: 40, failures: 0 });
  });

  it('fails only the record that cannot be stored when records are written together', async () => {
    const { user, svc, sid } = await setup();
    const record = (sessionId: string): ExecutionRecord => ({
      id: newId('exe'),
      sessionId,
      userId: user.userId,
      agentId: null,
      serviceId: svc.id,
      toolId: svc.tools[0].id,
      toolName: 'fast',
      arguments: {},
      status: 'succeeded',
      httpStatus: 200,
      output: { ok: true },
      error: null,
      durationMs: 3,
    });
    const settled = await Promise.allSettled([
      recordExecution(ctx, record(sid)),
      recordExecution(ctx, record('ses_does_not_exist')),
      recordExecution(ctx, record(sid)),
    ]);
    expect(settled.map((x) => x.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const { body: s } = await expectHttp(base, 'GET', `/v1/sessions/${sid}`, 200, { headers: user.headers });
    expect(s.execution_count).toBe(2);
    expect((await usageTotals(ctx, { userId: user.userId, serviceId: svc.id })).calls).toBe(2);
  });

  it('stores the same rows and counters whether records are written one by one or together', async () => {
    const { user, svc, sid } = await setup();
    const other = await newSession(base, user.headers);
    const t0 = Date.UTC(2026, 10, 29, 9, 0, 0);
    const records = (sessionId: string): ExecutionRecord[] =>
      [
        { status: 'succeeded' as const, httpStatus: 200, output: { ok: true, n: 1 }, error: null, durationMs: 3.4 },
        {
          status: 'failed' as const,
          httpStatus: 503,
          output: { retry: true },
          error: { code: 'upstream_status', message: 'Upstream answered HTTP 503' },
          durationMs: 12,
        },
        {
          status: 'failed' as const,
          httpStatus: null,
          output: null,
          error: { code: 'upstream_timeout', message: 'timed out' },
          durationMs: 100,
        },
        { status: 'succeeded' as const, httpStatus: 200, output: [1, 'two'], error: null, durationMs: 0 },
      ].map((o, i) => ({
        id: newId('exe'),
        sessionId,
        userId: user.userId,
        agentId: null,
        serviceId: svc.id,
        toolId: svc.tools[0].id,
        toolName: i === 3 ? 'fast-renamed' : 'fast',
        arguments: { i },
        at: new Date(t0 + i * 1000),
        ...o,
      }));
    const day = { since: '2026-11-29', until: '2026-11-29' };

    for (const r of records(sid)) await recordExecution(ctx, r); // a batch of one each
    const one = await usageTotals(ctx, { userId: user.userId, serviceId: svc.id, ...day });
    await Promise.all(records(other).map((r) => recordExecution(ctx, r))); // together: batches of more than one
    const both = await usageTotals(ctx, { userId: user.userId, serviceId: svc.id, ...day });

    expect(one).toEqual({ calls: 4, successes: 2, failures: 2, total_duration_ms: 115, avg_duration_ms: 29 });
    expect(both).toEqual({ calls: 8, successes: 4, failures: 4, total_duration_ms: 230, avg_duration_ms: 29 });
    const rows = async (sessionId: string) =>
      execRows(
        ctx.db,
        sql`select tool_name, arguments, status, http_status, output, error, duration_ms, created_at from executions where session_id = ${sessionId} order by created_at`,
      );
    expect(await rows(sid)).toHaveLength(4);
    expect(await rows(other)).toEqual(await rows(sid));
    const counters = async (sessionId: string) =>
      (await execRows(ctx.db, sql`select execution_count, last_activity_at from sessions where id = ${sessionId}`))[0];
    const alone = await counters(sid);
    expect(alone).toEqual({ execution_count: 4, last_activity_at: expect.anything() });
    expect(new Date(String(alone.last_activity_at)).getTime()).toBe(t0 + 3000);
    expect(await counters(other)).toEqual(alone);
    const [usage] = await execRows(
      ctx.db,
      sql`select tool_name, calls from tool_usage where user_id = ${user.userId} and service_id = ${svc.id} and day = '2026-11-29'`,
    );
    expect(usage).toEqual({ tool_name: 'fast-renamed', calls: 8 });
  });

  it("finds an execution's automatic memory right after the answer (writes are batched, readers drain first)", async () => {
    const { user, svc, sid } = await setup();
    const a = await execute(base, user.headers, sid, { service: svc.name, tool: 'fast' });
    expect(a.status).toBe(200);
    const { body: list } = await expectHttp(base, 'GET', `/memory?session_id=${sid}&kind=execution`, 200, {
      headers: user.headers,
    });
    expect(list.data.map((m: { execution_id: string }) => m.execution_id)).toEqual([a.body.execution_id]);
    const b = await execute(base, user.headers, sid, { service: svc.name, tool: 'fast' });
    const { body: stats } = await expectHttp(base, 'GET', '/memory/stats', 200, { headers: user.headers });
    expect(stats.by_source.execution).toBe(2);
    const { body: found } = await expectHttp(
      base,
      'GET',
      `/memory/search?q=fast&session_id=${sid}&kind=execution`,
      200,
      { headers: user.headers },
    );
    expect(found.data.map((m: { execution_id: string }) => m.execution_id).sort()).toEqual(
      [a.body.execution_id, b.body.execution_id].sort(),
    );
  });

  it('answers upstream JSON holding U+0000 as sent and stores it with U+FFFD', async () => {
    const { user, svc, sid } = await setup();
    const a = await execute(base, user.headers, sid, { service: svc.name, tool: 'nul' });
    expect(a.status).toBe(200);
    expect(a.body.output).toEqual({ 'k\u0000ey': 'a\u0000b', list: ['\u0000'] });
    const { body: s } = await expectHttp(base, 'GET', `/v1/sessions/${sid}`, 200, { headers: user.headers });
    expect(s.executions[0].output).toEqual({ 'k\uFFFDey': 'a\uFFFDb', list: ['\uFFFD'] });
    const { body: mem } = await expectHttp(base, 'GET', `/memory?session_id=${sid}&kind=execution`, 200, {
      headers: user.headers,
    });
    expect(mem.data.map((m: { execution_id: string }) => m.execution_id)).toEqual([a.body.execution_id]);
    expect(mem.data[0].content).not.toContain('\u0000');
  });
});
