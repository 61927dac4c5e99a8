/**
 * `POST /v1/policies/evaluate`: the dry run of a tool call against the policies that bind the
 * account (and an optional draft): decision, the policies that decided, evaluation errors, and the
 * request as the policies saw it. Nothing is executed, logged or counted.
 */
import type { Static } from 'typebox';
import type { AppContext } from '../../context.js';
import type { AgentPrincipal, Principal, Scope, UserPrincipal } from '../../http/auth.js';
import { AppError } from '../../http/errors.js';
import { getAgentForAccount } from '../agents/service.js';
import { resolveExecutableTool } from '../registry/executable.js';
import { callCounts } from './authorize.js';
import { type CallFacts, principalUid, requestOf, toolUid } from './cedar.js';
import { type CompiledSet, compilePolicy, evaluateSubset, policySetOf, subsetFor } from './engine.js';
import type { EvaluateBody, EvaluationSchema } from './schemas.js';

/** The dry run's answer. */
export type EvaluationView = Static<typeof EvaluationSchema>;

/**
 * Evaluate a call of `body.service`/`body.tool` as the account (or its agent `agent_id`).
 * @throws AppError not_found (service, tool or agent not visible to the account), validation_failed (draft text)
 */
export async function dryRun(
  ctx: AppContext,
  user: UserPrincipal,
  body: Static<typeof EvaluateBody>,
): Promise<EvaluationView> {
  const resolved = await resolveExecutableTool(ctx, body.service, body.tool);
  if (!resolved || (resolved.service.ownerId !== user.userId && resolved.service.status !== 'published'))
    throw new AppError('not_found', `Service "${body.service}" or its tool "${body.tool}" not found`);
  const scopes = body.scopes ? (new Set(body.scopes) as ReadonlySet<Scope>) : undefined;
  let principal: Principal;
  if (body.agent_id) {
    const agent = await getAgentForAccount(ctx, user.userId, body.agent_id);
    const as: AgentPrincipal = {
      kind: 'agent',
      agentId: agent.id,
      ownerId: user.userId,
      roles: user.roles,
      clientId: '',
      scope: body.scopes ?? ['tools:execute', 'memory:read', 'memory:write'],
      ...(scopes ? { scopes } : {}),
    };
    principal = as;
  } else {
    principal = { ...user, ...(scopes ? { scopes } : {}) };
  }
  const actor = { accountId: user.userId, agentId: body.agent_id ?? null };
  const pending = policySetOf(ctx, user.userId);
  const stored = pending instanceof Promise ? await pending : pending;
  let set: CompiledSet | null = stored;
  if (body.source) {
    const draft = compilePolicy('draft', body.source);
    set = { policies: [...(stored?.policies ?? []), draft], subsets: new Map() };
  }
  const { service, tool } = resolved;
  const args = body.arguments ?? {};
  const p = principalUid(principal);
  const t = toolUid(service.name, tool.name);
  const subset = set
    ? subsetFor(
        set,
        `${p.type}::${p.id}`,
        p.type,
        `Platform::Account::${user.userId}`,
        `${t.type}::${t.id}`,
        `Platform::Service::${service.name}`,
      )
    : null;
  const calls =
    body.calls ?? (subset?.readsCalls ? await callCounts(ctx, actor, tool.id) : { last_hour: 0, last_day: 0 });
  const facts: CallFacts = {
    principal,
    service: { id: service.id, name: service.name, ownerId: service.ownerId },
    tool: { id: tool.id, name: tool.name, method: tool.method, tags: tool.tags },
    arguments: args,
    now: body.at ? Date.parse(body.at) : Date.now(),
    calls,
  };
  const ev = subset
    ? evaluateSubset(subset, facts)
    : { decision: 'allow' as const, policyIds: [], errors: [], evaluated: 0 };
  const req = requestOf(facts);
  return {
    decision: ev.decision,
    policy_ids: ev.policyIds,
    errors: ev.errors,
    evaluated: ev.evaluated,
    principal: `${p.type}::"${p.id}"`,
    resource: `${t.type}::"${t.id}"`,
    context: {
      ...req.context,
      arguments: args,
      numbers: Object.fromEntries(
        Object.entries(args).filter(([, v]) => typeof v === 'number' && Number.isSafeInteger(v)),
      ),
    },
  };
}
