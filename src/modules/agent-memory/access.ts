/**
 * Agent key/value memory as a principal sees it: ONE function per operation — get, list, put,
 * delete — plus the audit list, each taking the caller's principal and the agent whose memory it
 * addresses. Every face calls these and nothing else: REST (`/v2/memory…` for the agent's own
 * memory, `/v2/agents/:id/memory…` for any agent's), the MCP `memory_*` tools and the deployed-agent
 * runtime's `context.memory` (the broker). The checks live here, in this order, so no face can
 * skip one:
 *
 * 1. the credential's scope — `memory:read` for get/list/audit, `memory:write` for put/delete —
 *    for agent tokens and API keys alike (a user's own token holds every scope) → 403
 *    `insufficient_scope`;
 * 2. who the caller is to the agent: its owner user (any of the account's agents; another
 *    account's → 404), the agent itself, or another agent (any account) that needs a live grant
 *    (permissions module; `write` implies `read`) covering the key → 403 `permission_required`;
 *    grantee accesses and refusals are audited, a grantee write commits with its audit record.
 *
 * Storage (no checks) is in `service.ts`.
 */
import type { Static } from 'typebox';
import type { AppContext } from '../../context.js';
import { requireScope, type Principal } from '../../http/auth.js';
import { AppError, notFound } from '../../http/errors.js';
import type { Page } from '../../http/pagination.js';
import { findAgent, getAgentForAccount } from '../agents/service.js';
import { coveringGrant, liveGrants, type Access } from '../permissions/service.js';
import type { AuditQuery } from './schemas.js';
import {
  auditPage,
  deleteEntry,
  getEntry,
  listEntries,
  putEntry,
  recordAudit,
  type AuditView,
  type EntryView,
  type Preconditions,
} from './service.js';

/** How the caller relates to the agent whose memory it addresses. */
type Relation = { kind: 'owner' | 'self' } | { kind: 'grantee'; agentId: string };

/**
 * Steps 1 and 2 up to the grant: the scope of `access`, then the caller's relation to `targetId`.
 * @throws AppError insufficient_scope | not_found (another account's agent for users; a missing
 *   or deleted agent for agents)
 */
async function relationTo(ctx: AppContext, principal: Principal, targetId: string, access: Access): Promise<Relation> {
  requireScope(principal, access === 'read' ? 'memory:read' : 'memory:write');
  if (principal.kind === 'user') {
    await getAgentForAccount(ctx, principal.userId, targetId);
    return { kind: 'owner' };
  }
  if (principal.agentId === targetId) return { kind: 'self' };
  if (!(await findAgent(ctx, targetId))) throw notFound('Agent');
  return { kind: 'grantee', agentId: principal.agentId };
}

function permissionRequired(access: Access, what: string): AppError {
  return new AppError(
    'permission_required',
    `No live ${access} grant of this agent's memory covers ${what}; ask its owner for one (POST /v2/agents/:id/permissions)`,
  );
}

/** The grant of `grantee` covering `key` with `access`; a refusal is audited and thrown. */
async function grantFor(
  ctx: AppContext,
  targetId: string,
  grantee: string,
  access: Access,
  key: string,
): Promise<{ id: string }> {
  const grant = await coveringGrant(ctx, targetId, grantee, access, key);
  if (grant) return grant;
  await recordAudit(ctx.db, { owner: targetId, actor: grantee, action: access, outcome: 'denied', key });
  throw permissionRequired(access, `the key "${key}"`);
}

/**
 * One live entry of agent `targetId` (`GET /v2/memory/:key` for the agent itself, MCP
 * `memory_get`, the runtime's `context.memory.get` / `.read`).
 * @throws AppError insufficient_scope | not_found (agent, or entry missing/expired) | permission_required
 */
export async function getAgentMemory(
  ctx: AppContext,
  principal: Principal,
  targetId: string,
  key: string,
): Promise<EntryView> {
  // The agent reading its own key is the hot path: a set lookup, then the (coalesced) read.
  if (principal.kind === 'agent' && principal.agentId === targetId) {
    requireScope(principal, 'memory:read');
    return getEntry(ctx, targetId, key);
  }
  const rel = await relationTo(ctx, principal, targetId, 'read');
  if (rel.kind !== 'grantee') return getEntry(ctx, targetId, key);
  const grant = await grantFor(ctx, targetId, rel.agentId, 'read', key);
  let entry: EntryView | undefined;
  try {
    entry = await getEntry(ctx, targetId, key);
    return entry;
  } finally {
    // Audited whether the key exists or not (`keys` lists what was returned).
    await recordAudit(ctx.db, {
      owner: targetId,
      actor: rel.agentId,
      action: 'read',
      outcome: 'allowed',
      key,
      keys: entry ? [key] : [],
      permissionId: grant.id,
    });
  }
}

