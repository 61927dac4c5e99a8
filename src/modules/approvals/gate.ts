/**
 * The approval gate of the execute path: a call a policy (or a tool tag) holds for a person's
 * approval passes only with the id of a granted approval of exactly that call
 * (docs/governance.md#approvals, ADR 0975).
 *
 * Flow: the first submission creates (or reuses) a `pending` request and answers 202
 * `approval_required` with `approval_id`, `approval_url` and `expires_at`; the account's owner
 * approves or denies it (`service.ts`); the caller re-submits the same call with `approval_id`
 * (or just the same call: its granted approval is found by hash), which is then used up in one
 * conditional UPDATE (single use, so a re-submission runs once).
 * The approval is bound to the requesting actor (account + agent) and to the SHA-256 of the RFC
 * 8785 canonical JSON of `{ service, tool, arguments }` (service and tool ids), so it cannot be
 * used for other arguments, another tool or by another agent.
 */
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { and, eq, gt, isNull, lte, type SQL } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { toolApprovals } from '../../db/schema/index.js';
import type { SessionActor } from '../../http/auth.js';
import { AppError, notFound } from '../../http/errors.js';
import { newId } from '../../http/ids.js';

/** One governed tool call, as the policy check saw it (ids and names of the resolved service and tool). */
export interface GovernedCall {
  serviceId: string;
  serviceName: string;
  toolId: string;
  toolName: string;
  arguments: Record<string, unknown>;
  /** The policies that require the approval (empty when a tool tag does). */
  policyIds: string[];
  /** The API key (`key_…`) that made the call, which may not decide it; null for an access or agent token. */
  requestedByKey: string | null;
}

/** A stored approval request (`tool_approvals` row). */
export type ApprovalRow = typeof toolApprovals.$inferSelect;

/** The five states an approval is in; `expired` is derived from `expires_at` for `pending`/`approved` rows. */
export type ApprovalStatus = 'pending' | 'approved' | 'denied' | 'expired' | 'used';

/**
 * Hex SHA-256 of the canonical JSON (RFC 8785) of `{ service: serviceId, tool: toolId, arguments }`:
 * what an approval is bound to. Key order and number spelling of the arguments do not matter.
 */
export function callHash(call: Pick<GovernedCall, 'serviceId' | 'toolId' | 'arguments'>): string {
  const json = canonicalize({ service: call.serviceId, tool: call.toolId, arguments: call.arguments }) ?? '';
  return createHash('sha256').update(json).digest('hex');
}

/** The state of `row` at `now`: a pending or approved row past its `expires_at` is `expired`. */
export function statusOf(row: Pick<ApprovalRow, 'status' | 'expiresAt'>, now = new Date()): ApprovalStatus {
  const s = row.status as ApprovalStatus;
  return (s === 'pending' || s === 'approved') && row.expiresAt <= now ? 'expired' : s;
}

/** Where a person decides on approval `id`: the console page (`<PUBLIC_URL>/console/approvals/<id>`). */
export function approvalUrl(ctx: AppContext, id: string): string {
  return `${ctx.config.publicUrl}/console/approvals/${id}`;
}

/** The 202 `approval_required` problem for `row` (carries `approval_id`, `approval_url`, `expires_at`). */
export function approvalRequired(ctx: AppContext, row: ApprovalRow): AppError {
  const url = approvalUrl(ctx, row.id);
  return new AppError(
    'approval_required',
    `${row.serviceName}/${row.toolName} needs a person's approval: they decide at ${url}; once approved, retry the same call with "approval_id": "${row.id}"`,
    { extra: { approval_id: row.id, approval_url: url, expires_at: row.expiresAt.toISOString() } },
  );
}

/** `agent_id` of `actor`'s rows: equal to its agent, or null for the account's own calls. */
function sameAgent(actor: SessionActor): SQL {
  return actor.agentId === null ? isNull(toolApprovals.agentId) : eq(toolApprovals.agentId, actor.agentId);
}

/**
 * Admit a governed call only with an approval. With `approvalId`: use the approval up if it is a
 * granted, unexpired, unused approval of this actor for exactly this call (arguments hash) — then
 * return, and the call runs. Without it: use up the granted approval of this actor for this exact
 * call if there is one (a plain retry of the same call, as MCP clients retry after a URL
 * elicitation); else create a pending request (or reuse the pending one of an identical call),
 * emit `approval.requested`, and throw 202.
 * @throws AppError approval_required (202; also while the named approval is still pending),
 *         approval_denied (403, with `reason`), approval_invalid (409: used, expired, or bound to
 *         another call; `approval_status` says which), not_found (404: unknown id, another account's
 *         or another agent's approval)
 */
export async function requireApproval(
  ctx: AppContext,
  actor: SessionActor,
  call: GovernedCall,
  approvalId: string | undefined,
): Promise<void> {
  const hash = callHash(call);
  if (approvalId === undefined) {
    if (await useGranted(ctx, actor, hash)) return;
    throw approvalRequired(ctx, await pendingRequest(ctx, actor, call, hash));
  }
  const now = new Date();
  const mine = and(eq(toolApprovals.id, approvalId), eq(toolApprovals.accountId, actor.accountId), sameAgent(actor));
  if (await use(ctx, mine, hash, now)) return;
  const [row] = await ctx.db.select().from(toolApprovals).where(mine);
  if (!row) throw notFound('Approval');
  throw refusal(ctx, row, hash, now);
}

