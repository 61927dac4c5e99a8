/**
 * Policies of an account (CRUD under `/v1/policies`): each policy is one Cedar `forbid` statement,
 * validated against the published schema on every write (400 `validation_failed` with line and
 * column). Account policies belong to their account (another account's answers 404); global ones
 * bind everyone, are readable by every user and written by admins only. Every write evicts the
 * compiled sets it affects on every instance (`engine.ts`). Writes need the `policies:manage`
 * scope, which an API key holds only when created with it by name (ADR 0973).
 */
import { and, asc, count, eq, or, type SQL } from 'drizzle-orm';
import type { Static } from 'typebox';
import type { AppContext } from '../../context.js';
import { policies } from '../../db/schema/index.js';
import { requireScope, type UserPrincipal } from '../../http/auth.js';
import { AppError, notFound } from '../../http/errors.js';
import { newId } from '../../http/ids.js';
import { parsePolicy } from './cedar.js';
import { invalidatePolicySets } from './engine.js';
import type { CreatePolicyBody, PolicyListQuery, PolicySchema, UpdatePolicyBody } from './schemas.js';

/** A policy as the API shows it. */
export type PolicyView = Static<typeof PolicySchema>;
type Row = typeof policies.$inferSelect;

/** Most policies one account (or the global scope) holds. */
export const MAX_POLICIES = 1000;

function isAdmin(user: UserPrincipal): boolean {
  return user.roles.includes('admin');
}

function view(r: Row): PolicyView {
  let approval = false;
  try {
    approval = parsePolicy(r.source).approval;
  } catch {
    approval = false;
  }
  return {
    id: r.id,
    scope: r.scope as 'account' | 'global',
    owner_id: r.ownerId,
    description: r.description,
    source: r.source,
    enabled: r.enabled,
    approval,
    created_at: r.createdAt.toISOString(),
    updated_at: r.updatedAt.toISOString(),
  };
}

/** What `user` may read: its account's policies and the global ones. */
function readable(user: UserPrincipal): SQL {
  return or(eq(policies.scope, 'global'), and(eq(policies.scope, 'account'), eq(policies.ownerId, user.userId))) as SQL;
}

async function readableRow(ctx: AppContext, user: UserPrincipal, id: string): Promise<Row> {
  const [row] = await ctx.db
    .select()
    .from(policies)
    .where(and(eq(policies.id, id), readable(user)));
  if (!row) throw notFound('Policy');
  return row;
}

/** Writes: the account's own policies; global ones only by an admin (403 insufficient_role). */
function assertWrites(user: UserPrincipal, scope: string): void {
  requireScope(user, 'policies:manage');
  if (scope === 'global' && !isAdmin(user))
    throw new AppError('insufficient_role', 'Only admins write global policies');
}

function invalidate(ctx: AppContext, row: Pick<Row, 'scope' | 'ownerId'>): Promise<void> {
  return invalidatePolicySets(ctx, row.scope === 'global' ? null : row.ownerId);
}

/**
 * Create a policy. `scope` defaults to `account`.
 * @throws AppError validation_failed (the text: syntax, schema, not one forbid), insufficient_role
 *         (global by a non-admin), insufficient_scope, limit_reached (409, {@link MAX_POLICIES})
 */
export async function createPolicy(
  ctx: AppContext,
  user: UserPrincipal,
  body: Static<typeof CreatePolicyBody>,
): Promise<PolicyView> {
  const scope = body.scope ?? 'account';
  assertWrites(user, scope);
  parsePolicy(body.source);
  const ownerWhere =
    scope === 'global'
      ? eq(policies.scope, 'global')
      : and(eq(policies.scope, 'account'), eq(policies.ownerId, user.userId));
  const [{ n }] = await ctx.db.select({ n: count() }).from(policies).where(ownerWhere);
  if (Number(n) >= MAX_POLICIES)
    throw new AppError('limit_reached', `At most ${MAX_POLICIES} policies per account (and globally)`);
  const [row] = await ctx.db
    .insert(policies)
    .values({
      id: newId('pol'),
      scope,
      ownerId: user.userId,
      description: body.description ?? '',
      source: body.source,
      enabled: body.enabled ?? true,
    })
    .returning();
  await invalidate(ctx, row);
  return view(row);
}

/** The account's policies and the global ones, oldest first (filters: scope, enabled). */
export async function listPolicies(
  ctx: AppContext,
  user: UserPrincipal,
  q: Static<typeof PolicyListQuery>,
): Promise<{ data: PolicyView[]; next_cursor: null }> {
  const where: SQL[] = [readable(user)];
  if (q.scope) where.push(eq(policies.scope, q.scope));
  if (q.enabled !== undefined) where.push(eq(policies.enabled, q.enabled));
  const rows = await ctx.db
    .select()
    .from(policies)
    .where(and(...where))
    .orderBy(asc(policies.id))
    .limit(2 * MAX_POLICIES);
  return { data: rows.map(view), next_cursor: null };
}

/** One policy of the account, or a global one. @throws AppError not_found (also another account's) */
export async function getPolicy(ctx: AppContext, user: UserPrincipal, id: string): Promise<PolicyView> {
  return view(await readableRow(ctx, user, id));
}

/**
 * Change a policy's text, description or enabled flag (the text is validated again).
 * @throws AppError not_found, insufficient_role (a global one by a non-admin), insufficient_scope, validation_failed
 */
export async function updatePolicy(
  ctx: AppContext,
  user: UserPrincipal,
  id: string,
  body: Static<typeof UpdatePolicyBody>,
): Promise<PolicyView> {
  const current = await readableRow(ctx, user, id);
  assertWrites(user, current.scope);
  if (body.source !== undefined) parsePolicy(body.source);
  const [row] = await ctx.db
    .update(policies)
    .set({
      ...(body.source !== undefined ? { source: body.source } : {}),
      ...(body.description !== undefined ? { description: body.description } : {}),
      ...(body.enabled !== undefined ? { enabled: body.enabled } : {}),
      updatedAt: new Date(),
    })
    .where(eq(policies.id, id))
    .returning();
  if (!row) throw notFound('Policy');
  await invalidate(ctx, row);
  return view(row);
}

/** Delete a policy. @throws AppError not_found, insufficient_role, insufficient_scope */
export async function deletePolicy(ctx: AppContext, user: UserPrincipal, id: string): Promise<void> {
  const current = await readableRow(ctx, user, id);
  assertWrites(user, current.scope);
  await ctx.db.delete(policies).where(eq(policies.id, id));
  await invalidate(ctx, current);
}
