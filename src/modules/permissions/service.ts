/**
 * Cross-agent memory permissions (spec "Agent permissions (v2)"): agent A grants
 * agent B `read` or `write` (write implies read) access to A's memory, optionally limited to keys
 * starting with `key_prefix` and until `expires_at`. Grants to agents of other accounts are
 * allowed (that is their point); revocation takes effect at once (grants are never cached).
 *
 * Grants of agent `:id` are managed by the owner user of `:id` or by agent `:id` itself (with the
 * `permissions:manage` scope); anybody else gets 404, like any other account's object.
 */
import { and, desc, eq, gt, isNull, or, sql } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { agentPermissions } from '../../db/schema/index.js';
import { revokeLive } from '../../db/revoke.js';
import { requireScope, type Principal } from '../../http/auth.js';
import { AppError, notFound } from '../../http/errors.js';
import { newId, iso } from '../../http/ids.js';
import { mapPage, selectPage, type Page } from '../../http/pagination.js';
import { findAgent, getAgentForAccount } from '../agents/service.js';
import type { Static } from 'typebox';
import type { PermissionSchema } from './schemas.js';

export type Access = 'read' | 'write';
type PermissionRow = typeof agentPermissions.$inferSelect;

/** A grant as shown by the API. */
export type PermissionView = Static<typeof PermissionSchema>;

const view = (p: PermissionRow): PermissionView => ({
  id: p.id,
  agent_id: p.ownerAgentId,
  grantee_agent_id: p.granteeAgentId,
  access: p.access as Access,
  key_prefix: p.keyPrefix,
  expires_at: iso(p.expiresAt),
  created_by: p.createdBy,
  created_at: iso(p.createdAt),
});

/** Live = not revoked and not expired. */
function live() {
  return and(
    isNull(agentPermissions.revokedAt),
    or(isNull(agentPermissions.expiresAt), gt(agentPermissions.expiresAt, sql`now()`)),
  );
}

/**
 * Check that `principal` manages agent `agentId`: the credential holds `permissions:manage` (an
 * agent token or API key that lacks it is refused first), and it is the agent's owner user or the
 * agent itself. @throws AppError insufficient_scope | not_found
 */
export async function assertManages(ctx: AppContext, principal: Principal, agentId: string): Promise<void> {
  requireScope(principal, 'permissions:manage');
  if (principal.kind === 'user') await getAgentForAccount(ctx, principal.userId, agentId);
  else if (principal.agentId !== agentId) throw notFound('Agent');
}

/**
 * Grant `grantee_agent_id` access to `agentId`'s memory.
 * @throws AppError not_found (agent not managed by the caller; grantee unknown or deleted) |
 *   validation_failed (grantee is the agent itself; expiry in the past)
 */
export async function createPermission(
  ctx: AppContext,
  principal: Principal,
  agentId: string,
  input: { grantee_agent_id: string; access: Access; key_prefix?: string | null; expires_at?: string | null },
): Promise<PermissionView> {
  await assertManages(ctx, principal, agentId);
  if (input.grantee_agent_id === agentId) {
    throw new AppError('validation_failed', 'An agent always has access to its own memory; grant to another agent', {
      errors: [{ in: 'body', pointer: '/grantee_agent_id', message: 'must differ from the granting agent' }],
    });
  }
  const expiresAt = input.expires_at ? new Date(input.expires_at) : null;
  if (expiresAt && expiresAt.getTime() <= Date.now()) {
    throw new AppError('validation_failed', 'expires_at must be in the future', {
      errors: [{ in: 'body', pointer: '/expires_at', message: 'must be in the future' }],
    });
  }
  const grantee = await findAgent(ctx, input.grantee_agent_id);
  if (!grantee) throw notFound('Grantee agent');
  const [row] = await ctx.db
    .insert(agentPermissions)
    .values({
      id: newId('prm'),
      ownerAgentId: agentId,
      granteeAgentId: grantee.id,
      access: input.access,
      keyPrefix: input.key_prefix || null,
      expiresAt,
      createdBy: principal.kind === 'user' ? principal.userId : principal.agentId,
    })
    .returning();
  return view(row);
}

/** Live grants on `agentId`'s memory (who may access it), newest first. */
export async function listPermissions(
  ctx: AppContext,
  principal: Principal,
  agentId: string,
  q: { limit?: number; cursor?: string },
): Promise<Page<PermissionView>> {
  await assertManages(ctx, principal, agentId);
  return page(ctx, eq(agentPermissions.ownerAgentId, agentId), q);
}

/** Live grants held by `agentId` (what it may access), newest first. */
export async function listGrants(
  ctx: AppContext,
  principal: Principal,
  agentId: string,
  q: { limit?: number; cursor?: string },
): Promise<Page<PermissionView>> {
  await assertManages(ctx, principal, agentId);
  return page(ctx, eq(agentPermissions.granteeAgentId, agentId), q);
}

async function page(
  ctx: AppContext,
  where: ReturnType<typeof eq>,
  q: { limit?: number; cursor?: string },
): Promise<Page<PermissionView>> {
  return mapPage(await selectPage(ctx.db, agentPermissions, q, [where, live()]), view);
}

/** Revoke a grant on `agentId`'s memory; effective for the next request. @throws AppError not_found */
export async function revokePermission(
  ctx: AppContext,
  principal: Principal,
  agentId: string,
  permissionId: string,
): Promise<void> {
  await assertManages(ctx, principal, agentId);
  if (
    !(await revokeLive(
      ctx.db,
      agentPermissions,
      and(eq(agentPermissions.id, permissionId), eq(agentPermissions.ownerAgentId, agentId)),
    ))
  )
    throw notFound('Permission');
}

/**
 * Live grants from `ownerAgentId` to `granteeAgentId` that give at least `access` (a `write`
 * grant also gives `read`). One indexed query; never cached, so revocation is immediate.
 */
export async function liveGrants(
  ctx: AppContext,
  ownerAgentId: string,
  granteeAgentId: string,
  access: Access,
): Promise<Array<{ id: string; keyPrefix: string | null }>> {
  return ctx.db
    .select({ id: agentPermissions.id, keyPrefix: agentPermissions.keyPrefix })
    .from(agentPermissions)
    .where(
      and(
        eq(agentPermissions.ownerAgentId, ownerAgentId),
        eq(agentPermissions.granteeAgentId, granteeAgentId),
        access === 'write' ? eq(agentPermissions.access, 'write') : undefined,
        live(),
      ),
    )
    .orderBy(desc(agentPermissions.id));
}

/** The first live grant covering `key` with at least `access`, or null. */
export async function coveringGrant(
  ctx: AppContext,
  ownerAgentId: string,
  granteeAgentId: string,
  access: Access,
  key: string,
): Promise<{ id: string } | null> {
  const grants = await liveGrants(ctx, ownerAgentId, granteeAgentId, access);
  const g = grants.find((x) => !x.keyPrefix || key.startsWith(x.keyPrefix));
  return g ? { id: g.id } : null;
}