/** Use up the approval `which` if it is granted, unexpired and for the call hashed `hash`. @returns whether it was */
async function use(ctx: AppContext, which: SQL | undefined, hash: string, now: Date): Promise<boolean> {
  const used = await ctx.db
    .update(toolApprovals)
    .set({ status: 'used', usedAt: now, updatedAt: now })
    .where(
      and(
        which,
        eq(toolApprovals.callHash, hash),
        eq(toolApprovals.status, 'approved'),
        gt(toolApprovals.expiresAt, now),
      ),
    )
    .returning({ id: toolApprovals.id });
  return used.length > 0;
}

/** Use up a granted approval of `actor` for the call hashed `hash`, if one exists (oldest first). @returns whether one was */
async function useGranted(ctx: AppContext, actor: SessionActor, hash: string): Promise<boolean> {
  for (;;) {
    const now = new Date();
    const [granted] = await ctx.db
      .select({ id: toolApprovals.id })
      .from(toolApprovals)
      .where(
        and(
          eq(toolApprovals.accountId, actor.accountId),
          sameAgent(actor),
          eq(toolApprovals.callHash, hash),
          eq(toolApprovals.status, 'approved'),
          gt(toolApprovals.expiresAt, now),
        ),
      )
      .orderBy(toolApprovals.id)
      .limit(1);
    if (!granted) return false;
    // A concurrent retry may use it first: then look again (it is no longer a candidate).
    if (await use(ctx, eq(toolApprovals.id, granted.id), hash, now)) return true;
  }
}

/** Why the approval `row` does not admit the call hashed `hash` (it was not used up). */
function refusal(ctx: AppContext, row: ApprovalRow, hash: string, now: Date): AppError {
  const status = statusOf(row, now);
  if (row.callHash !== hash)
    return new AppError(
      'approval_invalid',
      `Approval ${row.id} was given for another call (${row.serviceName}/${row.toolName} with other arguments); submit this call without approval_id to request its own`,
      { extra: { approval_id: row.id, approval_status: status } },
    );
  if (status === 'pending') return approvalRequired(ctx, row);
  if (status === 'denied')
    return new AppError('approval_denied', `Approval ${row.id} was denied${row.reason ? `: ${row.reason}` : ''}`, {
      extra: { approval_id: row.id, reason: row.reason },
    });
  const why =
    status === 'used'
      ? 'was already used (an approval admits one execution)'
      : 'has expired; submit the call without approval_id to request a new one';
  return new AppError('approval_invalid', `Approval ${row.id} ${why}`, {
    extra: { approval_id: row.id, approval_status: status },
  });
}

/**
 * The pending request of this actor for this call: the live one if there is one, else a new one
 * (stale pending rows of the same call are stored as `expired` first, so the one-pending-per-call
 * index admits it; a concurrent identical call that inserted first is reused).
 */
async function pendingRequest(
  ctx: AppContext,
  actor: SessionActor,
  call: GovernedCall,
  hash: string,
): Promise<ApprovalRow> {
  const sameCall = and(
    eq(toolApprovals.accountId, actor.accountId),
    sameAgent(actor),
    eq(toolApprovals.callHash, hash),
    eq(toolApprovals.status, 'pending'),
  );
  for (let attempt = 0; attempt < 3; attempt++) {
    const now = new Date();
    const [live] = await ctx.db
      .select()
      .from(toolApprovals)
      .where(and(sameCall, gt(toolApprovals.expiresAt, now)));
    if (live) return live;
    await ctx.db
      .update(toolApprovals)
      .set({ status: 'expired', updatedAt: now })
      .where(and(sameCall, lte(toolApprovals.expiresAt, now)));
    const [row] = await ctx.db
      .insert(toolApprovals)
      .values({
        id: newId('apr'),
        accountId: actor.accountId,
        agentId: actor.agentId,
        serviceId: call.serviceId,
        serviceName: call.serviceName,
        toolId: call.toolId,
        toolName: call.toolName,
        arguments: call.arguments,
        callHash: hash,
        policyIds: call.policyIds,
        requestedByKey: call.requestedByKey,
        status: 'pending',
        expiresAt: new Date(now.getTime() + ctx.config.approvals.ttlSeconds * 1000),
      })
      .onConflictDoNothing()
      .returning();
    if (row) {
      ctx.events.emit('approval.requested', {
        approvalId: row.id,
        accountId: row.accountId,
        agentId: row.agentId,
        serviceName: row.serviceName,
        toolName: row.toolName,
        expiresAt: row.expiresAt.toISOString(),
        url: approvalUrl(ctx, row.id),
      });
      return row;
    }
  }
  throw new AppError('conflict', 'The approval request changed concurrently; retry the call');
}
