/**
 * Platform calls of deployed code: the handler's `context.tools`, `context.memory`,
 * `context.userMemory` and `context.log` travel over the sandbox's IPC channel and are answered
 * here, on the host, as the agent — through the SAME service functions as the HTTP routes
 * (`POST /v1/agents/:id/execute`, `GET /search/tools`, `/v2/memory/:key`, `/v2/agents/:id/memory`,
 * `/memory/search`, `POST /memory`), so subscriptions, quotas, grants, signing and recording apply
 * unchanged.
 *
 * Identity: for each invocation the host mints an agent principal (the agent, its owner's roles,
 * the agent scopes — narrowed to the invoking credential's when an agent token or a scoped API key
 * started the invocation, so deployed code never does more than its invoker may —, expiring at the
 * invocation's deadline). It never leaves this process — not in the sandbox's environment, not in
 * any message to it: the sandbox names an operation and its arguments, nothing else. This file
 * checks nothing about that principal: every operation is one call of the service function the
 * HTTP route calls (`executeTool`, `agent-memory/access.ts`…), which checks scopes and grants.
 *
 * Limits per invocation: calls end at the deadline (the identity expires with it), at most
 * {@link MAX_CALLS} calls and {@link MAX_IN_FLIGHT} at once; tool quotas are the owner's as over HTTP.
 * Every call is recorded in the invocation (`calls`: op, service/tool or key, status, duration).
 */
import { performance } from 'node:perf_hooks';
import { eq } from 'drizzle-orm';
import { Compile } from 'typebox/compile';
import type { Static, TSchema } from 'typebox';
import type { AppContext } from '../../context.js';
import { users } from '../../db/schema/index.js';
import type { Role } from '../../config.js';
import type { AgentPrincipal, Scope } from '../../http/auth.js';
import { AppError } from '../../http/errors.js';
import type { Broker } from '../../sandbox/runner.js';
import { deleteAgentMemory, getAgentMemory, listAgentMemory, putAgentMemory } from '../agent-memory/access.js';
import { etagOf, parseTagCondition } from '../agent-memory/service.js';
import { ListEntriesQuery, PutEntryBody } from '../agent-memory/schemas.js';
import { AGENT_SCOPES, agentScopeSet, rolesOf } from '../agents/tokens.js';
import { AddMemoryBody, SearchQuery } from '../memory/schemas.js';
import { addMemoryAs, searchMemoriesAs } from '../memory/access.js';
import { ToolSearchQuery } from '../search/schemas.js';
import { searchTools } from '../search/service.js';
import { ExecuteBody } from '../sessions/schemas.js';
import { createSession } from '../sessions/service.js';
import { executeTool } from '../sessions/execute.js';
import { approvalState } from '../approvals/service.js';
import type { CallRecordSchema } from './schemas.js';
import { tracedBroker } from '../../telemetry/agent.js';

/** Most platform calls one invocation may make. */
export const MAX_CALLS = 1000;
/** Most platform calls of one invocation in flight at once. */
export const MAX_IN_FLIGHT = 16;
/** Calls kept in the invocation record. */
const MAX_RECORDED = 200;

/** One recorded platform call. `target`: `service/tool`, a memory key, or a query (truncated). */
export type CallRecord = Static<typeof CallRecordSchema>;

/** The per-invocation identity (host-side only). */
interface Identity {
  principal: AgentPrincipal;
  invocationId: string;
  expiresAt: number;
}

const KeyArgs = {
  type: 'object',
  properties: { key: { type: 'string', minLength: 1, maxLength: 512 } },
  required: ['key'],
} as const;
const check = <T extends TSchema>(schema: T) => Compile(schema);
const validators = {
  execute: check(ExecuteBody),
  search: check(ToolSearchQuery),
  put: check({
    ...PutEntryBody,
    properties: {
      ...PutEntryBody.properties,
      ...KeyArgs.properties,
      if_match: { type: 'string', maxLength: 200 },
      if_none_match: { type: 'string', maxLength: 200 },
    },
    required: ['key', 'value'],
  } as unknown as TSchema),
  key: check({
    ...KeyArgs,
    properties: { ...KeyArgs.properties, if_match: { type: 'string', maxLength: 200 } },
    additionalProperties: false,
  } as unknown as TSchema),
  list: check(ListEntriesQuery),
  read: check({
    type: 'object',
    properties: { agentId: { type: 'string', minLength: 1, maxLength: 100 }, key: KeyArgs.properties.key },
    required: ['agentId', 'key'],
    additionalProperties: false,
  } as unknown as TSchema),
  userSearch: check(SearchQuery),
  userAdd: check(AddMemoryBody),
  approval: check({
    type: 'object',
    properties: { id: { type: 'string', minLength: 1, maxLength: 64 } },
    required: ['id'],
    additionalProperties: false,
  } as unknown as TSchema),
};

