/**
 * The policy check of the execute path (`sessions/execute.ts`, after the arguments and the agent's
 * subscription, before the connection grant and the quota): one call per tool execution on every
 * face (REST, MCP meta and exposed tools, deployed agents' broker).
 *
 * Cost: an account bound by no enabled policy (its own or global) returns after one cache lookup;
 * otherwise only the policies whose scope can match this principal and tool are evaluated, and the
 * executions are counted only when one of them reads `context.calls` (engine.ts; ADRs 0971, 0995).
 */
import type { AppContext } from '../../context.js';
import type { Principal, SessionActor } from '../../http/auth.js';
import { AppError } from '../../http/errors.js';
import { requireApproval } from '../approvals/gate.js';
import type { ExecutableTool } from '../registry/executable.js';
import { type SQL, sql } from 'drizzle-orm';
import { prepareRaw, type PreparedRaw } from '../../db/prepared.js';
import { type CallFacts, principalUid, toolUid } from './cedar.js';
import { type Evaluation, evaluateSubset, policySetOf, subsetFor } from './engine.js';
import { recordDecision } from './decisions.js';

const NO_CALLS = { last_hour: 0, last_day: 0 };

/**
 * One window's count (`hours` long, ending now): the minute counters that start inside it, plus the
 * executions of the minute it starts in that fall inside it (at most one minute's, read exactly
 * through `executions_caller_tool_idx`). A counter row covers [minute, minute + 1 min), so a row
 * with `minute > now() - window` lies wholly inside the window and the minute before it wholly
 * outside but for its tail, which the second term counts.
 */
function windowCount(hours: 1 | 24): SQL {
  const start = sql.raw(`now() - interval '${hours} hours'`);
  const caller = (t: SQL) =>
    sql`${t}.tool_id = ${sql.placeholder('tool')} and ${t}.user_id = ${sql.placeholder('account')}
        and (${sql.placeholder('agent')}::text is null or ${t}.agent_id = ${sql.placeholder('agent')}::text)`;
  return sql`coalesce((select sum(c.calls) from tool_call_minutes c where ${caller(sql.raw('c'))} and c.minute > ${start}), 0)
    + (select count(*) from (select from executions e where ${caller(sql.raw('e'))}
         and e.created_at > ${start} and e.created_at < date_trunc('minute', ${start}) + interval '1 minute'
         order by e.created_at) as edge)`;
}

/** The statement of {@link callCounts}, prepared once per database handle (no per-call parse/plan). */
function countStatement(ctx: AppContext): PreparedRaw<{ last_hour: number; last_day: number }> {
  return prepareRaw(
    ctx.database.hotDb,
    'policy_call_counts',
    () => sql`select (${windowCount(1)})::int as last_hour, (${windowCount(24)})::int as last_day`,
  );
}

/**
 * This caller's executions of `toolId` in the last hour and day: an agent's own calls, or the
 * account's calls (its agents' included) for a user. Sums the per-minute counters the execution
 * recorder keeps (`tool_call_minutes`, ADR 0997) and counts exactly the window's first, partial
 * minute, so the cost is bounded by the minutes with calls, not by the number of calls (a
 * prepared statement). Executions are logged write-behind, so a call finished a few milliseconds
 * ago may not be counted yet.
 */
export async function callCounts(
  ctx: AppContext,
  actor: SessionActor,
  toolId: string,
): Promise<{ last_hour: number; last_day: number }> {
  const [row] = await countStatement(ctx).run({ tool: toolId, account: actor.accountId, agent: actor.agentId });
  return { last_hour: Number(row?.last_hour ?? 0), last_day: Number(row?.last_day ?? 0) };
}

/**
 * Evaluate the policies that bind `principal` on calling `resolved` with `args`; null when no
 * policy can apply (nothing was evaluated). `calls` overrides the execution counts (dry runs).
 */
export async function evaluateCall(
  ctx: AppContext,
  principal: Principal,
  actor: SessionActor,
  resolved: Pick<ExecutableTool, 'service' | 'tool'>,
  args: Record<string, unknown>,
  opts: { now?: number; calls?: { last_hour: number; last_day: number } } = {},
): Promise<Evaluation | null> {
  const pending = policySetOf(ctx, actor.accountId);
  const set = pending instanceof Promise ? await pending : pending;
  if (!set) return null;
  const { service, tool } = resolved;
  const p = principalUid(principal);
  const t = toolUid(service.name, tool.name);
  const subset = subsetFor(
    set,
    `${p.type}::${p.id}`,
    p.type,
    `Platform::Account::${actor.accountId}`,
    `${t.type}::${t.id}`,
    `Platform::Service::${service.name}`,
  );
  if (subset.policies.length === 0) return null;
  const calls = opts.calls ?? (subset.readsCalls ? await callCounts(ctx, actor, tool.id) : NO_CALLS);
  const facts: CallFacts = {
    principal,
    service: { id: service.id, name: service.name, ownerId: service.ownerId },
    tool: { id: tool.id, name: tool.name, method: tool.method, tags: tool.tags },
    arguments: args,
    now: opts.now ?? Date.now(),
    calls,
  };
  return evaluateSubset(subset, facts);
}

/**
 * THE governance hook of `executeTool`: admit the call, hold it for approval, or refuse it.
 * Logs every decision of a non-empty policy set (`policy_decisions`, batched).
 * @throws AppError policy_denied (403, `policy_ids`), and from the approvals gate
 *         approval_required (202) / approval_denied / approval_invalid / not_found
 */
export async function authorizeToolCall(
  ctx: AppContext,
  principal: Principal,
  actor: SessionActor,
  resolved: Pick<ExecutableTool, 'service' | 'tool'>,
  args: Record<string, unknown>,
  approvalId: string | undefined,
): Promise<void> {
  const ev = await evaluateCall(ctx, principal, actor, resolved, args);
  if (!ev) return;
  const { service, tool } = resolved;
  const p = principalUid(principal);
  recordDecision(ctx, {
    accountId: actor.accountId,
    principal: `${p.type}::"${p.id}"`,
    agentId: actor.agentId,
    serviceId: service.id,
    toolId: tool.id,
    tool: `${service.name}/${tool.name}`,
    decision: ev.decision,
    policyIds: ev.policyIds,
    errors: ev.errors,
  });
  if (ev.decision === 'allow') return;
  if (ev.decision === 'deny')
    throw new AppError(
      'policy_denied',
      `${service.name}/${tool.name} is forbidden by ${ev.policyIds.length === 1 ? 'policy' : 'policies'} ${ev.policyIds.join(', ')}`,
      { extra: { policy_ids: ev.policyIds } },
    );
  await requireApproval(
    ctx,
    actor,
    {
      serviceId: service.id,
      serviceName: service.name,
      toolId: tool.id,
      toolName: tool.name,
      arguments: args,
      policyIds: ev.policyIds,
      requestedByKey: principal.kind === 'user' ? (principal.keyId ?? null) : null,
    },
    approvalId,
  );
}
