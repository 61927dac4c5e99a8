/**
 * Invocations of deployed agents: run the active version in the sandbox (a warm environment of
 * that version when one is free), synchronously or as a `deployments.invoke` job, and record each
 * with its logs.
 */
import { and, desc, eq, lt } from 'drizzle-orm';
import type { Static } from 'typebox';
import type { Role } from '../../config.js';
import type { AppContext } from '../../context.js';
import { agentInvocations, deployments } from '../../db/schema/index.js';
import type { Principal, Scope } from '../../http/auth.js';
import { AppError, notFound } from '../../http/errors.js';
import { newId } from '../../http/ids.js';
import { decodeCursor, toPage, type Page } from '../../http/pagination.js';
import type { LogEntry, SandboxResult } from '../../sandbox/runner.js';
import { agentScopeSet } from '../agents/tokens.js';
import { brokerFor, type CallRecord } from './broker.js';
import { publishEnd, publishLog, type FollowedLine } from './follow.js';
import { deferredRecord, settledRecords, storedRecord, type InvocationRecord } from './record.js';
import { logsAsSpanEvents } from '../../telemetry/agent.js';
import { countSandboxStart, traceAgentRun } from '../../telemetry/spans.js';
import { traceCarrier } from '../../telemetry/trace.js';
import {
  activeDeployment,
  ensureUnpacked,
  envOf,
  INVOKE_JOB,
  sandboxOf,
  warmKey,
  type DeploymentRow,
} from './runtime.js';
import type { InvocationSummary, InvocationView, InvokeBody } from './schemas.js';
import { agentInScope, invalidState, principalId } from './service.js';
import { invocationFinished, invocationSummary, invocationView, summaryColumns, type InvocationRow } from './views.js';

/** Input of {@link invokeAgent}: the body of `POST /v2/agents/:id/invoke` (`InvokeBody`). */
export type InvokeInput = Static<typeof InvokeBody>;

/**
 * Invoke the active version. Synchronous: runs now and returns the finished record. Async:
 * records a `queued` invocation, enqueues `deployments.invoke` and returns it at once.
 * `opts.trigger`: what started it, stored on the record (default `api`).
 * @throws AppError not_found; invalid_state (agent disabled, nothing active: never deployed,
 *   stopped, or still preparing); validation_failed (timeout_ms above SANDBOX_MAX_TIMEOUT_MS)
 */
export async function invokeAgent(
  ctx: AppContext,
  p: Principal,
  agentId: string,
  body: InvokeInput,
  opts: { trigger?: 'api' | 'schedule' | 'trigger' | 'a2a' } = {},
): Promise<InvocationView> {
  // The scope check and the active version are read concurrently (one round trip of latency); the
  // scope error still comes first, so nothing about another account's agent is revealed.
  const [scoped, active] = await Promise.allSettled([
    agentInScope(ctx, p, agentId, { cached: true }),
    activeDeployment(ctx, agentId),
  ]);
  if (scoped.status === 'rejected') throw scoped.reason;
  if (active.status === 'rejected') throw active.reason;
  const agent = scoped.value;
  if (agent.status !== 'active') throw invalidState(`Agent is ${agent.status}`);
  const max = ctx.config.sandbox.maxTimeoutMs;
  if (body.timeout_ms !== undefined && body.timeout_ms > max) {
    throw new AppError('validation_failed', `timeout_ms must be at most ${max}`, {
      errors: [{ in: 'body', pointer: '/timeout_ms', message: `must be <= ${max}` }],
    });
  }
  const timeoutMs = body.timeout_ms ?? Math.min(ctx.config.sandbox.timeoutMs, max);
  const d = active.value;
  if (!d) {
    const [latest] = await ctx.db
      .select()
      .from(deployments)
      .where(eq(deployments.agentId, agentId))
      .orderBy(desc(deployments.updatedAt), desc(deployments.version))
      .limit(1);
    if (!latest) throw invalidState('The agent has no deployment; deploy code first');
    if (latest.status === 'stopped')
      throw invalidState(
        `The deployment (version ${latest.version}) is stopped; redeploy, roll back or deploy to invoke`,
      );
    if (latest.status === 'preparing')
      throw invalidState(`Version ${latest.version} is still preparing; retry shortly`);
    throw invalidState(`No active deployment (last changed: version ${latest.version}, ${latest.status})`);
  }
  const async = body.async === true;
  const sandbox = sandboxOf(ctx);
  if (!async && sandbox.load.waiting >= ctx.config.sandbox.concurrency * 4) {
    throw new AppError(
      'service_unavailable',
      'All sandboxes of this instance are busy; retry shortly or invoke with async=true',
      { headers: { 'retry-after': '1' } },
    );
  }
  const now = new Date();
  const values = {
    id: newId('inv'),
    agentId,
    ownerId: agent.ownerId,
    deploymentId: d.id,
    version: d.version,
    status: async ? 'queued' : 'running',
    async,
    input: body.input ?? null,
    timeoutMs,
    createdBy: principalId(p),
    trigger: opts.trigger ?? 'api',
    invokerScope: p.scopes ? [...p.scopes].join(' ') : null,
    createdAt: now,
    startedAt: async ? null : now,
  } satisfies typeof agentInvocations.$inferInsert;
  if (async) {
    const [row] = await ctx.db.insert(agentInvocations).values(values).returning();
    await ctx.jobs.enqueue(INVOKE_JOB, { invocationId: row.id });
    return invocationView(row);
  }
  // The owner's roles travel with the invoking credential (the owner's, or the agent's own token).
  return invocationView(await execute(ctx, deferredRecord(ctx, values), d, p.roles, p.scopes));
}