function valid<T>(v: { Check(x: unknown): boolean }, args: unknown, what: string): T {
  if (!v.Check(args)) throw new AppError('validation_failed', `Invalid arguments for ${what}`);
  return args as T;
}

/**
 * Mint the host-side identity of one invocation: agent `inv.agentId` acting for `inv.ownerId`
 * (with the owner's roles, as an agent token would carry them) until `expiresAt`, the deadline.
 * `roles`: the owner's roles as the invoking credential carried them (the owner's token or API key,
 * or the agent's own token, which carries its owner's roles); absent (a queued invocation run by
 * a job), they are read from the owner's row.
 */
async function mintIdentity(
  ctx: AppContext,
  inv: { id: string; agentId: string; ownerId: string },
  expiresAt: number,
  roles?: Role[],
  scopes?: ReadonlySet<Scope>,
): Promise<Identity> {
  const owner = roles
    ? { roles }
    : (await ctx.db.select({ roles: users.roles }).from(users).where(eq(users.id, inv.ownerId)))[0];
  const granted = scopes ? AGENT_SCOPES.filter((s) => scopes.has(s)) : [...AGENT_SCOPES];
  return {
    invocationId: inv.id,
    expiresAt,
    principal: {
      kind: 'agent',
      agentId: inv.agentId,
      ownerId: inv.ownerId,
      roles: rolesOf(owner?.roles ?? []),
      clientId: `invocation:${inv.id}`,
      scope: granted,
      scopes: agentScopeSet(granted),
      expiresAt: new Date(expiresAt),
    },
  };
}

/**
 * The broker of invocation `inv`, valid until `expiresAt` (its deadline, ms since the epoch);
 * `calls` receives the record of each call. The identity is minted on the first call, with
 * `ownerRoles` when the invoking credential carried the owner's roles (see {@link mintIdentity}),
 * and at most `invokerScopes` (the invoking principal's `scopes`: an agent token's or a scoped API
 * key's; absent = every agent scope, as for the owner's own token or a queued invocation).
 */
