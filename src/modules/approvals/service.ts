/**
 * Approvals of held tool calls (`/v1/approvals`): list and read them (the account's user sees all
 * of the account's; an agent only its own requests), approve or deny a pending one. Deciding needs
 * a user of the account whose credential holds `approvals:decide` (a user's own access token does;
 * an API key only when created with it by name); an agent never decides, so it cannot approve its
 * own call, and neither does the API key that made the call (ADR 0973). Another account's approval answers 404. The gate that creates and uses approvals is
 * `gate.ts` (ADR 0975, ADR 0976).
 */
import { and, eq, gt, inArray, isNull, lte, or, type SQL } from 'drizzle-orm';
import type { Static } from 'typebox';
import type { AppContext } from '../../context.js';
import { toolApprovals } from '../../db/schema/index.js';
import { actorOf, requireScope, type Principal } from '../../http/auth.js';
import { AppError, notFound } from '../../http/errors.js';
import { iso } from '../../http/ids.js';
import { mapPage, selectPage, type Page } from '../../http/pagination.js';
import { approvalUrl, statusOf, type ApprovalRow, type ApprovalStatus } from './gate.js';
import type { ApprovalSchema } from './schemas.js';

/** One approval as the API shows it (`ApprovalSchema`). */
export type ApprovalView = Static<typeof ApprovalSchema>;

function view(ctx: AppContext, row: ApprovalRow, now = new Date()): ApprovalView {
  return {
    id: row.id,
    status: statusOf(row, now),
    agent_id: row.agentId,
    service_id: row.serviceId,
    service_name: row.serviceName,
    tool_id: row.toolId,
    tool_name: row.toolName,
    arguments: row.arguments,
    policy_ids: row.policyIds,
    reason: row.reason,
    decided_by: row.decidedBy,
    decided_at: iso(row.decidedAt),
    used_at: iso(row.usedAt),
    expires_at: row.expiresAt.toISOString(),
    created_at: row.createdAt.toISOString(),
    approval_url: approvalUrl(ctx, row.id),
  };
}

/** The rows `p` may read: the account's; for an agent, only the requests it made. */
function visibleTo(p: Principal): SQL {
  const actor = actorOf(p);
  const account = eq(toolApprovals.accountId, actor.accountId);
  return actor.agentId === null ? account : and(account, eq(toolApprovals.agentId, actor.agentId))!;
}

/** The SQL condition of the (derived) state `status` at `now`. */
function inState(status: ApprovalStatus, now: Date): SQL {
  const live = gt(toolApprovals.expiresAt, now);
  switch (status) {
    case 'pending':
    case 'approved':
      return and(eq(toolApprovals.status, status), live)!;
    case 'expired':
      return or(
        eq(toolApprovals.status, 'expired'),
        and(inArray(toolApprovals.status, ['pending', 'approved']), lte(toolApprovals.expiresAt, now)),
      )!;
    default:
      return eq(toolApprovals.status, status);
  }
}

/** The approvals `p` may read, newest first, optionally in one state. @throws AppError validation_failed (cursor) */
export async function listApprovals(
  ctx: AppContext,
  p: Principal,
  q: { status?: ApprovalStatus; limit?: number; cursor?: string },
): Promise<Page<ApprovalView>> {
  const now = new Date();
  const page = await selectPage(ctx.db, toolApprovals, q, [
    visibleTo(p),
    q.status ? inState(q.status, now) : undefined,
  ]);
  return mapPage(page, (r) => view(ctx, r, now));
}

async function approvalInScope(ctx: AppContext, p: Principal, id: string): Promise<ApprovalRow> {
  const [row] = await ctx.db
    .select()
    .from(toolApprovals)
    .where(and(eq(toolApprovals.id, id), visibleTo(p)));
  if (!row) throw notFound('Approval');
  return row;
}

/** One approval. @throws AppError not_found (unknown, another account's, or another agent's) */
export async function getApproval(ctx: AppContext, p: Principal, id: string): Promise<ApprovalView> {
  return view(ctx, await approvalInScope(ctx, p, id));
}

/**
 * Approve or deny the pending approval `id` as `p`. An approval is then usable by the requesting
 * caller for `APPROVAL_TTL_SECONDS` from now, once. `reason` only with a denial.
 * @throws AppError forbidden (an agent, or the API key that made the held call: ADR 0973),
 *         insufficient_scope (a key without `approvals:decide`),
 *         not_found, invalid_state (409: already decided, used or expired)
 */
export async function decideApproval(
  ctx: AppContext,
  p: Principal,
  id: string,
  decision: 'approved' | 'denied',
  reason?: string,
): Promise<ApprovalView> {
  if (p.kind !== 'user')
    throw new AppError('forbidden', 'Agents cannot decide approvals; a user of the account approves or denies');
  const row = await approvalInScope(ctx, p, id);
  requireScope(p, 'approvals:decide');
  if (p.keyId !== undefined && row.requestedByKey === p.keyId)
    throw new AppError(
      'forbidden',
      `The API key that made this call cannot decide its approval; a person decides at ${approvalUrl(ctx, row.id)} or with another credential`,
    );
  const now = new Date();
  const [done] = await ctx.db
    .update(toolApprovals)
    .set({
      status: decision,
      decidedBy: p.userId,
      decidedAt: now,
      reason: decision === 'denied' ? (reason ?? null) : null,
      ...(decision === 'approved'
        ? { expiresAt: new Date(now.getTime() + ctx.config.approvals.ttlSeconds * 1000) }
        : {}),
      updatedAt: now,
    })
    .where(and(eq(toolApprovals.id, row.id), eq(toolApprovals.status, 'pending'), gt(toolApprovals.expiresAt, now)))
    .returning();
  if (!done) {
    const [current] = await ctx.db.select().from(toolApprovals).where(eq(toolApprovals.id, row.id));
    throw new AppError('invalid_state', `Approval ${row.id} is ${statusOf(current ?? row, now)}, no longer pending`, {
      extra: { approval_status: statusOf(current ?? row, now) },
    });
  }
  return view(ctx, done, now);
}

/**
 * The state of approval `id` of the requesting actor (the deployed-agent runtime polls it while a
 * handler waits): `{ status, expires_at }`. @throws AppError not_found
 */
export async function approvalState(
  ctx: AppContext,
  actor: { accountId: string; agentId: string | null },
  id: string,
): Promise<{ status: ApprovalStatus; expires_at: string }> {
  const [row] = await ctx.db
    .select({ status: toolApprovals.status, expiresAt: toolApprovals.expiresAt })
    .from(toolApprovals)
    .where(
      and(
        eq(toolApprovals.id, id),
        eq(toolApprovals.accountId, actor.accountId),
        actor.agentId === null ? isNull(toolApprovals.agentId) : eq(toolApprovals.agentId, actor.agentId),
      ),
    );
  if (!row) throw notFound('Approval');
  return { status: statusOf(row), expires_at: row.expiresAt.toISOString() };
}