/**
 * Run a claimed (`running`) invocation against deployment `d` and store the outcome. `ownerRoles`
 * and `invokerScopes`: see `brokerFor`; a queued invocation's scopes come from its stored
 * `invoker_scope`, so deployed code never holds more than the credential that started it.
 */
function execute(
  ctx: AppContext,
  record: InvocationRecord,
  d: DeploymentRow,
  ownerRoles?: Role[],
  invokerScopes?: ReadonlySet<Scope>,
): Promise<InvocationRow> {
  // The `invoke_agent {agent}` span (OpenTelemetry GenAI conventions; docs/observability.md) around the run.
  const { id: invocationId, agentId, ownerId: accountId } = record.row;
  const agent = { accountId, agentId, agentName: agentId, invocationId };
  return traceAgentRun(agent, () => runInvocation(ctx, record, d, ownerRoles, invokerScopes));
}

async function runInvocation(
  ctx: AppContext,
  record: InvocationRecord,
  d: DeploymentRow,
  ownerRoles?: Role[],
  invokerScopes?: ReadonlySet<Scope>,
): Promise<InvocationRow> {
  const row = record.row;
  let r: SandboxResult;
  const calls: CallRecord[] = [];
  try {
    const root = await ensureUnpacked(ctx, d.artifactSha256);
    // The broker's identity expires with the invocation (plus the start-up of a cold environment, bounded by the same timer).
    const scopes =
      invokerScopes ?? (row.invokerScope === null ? undefined : agentScopeSet(row.invokerScope.split(' ')));
    const broker = brokerFor(ctx, row, Date.now() + row.timeoutMs, calls, ownerRoles, scopes);
    r = await sandboxOf(ctx).run({
      mode: 'invoke',
      root,
      entrypoint: d.entrypoint,
      input: row.input,
      context: {
        invocationId: row.id,
        agentId: row.agentId,
        deploymentId: d.id,
        version: d.version,
        ...traceCarrier(),
      },
      timeoutMs: row.timeoutMs,
      env: envOf(ctx, d),
      key: warmKey(d),
      egress: d.egress,
      broker,
      onLog: logsAsSpanEvents((entry) => publishLog(row, entry)),
    });
  } catch (err) {
    ctx.log.error({ err, invocation_id: row.id }, 'sandbox failed to run');
    r = {
      status: 'failed',
      output: null,
      error: { code: 'sandbox_error', message: 'the sandbox could not run this invocation' },
      logs: [],
      logsTruncated: false,
      durationMs: 0,
      cold: false,
      cpuMs: null,
    };
  }
  countSandboxStart(r.cold ? 'cold' : 'warm');
  const done = await record.finish({
    status: r.status,
    output: r.output ?? null,
    error: r.error ? { ...r.error } : null,
    logs: r.logs,
    logsTruncated: r.logsTruncated,
    calls,
    cold: r.cold,
    durationMs: r.durationMs,
    cpuMs: r.cpuMs,
    finishedAt: new Date(),
  });
  publishEnd(done);
  ctx.events.emit('invocation.finished', invocationFinished(done));
  ctx.log.info(
    {
      invocation_id: row.id,
      agent_id: row.agentId,
      version: d.version,
      status: r.status,
      duration_ms: r.durationMs,
      cpu_ms: r.cpuMs,
      cold: r.cold,
      calls: calls.length,
    },
    'agent invoked',
  );
  return done;
}