export function brokerFor(
  ctx: AppContext,
  inv: { id: string; agentId: string; ownerId: string },
  expiresAt: number,
  calls: CallRecord[],
  ownerRoles?: Role[],
  invokerScopes?: ReadonlySet<Scope>,
): Broker {
  let count = 0;
  let inFlight = 0;
  let session: Promise<string> | null = null;
  let minted: Promise<Identity> | null = null;
  const actor = { accountId: inv.ownerId, agentId: inv.agentId };
  // Tool executions are recorded in one session per invocation, created on the first one.
  const sessionOf = () =>
    (session ??= createSession(ctx, actor, { name: `invocation ${inv.id}`, metadata: { invocation_id: inv.id } }).then(
      (s) => s.id,
    ));

  const dispatch = async (op: string, args: unknown, rec: CallRecord): Promise<unknown> => {
    const id = await (minted ??= mintIdentity(ctx, inv, expiresAt, ownerRoles, invokerScopes));
    const p = id.principal;
    switch (op) {
      case 'tools.execute': {
        const a = valid<{ service: string; tool: string; arguments?: Record<string, unknown>; timeout_ms?: number }>(
          validators.execute,
          args,
          'tools.execute',
        );
        rec.target = `${a.service}/${a.tool}`.slice(0, 200);
        const remaining = id.expiresAt - Date.now();
        const { result } = await executeTool(ctx, p, sessionOf, {
          ...a,
          timeout_ms: Math.max(100, Math.min(a.timeout_ms ?? remaining, remaining)),
        });
        rec.execution_id = result.execution_id;
        return result;
      }
      case 'approvals.get': {
        // The state of one of this agent's approval requests (a handler waiting for a decision polls it).
        const a = valid<{ id: string }>(validators.approval, args, 'approvals.get');
        rec.target = a.id;
        return approvalState(ctx, actor, a.id);
      }
      case 'tools.search': {
        const a = valid<{ q?: string; limit?: number }>(validators.search, renameQuery(args), 'tools.search');
        rec.target = a.q?.slice(0, 100);
        return searchTools(ctx, p, a);
      }
      case 'memory.get': {
        const a = valid<{ key: string }>(validators.key, args, 'memory.get');
        rec.target = a.key.slice(0, 100);
        return withEtag(await getAgentMemory(ctx, p, p.agentId, a.key));
      }
      case 'memory.put': {
        const a = valid<{
          key: string;
          value: unknown;
          ttl_seconds?: number;
          if_match?: string;
          if_none_match?: string;
        }>(validators.put, args, 'memory.put');
        rec.target = a.key.slice(0, 100);
        const ifNoneMatch = parseTagCondition(a.if_none_match, 'If-None-Match');
        const r = await putAgentMemory(
          ctx,
          p,
          p.agentId,
          a.key,
          { value: a.value, ttl_seconds: a.ttl_seconds },
          { ifMatch: parseTagCondition(a.if_match, 'If-Match'), ifNoneMatch },
        );
        return { ...withEtag(r.entry), created: r.created };
      }
      case 'memory.delete': {
        const a = valid<{ key: string; if_match?: string }>(validators.key, args, 'memory.delete');
        rec.target = a.key.slice(0, 100);
        await deleteAgentMemory(ctx, p, p.agentId, a.key, { ifMatch: parseTagCondition(a.if_match, 'If-Match') });
        return { deleted: true };
      }
      case 'memory.list': {
        const a = valid<{ prefix?: string; limit?: number; cursor?: string }>(validators.list, args, 'memory.list');
        return listAgentMemory(ctx, p, p.agentId, a);
      }
      case 'memory.read': {
        const a = valid<{ agentId: string; key: string }>(validators.read, args, 'memory.read');
        rec.target = `${a.agentId}/${a.key}`.slice(0, 200);
        // Another agent's key: the grant-checked, audited read of every face.
        return withEtag(await getAgentMemory(ctx, p, a.agentId, a.key));
      }
      case 'userMemory.search': {
        const a = valid<{ q: string; threshold?: number; limit?: number }>(
          validators.userSearch,
          renameQuery(args),
          'userMemory.search',
        );
        rec.target = a.q.slice(0, 100);
        return searchMemoriesAs(ctx, p, a);
      }
      case 'userMemory.add': {
        const a = valid<{ content: string; metadata?: Record<string, unknown> }>(
          validators.userAdd,
          args,
          'userMemory.add',
        );
        return addMemoryAs(ctx, p, { ...a, agent_id: p.agentId });
      }
      default:
        throw new AppError('bad_request', `Unknown platform call ${JSON.stringify(op).slice(0, 60)}`);
    }
  };

  const answer: Broker = async (op, args) => {
    const rec: CallRecord = { op: String(op).slice(0, 40), status: 'ok', duration_ms: 0, at: new Date().toISOString() };
    const t0 = performance.now();
    try {
      if (Date.now() >= expiresAt) throw new AppError('invalid_state', 'The invocation has reached its deadline');
      if (++count > MAX_CALLS)
        throw new AppError('limit_reached', `At most ${MAX_CALLS} platform calls per invocation`);
      if (inFlight >= MAX_IN_FLIGHT)
        throw new AppError('rate_limited', `At most ${MAX_IN_FLIGHT} platform calls in flight per invocation`);
      inFlight++;
      try {
        return await beforeDeadline(dispatch(op, args, rec), expiresAt);
      } finally {
        inFlight--;
      }
    } catch (err) {
      rec.status = 'error';
      if (err instanceof AppError) {
        rec.error = err.code;
        throw { code: err.code, message: err.message, status: err.status, errors: err.errors, details: err.extra };
      }
      rec.error = 'internal_error';
      ctx.log.error({ err, invocation_id: inv.id, op }, 'deployments: platform call failed');
      throw { code: 'internal_error', message: 'The platform call failed', status: 500 };
    } finally {
      rec.duration_ms = Math.round((performance.now() - t0) * 10) / 10;
      if (calls.length < MAX_RECORDED) calls.push(rec);
    }
  };
  // Each call runs in the invocation's trace (the `invoke_agent` span active here), as a child span.
  return tracedBroker(answer);
}

/** `query` (the handler-facing name) → `q` (the route's), for the search calls. */
function renameQuery(args: unknown): unknown {
  if (!args || typeof args !== 'object' || Array.isArray(args)) return args;
  const { query, ...rest } = args as Record<string, unknown>;
  return query === undefined ? rest : { q: query, ...rest };
}

function withEtag<T extends { version: number }>(e: T): T & { etag: string } {
  return { ...e, etag: etagOf(e.version) };
}

function beforeDeadline<T>(p: Promise<T>, deadline: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(
      () => reject(new AppError('invalid_state', 'The invocation has reached its deadline')),
      Math.max(0, deadline - Date.now()),
    );
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
}
