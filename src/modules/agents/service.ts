/**
 * Agents (spec "Agents (v2)"): agent identities owned by an account, their client
 * secrets (scrypt hashes, rotation with an optional grace period) and their tool subscriptions.
 *
 * Every function answers `not_found` for agents of other accounts and for deleted agents (soft
 * delete: they disappear from lookups). The management functions take the owner's principal and
 * check its credential first ({@link assertManagesAgents}).
 * Token issuance and verification live in `tokens.ts`.
 */
import { randomBytes } from 'node:crypto';
import { and, eq, gt, inArray, isNull, lte, ne, or, sql } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { agentSecrets, agentToolSubscriptions, agents } from '../../db/schema/index.js';
import { requireScope, requireWithin, type UserPrincipal } from '../../http/auth.js';
import { AppError, notFound } from '../../http/errors.js';
import { iso, newId, newSecret } from '../../http/ids.js';
import { mapPage, selectPage, type Page } from '../../http/pagination.js';
import { SharedCache } from '../../lib/shared-cache.js';
import { hashPassword } from '../identity/passwords.js';
import { AGENT_SCOPES, invalidateAgentAuth, loadLiveness } from './tokens.js';
import type { Static } from 'typebox';
import type { AgentSchema, SecretSchema } from './schemas.js';

export type AgentRow = typeof agents.$inferSelect;
export type AgentStatus = 'active' | 'disabled' | 'deleted';

/** A live client secret as shown on the agent (never the secret itself). */
export type SecretView = Static<typeof SecretSchema>;

/** The agent record of the API. */
export type AgentView = Static<typeof AgentSchema>;

/** Largest serialised `metadata`, bytes. */
const MAX_METADATA_BYTES = 16 * 1024;
/** Longest rotation grace period (at most 86400 s). */
export const MAX_GRACE_SECONDS = 86_400;

// ------------------------------------------------------------------------- contract functions

/**
 * The agent `agentId` if owned by `accountId` and not deleted (cross-module contract).
 * @throws AppError not_found otherwise (also for other accounts' agents: no existence leaks).
 */
export async function getAgentForAccount(
  ctx: AppContext,
  accountId: string,
  agentId: string,
): Promise<{ id: string; ownerId: string; name: string; status: string }> {
  const [a] = await ctx.db
    .select({ id: agents.id, ownerId: agents.ownerId, name: agents.name, status: agents.status })
    .from(agents)
    .where(and(eq(agents.id, agentId), eq(agents.ownerId, accountId), ne(agents.status, 'deleted')));
  if (!a) throw notFound('Agent');
  return a;
}

/**
 * The agent `agentId` if owned by `accountId` and not deleted, read through the liveness cache that
 * verifies agent tokens (`AGENT_AUTH_CACHE_MS`; evicted on every instance when the agent is
 * disabled, re-enabled or deleted) — for hot paths such as invoke, where {@link getAgentForAccount}
 * would cost a query per call. A cached status other than `active` is re-read fresh (a cached entry
 * may only make an acceptance stale, never a refusal); ownership never changes.
 * Falls back to the uncached read when agent auth is not installed or the cache is off.
 * @returns `{id, ownerId, status}`
 * @throws AppError not_found for a missing, deleted or other account's agent (no existence leaks)
 */
export async function getLiveAgentForAccount(
  ctx: AppContext,
  accountId: string,
  agentId: string,
): Promise<{ id: string; ownerId: string; status: string }> {
  const cache = ctx.agentAuth?.cache;
  if (!cache || ctx.config.agents.authCacheMs === 0) return getAgentForAccount(ctx, accountId, agentId);
  const load = async () => {
    const loaded = await loadLiveness(ctx, agentId);
    if (!loaded) throw notFound('Agent');
    return loaded;
  };
  let live = await cache.get(agentId, load);
  if (live.ownerId === accountId && live.status !== 'active') {
    cache.evictLocal(agentId);
    live = await cache.get(agentId, load);
  }
  if (live.ownerId !== accountId || live.status === 'deleted') throw notFound('Agent');
  return { id: agentId, ownerId: live.ownerId, status: live.status };
}