/** Job `deployments.invoke`: claim a queued invocation and run it (at-least-once safe: only `queued` rows are claimed). */
export async function runQueuedInvocation(ctx: AppContext, invocationId: string): Promise<void> {
  const [row] = await ctx.db
    .update(agentInvocations)
    .set({ status: 'running', startedAt: new Date() })
    .where(and(eq(agentInvocations.id, invocationId), eq(agentInvocations.status, 'queued')))
    .returning();
  if (!row) return;
  const [d] = await ctx.db.select().from(deployments).where(eq(deployments.id, row.deploymentId));
  if (!d || d.status === 'stopped') {
    await ctx.db
      .update(agentInvocations)
      .set({
        status: 'failed',
        error: { code: 'deployment_stopped', message: 'the deployment was stopped before the queued invocation ran' },
        durationMs: 0,
        finishedAt: new Date(),
      })
      .where(eq(agentInvocations.id, row.id));
    return;
  }
  await execute(ctx, storedRecord(ctx, row), d);
}

/** Invocations of the agent, newest first (no input/output/logs). @throws AppError not_found */
export async function listInvocations(
  ctx: AppContext,
  p: Principal,
  agentId: string,
  q: { limit?: number; cursor?: string },
): Promise<Page<InvocationSummary>> {
  await agentInScope(ctx, p, agentId);
  await settledRecords(ctx, agentId);
  const limit = q.limit ?? 20;
  const after = decodeCursor(q.cursor);
  const rows = await ctx.db
    .select(summaryColumns)
    .from(agentInvocations)
    .where(and(eq(agentInvocations.agentId, agentId), after ? lt(agentInvocations.id, after) : undefined))
    .orderBy(desc(agentInvocations.id))
    .limit(limit + 1);
  return toPage(rows, limit, invocationSummary);
}

/** One invocation with input, output and logs. @throws AppError not_found */
export async function getInvocation(
  ctx: AppContext,
  p: Principal,
  agentId: string,
  invocationId: string,
): Promise<InvocationView> {
  await agentInScope(ctx, p, agentId);
  await settledRecords(ctx, agentId, invocationId);
  const [row] = await ctx.db
    .select()
    .from(agentInvocations)
    .where(and(eq(agentInvocations.id, invocationId), eq(agentInvocations.agentId, agentId)));
  if (!row) throw notFound('Execution');
  return invocationView(row);
}

/** Lines of the agent's 20 most recent invocations, oldest first. @throws AppError not_found */
export async function recentLogs(
  ctx: AppContext,
  p: Principal,
  agentId: string,
): Promise<{ data: FollowedLine[]; logs_truncated: boolean }> {
  await agentInScope(ctx, p, agentId);
  await settledRecords(ctx, agentId);
  const rows = await ctx.db
    .select({ id: agentInvocations.id, logs: agentInvocations.logs, logsTruncated: agentInvocations.logsTruncated })
    .from(agentInvocations)
    .where(eq(agentInvocations.agentId, agentId))
    .orderBy(desc(agentInvocations.id))
    .limit(20);
  const data = rows.reverse().flatMap((r) => (r.logs as LogEntry[]).map((l) => ({ ...l, invocation_id: r.id })));
  return { data, logs_truncated: rows.some((r) => r.logsTruncated) };
}