/**
 * Live entries of agent `targetId` in key order, optionally under `prefix` (`GET /v2/memory`,
 * `GET /v2/agents/:id/memory`, MCP `memory_list`, `context.memory.list`). A grantee sees only the
 * keys its grants cover; its read (or refusal) is audited.
 * @throws AppError insufficient_scope | not_found | permission_required
 */
export async function listAgentMemory(
  ctx: AppContext,
  principal: Principal,
  targetId: string,
  q: { prefix?: string; limit?: number; cursor?: string },
): Promise<Page<EntryView>> {
  const rel = await relationTo(ctx, principal, targetId, 'read');
  if (rel.kind !== 'grantee') return listEntries(ctx, targetId, q);
  const grants = await liveGrants(ctx, targetId, rel.agentId, 'read');
  const qp = q.prefix ?? '';
  // Grants that can cover some key under the requested prefix.
  const useful = grants.filter((g) => !g.keyPrefix || g.keyPrefix.startsWith(qp) || qp.startsWith(g.keyPrefix));
  if (useful.length === 0) {
    await recordAudit(ctx.db, {
      owner: targetId,
      actor: rel.agentId,
      action: 'read',
      outcome: 'denied',
      prefix: q.prefix ?? null,
    });
    throw permissionRequired('read', q.prefix ? `keys under "${q.prefix}"` : 'any key');
  }
  const allowed = useful.some((g) => !g.keyPrefix || qp.startsWith(g.keyPrefix))
    ? null
    : useful.map((g) => g.keyPrefix!);
  const page = await listEntries(ctx, targetId, q, allowed);
  await recordAudit(ctx.db, {
    owner: targetId,
    actor: rel.agentId,
    action: 'read',
    outcome: 'allowed',
    prefix: q.prefix ?? null,
    keys: page.data.map((e) => e.key),
    permissionId: useful.length === 1 ? useful[0].id : null,
  });
  return page;
}

/**
 * Create or replace one key of agent `targetId`'s memory (`PUT /v2/memory/:key`,
 * `PUT /v2/agents/:id/memory/:key`, MCP `memory_put`, `context.memory.put`); `pre` are the
 * `If-Match` / `If-None-Match` conditions. A grantee's write commits with its audit record.
 * @throws AppError insufficient_scope | not_found | permission_required | the errors of `putEntry`
 *   (validation_failed, precondition_failed, payload_too_large, memory_entry_limit)
 */
export async function putAgentMemory(
  ctx: AppContext,
  principal: Principal,
  targetId: string,
  key: string,
  input: { value: unknown; ttl_seconds?: number },
  pre: Preconditions = {},
): Promise<{ entry: EntryView; created: boolean }> {
  if (principal.kind === 'agent' && principal.agentId === targetId) {
    requireScope(principal, 'memory:write');
    return putEntry(ctx, targetId, key, input, pre);
  }
  const rel = await relationTo(ctx, principal, targetId, 'write');
  if (rel.kind !== 'grantee') return putEntry(ctx, targetId, key, input, pre);
  const grant = await grantFor(ctx, targetId, rel.agentId, 'write', key);
  return ctx.db.transaction(async (tx) => {
    const res = await putEntry(ctx, targetId, key, input, pre, tx);
    await recordAudit(tx, {
      owner: targetId,
      actor: rel.agentId,
      action: 'write',
      outcome: 'allowed',
      key,
      permissionId: grant.id,
    });
    return res;
  });
}

/**
 * Delete one live key of agent `targetId`'s memory (`DELETE /v2/memory/:key`, MCP
 * `memory_delete`, `context.memory.delete`), `If-Match` honoured. A delete is a write: a grantee
 * needs a write grant covering the key, and is audited.
 * @throws AppError insufficient_scope | not_found (agent or entry) | permission_required | precondition_failed
 */
export async function deleteAgentMemory(
  ctx: AppContext,
  principal: Principal,
  targetId: string,
  key: string,
  pre: Preconditions = {},
): Promise<void> {
  const rel = await relationTo(ctx, principal, targetId, 'write');
  if (rel.kind !== 'grantee') return deleteEntry(ctx, targetId, key, pre);
  const grant = await grantFor(ctx, targetId, rel.agentId, 'write', key);
  await deleteEntry(ctx, targetId, key, pre);
  await recordAudit(ctx.db, {
    owner: targetId,
    actor: rel.agentId,
    action: 'write',
    outcome: 'allowed',
    key,
    permissionId: grant.id,
  });
}

/**
 * Cross-agent accesses of `targetId`'s memory, newest first; for its owner user or the agent
 * itself (`memory:read`); anybody else gets 404. @throws AppError insufficient_scope | not_found
 */
export async function listAudit(
  ctx: AppContext,
  principal: Principal,
  targetId: string,
  q: Static<typeof AuditQuery>,
): Promise<Page<AuditView>> {
  requireScope(principal, 'memory:read');
  if (principal.kind === 'user') await getAgentForAccount(ctx, principal.userId, targetId);
  else if (principal.agentId !== targetId) throw notFound('Agent');
  return auditPage(ctx, targetId, q);
}