/** Agent tool-subscription answers by `<agentId>\n<serviceId>` (execution path); evicted by {@link agentToolsChanged}. */
function agentToolCache(ctx: AppContext): SharedCache<boolean> {
  return SharedCache.of(ctx, { name: 'agents.tools', max: 50_000, ttlMs: ctx.config.cacheTtlMs });
}

/**
 * True when the (not deleted) agent is subscribed to `serviceId` (agent tool subscriptions;
 * cross-module contract). Answers are cached for the execution path; subscribe/unsubscribe evict them.
 */
export async function isAgentSubscribed(ctx: AppContext, agentId: string, serviceId: string): Promise<boolean> {
  return agentToolCache(ctx).get(`${agentId}\n${serviceId}`, async () => {
    const rows = await ctx.db
      .select({ one: sql<number>`1` })
      .from(agentToolSubscriptions)
      .innerJoin(agents, eq(agents.id, agentToolSubscriptions.agentId))
      .where(
        and(
          eq(agentToolSubscriptions.agentId, agentId),
          eq(agentToolSubscriptions.serviceId, serviceId),
          ne(agents.status, 'deleted'),
        ),
      )
      .limit(1);
    return rows.length > 0;
  });
}

/** Evict cached {@link isAgentSubscribed} answers of `agentId` for `serviceIds` (after the write committed), on every instance. */
export async function agentToolsChanged(ctx: AppContext, agentId: string, serviceIds: string[]): Promise<void> {
  for (const id of serviceIds) await agentToolCache(ctx).invalidate(`${agentId}\n${id}`);
}

/**
 * Any account's agent by id, unless deleted; null when missing. For modules that address agents
 * across accounts (cross-agent grants and memory), which then apply their own access rules.
 */
export async function findAgent(
  ctx: AppContext,
  agentId: string,
): Promise<{ id: string; ownerId: string; name: string; status: string } | null> {
  const [a] = await ctx.db
    .select({ id: agents.id, ownerId: agents.ownerId, name: agents.name, status: agents.status })
    .from(agents)
    .where(and(eq(agents.id, agentId), ne(agents.status, 'deleted')));
  return a ?? null;
}

// ------------------------------------------------------------------------- secrets

/**
 * A new client secret for secret id `sid`: `ags_` + the 26 characters of the id + 43 random
 * base64url characters (256 bits). Embedding the id lets the token endpoint find the one hash to
 * check, so a token request costs exactly one scrypt.
 */
function newClientSecret(sid: string): string {
  return newSecret('ags', sid.slice(4));
}

function newClientId(): string {
  return `agc_${randomBytes(16).toString('hex')}`;
}

// ------------------------------------------------------------------------- views

function view(a: AgentRow, secrets: Array<typeof agentSecrets.$inferSelect>): AgentView {
  const now = Date.now();
  return {
    id: a.id,
    name: a.name,
    description: a.description,
    client_id: a.clientId,
    status: a.status as AgentStatus,
    metadata: a.metadata,
    secrets: secrets
      .filter((s) => s.agentId === a.id && (!s.expiresAt || s.expiresAt.getTime() > now))
      .sort((x, y) => (x.id < y.id ? 1 : -1))
      .map((s) => ({
        id: s.id,
        created_at: s.createdAt.toISOString(),
        last_used_at: iso(s.lastUsedAt),
        expires_at: iso(s.expiresAt),
      })),
    created_at: a.createdAt.toISOString(),
    updated_at: a.updatedAt.toISOString(),
    deleted_at: iso(a.deletedAt),
  };
}

async function secretsOf(ctx: AppContext, agentIds: string[]): Promise<Array<typeof agentSecrets.$inferSelect>> {
  if (agentIds.length === 0) return [];
  return ctx.db
    .select()
    .from(agentSecrets)
    .where(
      and(
        inArray(agentSecrets.agentId, agentIds),
        or(isNull(agentSecrets.expiresAt), gt(agentSecrets.expiresAt, new Date())),
      ),
    );
}

