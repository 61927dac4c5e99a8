/**
 * The approval gate (`approvals/gate.ts`) driven directly, with decisions through the REST routes:
 * a held call answers 202 with a pending approval (reused for an identical call, announced once on
 * the event hub); a granted approval admits exactly that call once; other arguments, a second use,
 * a denial and an expiry are refused.
 */
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { toolApprovals } from '../../../src/db/schema/index.js';
import type { ApprovalRequested } from '../../../src/events.js';
import type { SessionActor } from '../../../src/http/auth.js';
import { AppError } from '../../../src/http/errors.js';
import { callHash, type GovernedCall, requireApproval } from '../../../src/modules/approvals/gate.js';
import { createAgent } from '../../helpers/agents.js';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { AGENT, keyOf } from '../api-keys/fixtures.js';

const { app, ctx } = await setupApp();

const requested: ApprovalRequested[] = [];
ctx.events.on('approval.requested', (e) => requested.push(e));

function governed(args: Record<string, unknown>): GovernedCall {
  return {
    serviceId: 'svc_files',
    serviceName: 'files',
    toolId: 'tool_delete',
    toolName: 'delete_file',
    arguments: args,
    policyIds: ['pol_destructive'],
    requestedByKey: null,
  };
}

/** The AppError `requireApproval` throws (fails the test when it resolves). */
async function refusal(actor: SessionActor, c: GovernedCall, id?: string): Promise<AppError> {
  const err = await requireApproval(ctx, actor, c, id).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

describe('approval gate', () => {
  it('holds a call with 202 approval_required, reuses the pending request of an identical call, and announces it once', async () => {
    const u = await createUser(app);
    const actor = { accountId: u.userId, agentId: null };
    const first = await refusal(actor, governed({ path: '/a.txt', force: true }));
    expect(first.code).toBe('approval_required');
    expect(first.status).toBe(202);
    const id = first.extra?.approval_id as string;
    expect(id).toMatch(/^apr_/);
    expect(first.extra?.approval_url).toBe(`${ctx.config.publicUrl}/console/approvals/${id}`);
    const expiresIn = Date.parse(first.extra?.expires_at as string) - Date.now();
    expect(expiresIn).toBeGreaterThan(890_000);
    expect(expiresIn).toBeLessThanOrEqual(900_000);

    // The same call with its keys in another order is the same call (RFC 8785 canonical JSON).
    const again = await refusal(actor, governed({ force: true, path: '/a.txt' }));
    expect(again.extra?.approval_id).toBe(id);
    expect(requested.filter((e) => e.approvalId === id)).toEqual([
      {
        approvalId: id,
        accountId: u.userId,
        agentId: null,
        serviceName: 'files',
        toolName: 'delete_file',
        expiresAt: first.extra?.expires_at,
        url: first.extra?.approval_url,
      },
    ]);
    // Other arguments are another call: another request.
    const other = await refusal(actor, governed({ path: '/b.txt', force: true }));
    expect(other.extra?.approval_id).not.toBe(id);

    const { body } = await call(app, { method: 'GET', url: `/v1/approvals/${id}`, headers: u.headers }, 200);
    expect(body).toMatchObject({
      id,
      status: 'pending',
      agent_id: null,
      service_id: 'svc_files',
      service_name: 'files',
      tool_name: 'delete_file',
      arguments: { path: '/a.txt', force: true },
      policy_ids: ['pol_destructive'],
      decided_by: null,
      approval_url: first.extra?.approval_url,
    });
  });

  it('concurrent identical calls share one pending request', async () => {
    const u = await createUser(app);
    const actor = { accountId: u.userId, agentId: null };
    const errs = await Promise.all(Array.from({ length: 6 }, () => refusal(actor, governed({ n: 1 }))));
    expect(new Set(errs.map((e) => e.extra?.approval_id)).size).toBe(1);
    const rows = await ctx.db.select().from(toolApprovals).where(eq(toolApprovals.accountId, u.userId));
    expect(rows).toHaveLength(1);
  });

  it('a granted approval admits exactly that call once; other arguments and a second use are refused', async () => {
    const u = await createUser(app);
    const agent = await createAgent(app, u);
    const actor = { accountId: u.userId, agentId: agent.id };
    const c = governed({ path: '/c.txt' });
    const id = (await refusal(actor, c)).extra?.approval_id as string;

    // Still pending: the retry is held again, under the same id.
    const pending = await refusal(actor, c, id);
    expect([pending.code, pending.extra?.approval_id]).toEqual(['approval_required', id]);

    const { body: approved } = await call(
      app,
      { method: 'POST', url: `/v1/approvals/${id}/approve`, headers: u.headers },
      200,
    );
    expect(approved).toMatchObject({ id, status: 'approved', decided_by: u.userId, agent_id: agent.id });

    // Bound to the arguments and to the requesting agent.
    const mismatch = await refusal(actor, governed({ path: '/etc/passwd' }), id);
    expect([mismatch.code, mismatch.status]).toEqual(['approval_invalid', 409]);
    expect((await refusal({ accountId: u.userId, agentId: null }, c, id)).code).toBe('not_found');
    const stranger = await createUser(app);
    expect((await refusal({ accountId: stranger.userId, agentId: null }, c, id)).code).toBe('not_found');

    await expect(requireApproval(ctx, actor, c, id)).resolves.toBeUndefined();
    const second = await refusal(actor, c, id);
    expect([second.code, second.extra?.approval_status]).toEqual(['approval_invalid', 'used']);
    const { body: used } = await call(app, { method: 'GET', url: `/v1/approvals/${id}`, headers: u.headers }, 200);
    expect(used.status).toBe('used');
    expect(used.used_at).not.toBeNull();
  });

  it('a plain retry of the same call uses its granted approval once; a further retry asks anew', async () => {
    const u = await createUser(app);
    const actor = { accountId: u.userId, agentId: null };
    const c = governed({ path: '/r.txt' });
    const id = (await refusal(actor, c)).extra?.approval_id as string;
    await call(app, { method: 'POST', url: `/v1/approvals/${id}/approve`, headers: u.headers }, 200);
    // Another call of the same actor is not admitted by it.
    expect((await refusal(actor, governed({ path: '/s.txt' }))).extra?.approval_id).not.toBe(id);
    await expect(requireApproval(ctx, actor, c, undefined)).resolves.toBeUndefined();
    const next = await refusal(actor, c);
    expect(next.code).toBe('approval_required');
    expect(next.extra?.approval_id).not.toBe(id);
    expect((await refusal(actor, c, id)).extra?.approval_status).toBe('used');
  });

  it('an API key decides only with approvals:decide; without it the approval stays pending', async () => {
    const u = await createUser(app);
    const actor = { accountId: u.userId, agentId: null };
    const c = governed({ path: '/k.txt' });
    const id = (await refusal(actor, c)).extra?.approval_id as string;
    const plain = await keyOf(app, u.headers, { scopes: [...AGENT] });
    for (const verb of ['approve', 'deny']) {
      const { body } = await call(
        app,
        { method: 'POST', url: `/v1/approvals/${id}/${verb}`, headers: plain.headers, payload: {} },
        403,
      );
      expect(body.code).toBe('insufficient_scope');
    }
    const { body: still } = await call(app, { method: 'GET', url: `/v1/approvals/${id}`, headers: u.headers }, 200);
    expect([still.status, still.decided_by]).toEqual(['pending', null]);
    const decider = await keyOf(app, u.headers, { scopes: ['approvals:decide'] });
    const { body } = await call(
      app,
      { method: 'POST', url: `/v1/approvals/${id}/approve`, headers: decider.headers, payload: {} },
      200,
    );
    expect([body.status, body.decided_by]).toEqual(['approved', u.userId]);
  });

  it('a denial is refused with 403 and its reason; a decided approval cannot be decided again', async () => {
    const u = await createUser(app);
    const actor = { accountId: u.userId, agentId: null };
    const c = governed({ path: '/d.txt' });
    const id = (await refusal(actor, c)).extra?.approval_id as string;
    const { body } = await call(
      app,
      { method: 'POST', url: `/v1/approvals/${id}/deny`, headers: u.headers, payload: { reason: 'not today' } },
      200,
    );
    expect(body).toMatchObject({ status: 'denied', reason: 'not today', decided_by: u.userId });
    const denied = await refusal(actor, c, id);
    expect([denied.code, denied.status, denied.extra?.reason]).toEqual(['approval_denied', 403, 'not today']);
    const { body: again } = await call(
      app,
      { method: 'POST', url: `/v1/approvals/${id}/approve`, headers: u.headers },
      409,
    );
    expect(again).toMatchObject({ code: 'invalid_state', approval_status: 'denied' });
  });

  it('an approval expires: unused or undecided in time, it is refused and a new submission asks anew', async () => {
    const u = await createUser(app);
    const actor = { accountId: u.userId, agentId: null };
    const c = governed({ path: '/e.txt' });
    const id = (await refusal(actor, c)).extra?.approval_id as string;
    await ctx.db
      .update(toolApprovals)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(toolApprovals.id, id));
    const { body } = await call(app, { method: 'GET', url: `/v1/approvals/${id}`, headers: u.headers }, 200);
    expect(body.status).toBe('expired');
    await call(app, { method: 'POST', url: `/v1/approvals/${id}/approve`, headers: u.headers }, 409);
    const expired = await refusal(actor, c, id);
    expect([expired.code, expired.extra?.approval_status]).toEqual(['approval_invalid', 'expired']);
    const fresh = await refusal(actor, c);
    expect(fresh.extra?.approval_id).not.toBe(id);

    // Approved, then not used in time.
    const fid = fresh.extra?.approval_id as string;
    await call(app, { method: 'POST', url: `/v1/approvals/${fid}/approve`, headers: u.headers }, 200);
    await ctx.db
      .update(toolApprovals)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(toolApprovals.id, fid));
    expect((await refusal(actor, c, fid)).extra?.approval_status).toBe('expired');
    const { body: list } = await call(
      app,
      { method: 'GET', url: '/v1/approvals?status=expired', headers: u.headers },
      200,
    );
    expect(list.data.map((a: { id: string }) => a.id)).toEqual([fid, id]);
  });

  it('binds to service, tool and arguments by a canonical hash', () => {
    const base = { serviceId: 's', toolId: 't' };
    expect(callHash({ ...base, arguments: { a: 1, b: [1, 2] } })).toBe(
      callHash({ ...base, arguments: { b: [1, 2], a: 1.0 } }),
    );
    expect(callHash({ ...base, arguments: { a: 1 } })).not.toBe(callHash({ ...base, arguments: { a: '1' } }));
    expect(callHash({ ...base, arguments: {} })).not.toBe(callHash({ serviceId: 's', toolId: 'u', arguments: {} }));
    expect(callHash({ ...base, arguments: {} })).toMatch(/^[0-9a-f]{64}$/);
  });
});