function checkMetadata(metadata: Record<string, unknown> | undefined): void {
  if (metadata && Buffer.byteLength(JSON.stringify(metadata)) > MAX_METADATA_BYTES) {
    throw new AppError('validation_failed', `metadata must serialise to at most ${MAX_METADATA_BYTES} bytes`, {
      errors: [{ in: 'body', pointer: '/metadata', message: `larger than ${MAX_METADATA_BYTES} bytes` }],
    });
  }
}

async function ownedRow(ctx: AppContext, accountId: string, agentId: string): Promise<AgentRow> {
  const [a] = await ctx.db
    .select()
    .from(agents)
    .where(and(eq(agents.id, agentId), eq(agents.ownerId, accountId), ne(agents.status, 'deleted')));
  if (!a) throw notFound('Agent');
  return a;
}

// ------------------------------------------------------------------------- agents

/**
 * The credential check of agent management: `agents:manage` (API keys may lack it; a user's own
 * token holds it); with `mints` (creating an agent, rotating its secret: whoever holds the new
 * client secret can request a token with every agent scope), also every agent scope, so a key
 * never creates an agent broader than itself.
 * @throws AppError insufficient_scope | exceeds_credential
 */
export function assertManagesAgents(owner: UserPrincipal, mints = false): void {
  requireScope(owner, 'agents:manage');
  if (mints) requireWithin(owner, AGENT_SCOPES, 'an agent (its tokens may carry every agent scope)');
}

/**
 * Create an agent of `accountId` with its first client secret. The answer is the only time
 * `client_secret` is shown (it is stored as a scrypt hash).
 * @throws AppError validation_failed (metadata too large)
 */
export async function createAgent(
  ctx: AppContext,
  owner: UserPrincipal,
  input: { name: string; description?: string | null; metadata?: Record<string, unknown> },
): Promise<AgentView & { client_secret: string }> {
  assertManagesAgents(owner, true);
  const accountId = owner.userId;
  checkMetadata(input.metadata);
  const id = newId('agt');
  const sid = newId('sec');
  const secret = newClientSecret(sid);
  const secretHash = await hashPassword(secret);
  const { row, sec } = await ctx.db.transaction(async (tx) => {
    const [row] = await tx
      .insert(agents)
      .values({
        id,
        ownerId: accountId,
        name: input.name,
        description: input.description ?? null,
        clientId: newClientId(),
        metadata: input.metadata ?? {},
      })
      .returning();
    const [sec] = await tx.insert(agentSecrets).values({ id: sid, agentId: id, secretHash }).returning();
    return { row, sec };
  });
  return { ...view(row, [sec]), client_secret: secret };
}

/** The account's agents, newest first; deleted ones only with `include_deleted`. */
export async function listAgents(
  ctx: AppContext,
  owner: UserPrincipal,
  q: { limit?: number; cursor?: string; include_deleted?: boolean },
): Promise<Page<AgentView>> {
  assertManagesAgents(owner);
  const accountId = owner.userId;
  const rows = await selectPage(ctx.db, agents, q, [
    eq(agents.ownerId, accountId),
    q.include_deleted ? undefined : ne(agents.status, 'deleted'),
  ]);
  const secrets = await secretsOf(
    ctx,
    rows.data.map((r) => r.id),
  );
  return mapPage(rows, (r) => view(r, secrets));
}

/** One agent of the account. @throws AppError not_found (other accounts' and deleted agents too) */
export async function getAgent(ctx: AppContext, owner: UserPrincipal, agentId: string): Promise<AgentView> {
  assertManagesAgents(owner);
  const row = await ownedRow(ctx, owner.userId, agentId);
  return view(row, await secretsOf(ctx, [row.id]));
}

/**
 * Update name, description, metadata (replaced as a whole) or status (`active` | `disabled`).
 * Disabling makes the agent's tokens fail at once (`invalid_token`) and the token endpoint
 * answer `invalid_client`. @throws AppError not_found | validation_failed
 */
export async function updateAgent(
  ctx: AppContext,
  owner: UserPrincipal,
  agentId: string,
  input: {
    name?: string;
    description?: string | null;
    metadata?: Record<string, unknown>;
    status?: 'active' | 'disabled';
  },
): Promise<AgentView> {
  assertManagesAgents(owner);
  const accountId = owner.userId;
  checkMetadata(input.metadata);
  const [row] = await ctx.db
    .update(agents)
    .set({
      ...(input.name !== undefined ? { name: input.name } : {}),
      ...(input.description !== undefined ? { description: input.description } : {}),
      ...(input.metadata !== undefined ? { metadata: input.metadata } : {}),
      ...(input.status !== undefined ? { status: input.status } : {}),
      updatedAt: new Date(),
    })
    .where(and(eq(agents.id, agentId), eq(agents.ownerId, accountId), ne(agents.status, 'deleted')))
    .returning();
  if (!row) throw notFound('Agent');
  if (input.status !== undefined) await invalidateAgentAuth(ctx, agentId);
  return view(row, await secretsOf(ctx, [row.id]));
}

/**
 * Soft delete: status `deleted`, `deleted_at` set, every secret removed (tokens stop working at
 * once); memory, grants' history and deployments are kept. @throws AppError not_found
 */
export async function deleteAgent(ctx: AppContext, owner: UserPrincipal, agentId: string): Promise<void> {
  assertManagesAgents(owner);
  const accountId = owner.userId;
  const now = new Date();
  const found = await ctx.db.transaction(async (tx) => {
    const [row] = await tx
      .update(agents)
      .set({ status: 'deleted', deletedAt: now, updatedAt: now })
      .where(and(eq(agents.id, agentId), eq(agents.ownerId, accountId), ne(agents.status, 'deleted')))
      .returning({ id: agents.id });
    if (!row) return false;
    await tx.delete(agentSecrets).where(eq(agentSecrets.agentId, agentId));
    return true;
  });
  if (!found) throw notFound('Agent');
  await invalidateAgentAuth(ctx, agentId);
}

/**
 * Issue a new client secret. `graceSeconds` 0 (default): every older secret stops working at
 * once, and so do tokens issued with them (401 `invalid_token`). `graceSeconds` > 0: older live
 * secrets (and their tokens) keep working until `now + grace` (or their own earlier end).
 * @throws AppError not_found | validation_failed (grace out of 0..86400)
 */
export async function rotateSecret(
  ctx: AppContext,
  owner: UserPrincipal,
  agentId: string,
  graceSeconds = 0,
): Promise<AgentView & { client_secret: string }> {
  assertManagesAgents(owner, true);
  const accountId = owner.userId;
  if (!Number.isInteger(graceSeconds) || graceSeconds < 0 || graceSeconds > MAX_GRACE_SECONDS) {
    throw new AppError('validation_failed', `grace_period_seconds must be an integer from 0 to ${MAX_GRACE_SECONDS}`, {
      errors: [{ in: 'body', pointer: '/grace_period_seconds', message: `must be from 0 to ${MAX_GRACE_SECONDS}` }],
    });
  }
  const sid = newId('sec');
  const secret = newClientSecret(sid);
  const secretHash = await hashPassword(secret);
  const now = new Date();
  const row = await ctx.db.transaction(async (tx) => {
    // Row lock: concurrent rotations of one agent apply one after the other.
    const [a] = await tx
      .select()
      .from(agents)
      .where(and(eq(agents.id, agentId), eq(agents.ownerId, accountId), ne(agents.status, 'deleted')))
      .for('update');
    if (!a) return null;
    if (graceSeconds === 0) {
      await tx.delete(agentSecrets).where(eq(agentSecrets.agentId, agentId));
    } else {
      const end = new Date(now.getTime() + graceSeconds * 1000);
      await tx.delete(agentSecrets).where(and(eq(agentSecrets.agentId, agentId), lte(agentSecrets.expiresAt, now)));
      await tx
        .update(agentSecrets)
        .set({ expiresAt: sql`least(coalesce(${agentSecrets.expiresAt}, ${end}), ${end})` })
        .where(eq(agentSecrets.agentId, agentId));
    }
    await tx.insert(agentSecrets).values({ id: sid, agentId, secretHash, createdAt: now });
    const [u] = await tx.update(agents).set({ updatedAt: now }).where(eq(agents.id, agentId)).returning();
    return u;
  });
  if (!row) throw notFound('Agent');
  await invalidateAgentAuth(ctx, agentId);
  return { ...view(row, await secretsOf(ctx, [agentId])), client_secret: secret };
}
