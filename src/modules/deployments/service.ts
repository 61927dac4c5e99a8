/**
 * Deployment and invocation of agent code (spec group "Deployment (v2)", DESIGN.md §7).
 *
 * Versions follow AWS Lambda: every deploy publishes an immutable version N+1 of the agent's code;
 * exactly one version is `active` (Lambda's "live" alias) and receives invocations. Status flow:
 *   deploy → `preparing` → (prepare job: unpack, entrypoint check, smoke load in the sandbox)
 *          → `active` (the previous active becomes `superseded`) | `failed`
 *   rollback: active → `rolled_back`, the previous good version → `active` (an alias flip, no new record)
 *   stop:     active → `stopped` (invocations answer 409 until a deploy, redeploy or rollback)
 *   redeploy: the current version → `preparing` → `active` | `failed` (same record, same version)
 * All transitions of one agent are serialised by a transaction-scoped advisory lock.
 *
 * Invocations run the active version in the sandbox (`src/sandbox/`), synchronously (the HTTP
 * request waits) or as a `deployments.invoke` job. Every invocation is recorded with its logs.
 */
import fs from 'node:fs';
import path from 'node:path';
import { and, desc, eq, lt, sql } from 'drizzle-orm';
import type { Static } from 'typebox';
import type { AppContext } from '../../context.js';
import type { Tx } from '../../db/client.js';
import { deploymentArtifacts, deployments } from '../../db/schema/index.js';
import { accountOf, type Principal } from '../../http/auth.js';
import { AppError, notFound } from '../../http/errors.js';
import { newId } from '../../http/ids.js';
import { decodeCursor, toPage, type Page } from '../../http/pagination.js';
import { encryptSecret } from '../../lib/secrets.js';
import { getAgentForAccount, getLiveAgentForAccount } from '../agents/service.js';
import { ArtifactError, inspectArtifact, resolveEntrypoint } from '../../sandbox/artifact.js';
import { parseEnv, resolveEgress } from './env.js';
import {
  drainAgent,
  ensureUnpacked,
  envOf,
  limitsOf,
  PREPARE_JOB,
  sandboxOf,
  STALE_MARGIN_MS,
  type DeploymentRow,
} from './runtime.js';
import type { DeployForm, DeploymentView } from './schemas.js';
import { deploymentView } from './views.js';

export type { DeploymentStatus, InvocationStatus } from './views.js';

/**
 * Input of {@link createDeployment}, parsed from the multipart form by the route: the text fields of
 * `DeployForm` as sent (`env` a raw JSON object of string values; `egress` a raw JSON array of
 * allow-list patterns, or comma-separated, overriding `agent.json`) and the artifact's bytes (the
 * schema documents that part as a binary string; the handler buffers it, hence narrower than the schema).
 */
export type DeployInput = Omit<Static<typeof DeployForm>, 'artifact'> & { artifact: Buffer };

// ---------------------------------------------------------------------------------------------
// Access.

/**
 * The agent `agentId` as seen by `p`: its owner (user token or API key), or the agent itself with
 * its own agent token. Anything else — another account, a sibling agent — is "not found".
 * `cached`: read through the agents' liveness cache (invoke's hot path; state changes of the agent
 * evict it on every instance) instead of the database.
 * @throws AppError not_found
 */
export async function agentInScope(
  ctx: AppContext,
  p: Principal,
  agentId: string,
  opts: { cached?: boolean } = {},
): Promise<{ id: string; ownerId: string; status: string }> {
  if (p.kind === 'agent' && p.agentId !== agentId) throw notFound('Agent');
  return (opts.cached ? getLiveAgentForAccount : getAgentForAccount)(ctx, accountOf(p), agentId);
}

export function principalId(p: Principal): string {
  return p.kind === 'user' ? p.userId : p.agentId;
}

/** Serialise deployment state changes of one agent (transaction-scoped advisory lock). */
async function lockAgent(tx: Tx, agentId: string): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(1684369457, hashtext(${agentId}))`);
}

async function activeOf(tx: Tx, agentId: string): Promise<DeploymentRow | undefined> {
  const [d] = await tx
    .select()
    .from(deployments)
    .where(and(eq(deployments.agentId, agentId), eq(deployments.status, 'active')));
  return d;
}

export function invalidState(detail: string): AppError {
  return new AppError('invalid_state', detail);
}

/**
 * Validate an uploaded artifact and create version N+1 in status `preparing`; the prepare job
 * activates it. The artifact is stored once per sha256.
 * @throws AppError not_found (agent not in scope), invalid_state (agent disabled),
 *   invalid_artifact (archive rejected: see `src/sandbox/artifact.ts`), validation_failed (env, entrypoint)
 */
export async function createDeployment(
  ctx: AppContext,
  p: Principal,
  agentId: string,
  input: DeployInput,
): Promise<DeploymentView> {
  const agent = await agentInScope(ctx, p, agentId);
  if (agent.status !== 'active') throw invalidState(`Agent is ${agent.status}; enable it before deploying`);
  const env = parseEnv(input.env);
  let inspected;
  let entrypoint: string;
  try {
    inspected = await inspectArtifact(input.artifact, limitsOf(ctx));
    entrypoint = resolveEntrypoint(inspected, input.entrypoint);
  } catch (err) {
    if (err instanceof ArtifactError) throw new AppError('invalid_artifact', err.message);
    throw err;
  }
  const egress = resolveEgress(input.egress, inspected.agentJson);
  await ctx.db
    .insert(deploymentArtifacts)
    .values({ sha256: inspected.sha256, sizeBytes: inspected.sizeBytes, data: input.artifact })
    .onConflictDoNothing({ target: deploymentArtifacts.sha256 });
  const row = await ctx.db.transaction(async (tx) => {
    await lockAgent(tx, agentId);
    const [{ max }] = await tx
      .select({ max: sql<number | null>`max(${deployments.version})` })
      .from(deployments)
      .where(eq(deployments.agentId, agentId));
    const [d] = await tx
      .insert(deployments)
      .values({
        id: newId('dep'),
        agentId,
        ownerId: agent.ownerId,
        version: Number(max ?? 0) + 1,
        status: 'preparing',
        artifactSha256: inspected.sha256,
        artifactSize: inspected.sizeBytes,
        fileCount: inspected.entries,
        unpackedBytes: inspected.unpackedBytes,
        entrypoint,
        description: input.description ?? null,
        envEncrypted: env ? encryptSecret(ctx, JSON.stringify(env)) : null,
        envKeys: env ? Object.keys(env).sort() : [],
        egress,
        createdBy: principalId(p),
      })
      .returning();
    return d;
  });
  await ctx.jobs.enqueue(PREPARE_JOB, { deploymentId: row.id, activate: 'if_newest' });
  ctx.log.info(
    { agent_id: agentId, deployment_id: row.id, version: row.version, sha256: inspected.sha256 },
    'deployment created',
  );
  return deploymentView(row);
}

/**
 * The prepare step (job `deployments.prepare`): unpack, check the entrypoint, smoke-load it in the
 * sandbox (module top level runs, a handler export must exist), then activate. `if_newest` (a new
 * deploy) activates unless a newer version became active meanwhile; `always` (redeploy) activates.
 * Idempotent: does nothing unless the deployment is still `preparing`.
 */
export async function prepareDeployment(
  ctx: AppContext,
  deploymentId: string,
  activate: 'always' | 'if_newest' = 'if_newest',
): Promise<void> {
  const [d] = await ctx.db.select().from(deployments).where(eq(deployments.id, deploymentId));
  if (!d || d.status !== 'preparing') return;
  let failure: string | null = null;
  try {
    const root = await ensureUnpacked(ctx, d.artifactSha256);
    const file = path.join(root, d.entrypoint);
    if (!fs.existsSync(file) || !fs.statSync(file).isFile()) {
      failure = `entrypoint ${d.entrypoint} is not a file of the artifact`;
    } else {
      const r = await sandboxOf(ctx).run({
        mode: 'load',
        root,
        entrypoint: d.entrypoint,
        timeoutMs: ctx.config.sandbox.prepareTimeoutMs,
        env: envOf(ctx, d),
        egress: d.egress,
        context: { agentId: d.agentId, deploymentId: d.id, version: d.version },
      });
      if (r.status === 'timed_out')
        failure = `smoke load did not finish within ${ctx.config.sandbox.prepareTimeoutMs} ms`;
      else if (r.status !== 'succeeded') failure = `smoke load failed (${r.error?.code}): ${r.error?.message}`;
    }
  } catch (err) {
    if (err instanceof ArtifactError || err instanceof AppError) failure = err.message;
    else {
      ctx.log.error({ err, deployment_id: d.id }, 'prepare failed unexpectedly');
      failure = 'internal error while preparing; try redeploy';
    }
  }
  const settled = await ctx.db.transaction(async (tx): Promise<'active' | 'failed' | null> => {
    await lockAgent(tx, d.agentId);
    const [cur] = await tx.select().from(deployments).where(eq(deployments.id, d.id));
    if (!cur || cur.status !== 'preparing') return null;
    const now = new Date();
    if (failure) {
      await tx
        .update(deployments)
        .set({ status: 'failed', failureReason: failure.slice(0, 2000), updatedAt: now })
        .where(eq(deployments.id, d.id));
      return 'failed';
    }
    const active = await activeOf(tx, d.agentId);
    if (activate === 'if_newest' && active && active.version > d.version) {
      await tx
        .update(deployments)
        .set({ status: 'superseded', failureReason: null, preparedAt: now, updatedAt: now })
        .where(eq(deployments.id, d.id));
      return null;
    }
    if (active)
      await tx.update(deployments).set({ status: 'superseded', updatedAt: now }).where(eq(deployments.id, active.id));
    await tx
      .update(deployments)
      .set({ status: 'active', failureReason: null, preparedAt: now, activatedAt: now, updatedAt: now })
      .where(eq(deployments.id, d.id));
    return 'active';
  });
  if (!failure) drainAgent(ctx, d.agentId);
  if (settled) {
    const { id: deploymentId, agentId, ownerId: accountId, version } = d;
    ctx.events.emit('deployment.settled', {
      deploymentId,
      agentId,
      accountId,
      version,
      status: settled,
      reason: failure,
    });
  }
  ctx.log.info(
    { deployment_id: d.id, agent_id: d.agentId, version: d.version, ok: !failure, reason: failure ?? undefined },
    'deployment prepared',
  );
}

// ---------------------------------------------------------------------------------------------
// History and lifecycle actions.

/** After a committed state change, retire this host's warm environments of the agent (other hosts: see `warmKey`). */
async function drained<T>(ctx: AppContext, agentId: string, change: Promise<T>): Promise<T> {
  const out = await change;
  drainAgent(ctx, agentId);
  return out;
}

/** Deployments of the agent, newest first. @throws AppError not_found */
export async function listDeployments(
  ctx: AppContext,
  p: Principal,
  agentId: string,
  q: { limit?: number; cursor?: string },
): Promise<Page<DeploymentView>> {
  await agentInScope(ctx, p, agentId);
  const limit = q.limit ?? 20;
  const after = decodeCursor(q.cursor);
  const rows = await ctx.db
    .select()
    .from(deployments)
    .where(and(eq(deployments.agentId, agentId), after ? lt(deployments.id, after) : undefined))
    .orderBy(desc(deployments.id))
    .limit(limit + 1);
  return toPage(rows, limit, deploymentView);
}

/**
 * Roll back (Lambda: point the alias at an earlier version): the active version becomes
 * `rolled_back` and `version` — default: the newest earlier version that was active before
 * (`superseded`) — becomes `active` again. Returns the now-active deployment.
 * @throws AppError not_found; invalid_state when nothing is active, no earlier good version exists,
 *   or the requested version was never prepared successfully / is the active one.
 */
export async function rollbackDeployment(
  ctx: AppContext,
  p: Principal,
  agentId: string,
  input: { version?: number },
): Promise<DeploymentView> {
  await agentInScope(ctx, p, agentId);
  return drained(
    ctx,
    agentId,
    ctx.db.transaction(async (tx) => {
      await lockAgent(tx, agentId);
      const active = await activeOf(tx, agentId);
      if (!active) throw invalidState('No active deployment to roll back');
      let target: DeploymentRow | undefined;
      if (input.version !== undefined) {
        [target] = await tx
          .select()
          .from(deployments)
          .where(and(eq(deployments.agentId, agentId), eq(deployments.version, input.version)));
        if (!target) throw notFound(`Version ${input.version}`);
        if (target.id === active.id) throw invalidState(`Version ${input.version} is already active`);
        if (!target.preparedAt || !['superseded', 'rolled_back', 'stopped'].includes(target.status)) {
          throw invalidState(`Version ${input.version} is ${target.status} and cannot be made active by a rollback`);
        }
      } else {
        [target] = await tx
          .select()
          .from(deployments)
          .where(
            and(
              eq(deployments.agentId, agentId),
              eq(deployments.status, 'superseded'),
              lt(deployments.version, active.version),
              sql`${deployments.preparedAt} is not null`,
            ),
          )
          .orderBy(desc(deployments.version))
          .limit(1);
        if (!target) throw invalidState(`No earlier good version to roll back to from version ${active.version}`);
      }
      const now = new Date();
      await tx.update(deployments).set({ status: 'rolled_back', updatedAt: now }).where(eq(deployments.id, active.id));
      const [row] = await tx
        .update(deployments)
        .set({ status: 'active', activatedAt: now, updatedAt: now })
        .where(eq(deployments.id, target.id))
        .returning();
      ctx.log.info({ agent_id: agentId, from: active.version, to: row.version }, 'deployment rolled back');
      return deploymentView(row);
    }),
  );
}

/** Stop the active deployment (→ `stopped`; invocations then answer 409). @throws AppError not_found, invalid_state */
export async function stopDeployment(ctx: AppContext, p: Principal, agentId: string): Promise<DeploymentView> {
  await agentInScope(ctx, p, agentId);
  return drained(
    ctx,
    agentId,
    ctx.db.transaction(async (tx) => {
      await lockAgent(tx, agentId);
      const active = await activeOf(tx, agentId);
      if (!active) throw invalidState('No active deployment to stop');
      const [row] = await tx
        .update(deployments)
        .set({ status: 'stopped', updatedAt: new Date() })
        .where(eq(deployments.id, active.id))
        .returning();
      return deploymentView(row);
    }),
  );
}

/**
 * Re-run the prepare step on a version (→ `preparing`; the job makes it `active` or `failed`).
 * Default target, "the current version": the active one; when none is active, the newest version
 * that is `stopped` or `failed`. Any version except one already `preparing` may be named.
 * @throws AppError not_found, invalid_state
 */
export async function redeployDeployment(
  ctx: AppContext,
  p: Principal,
  agentId: string,
  input: { version?: number },
): Promise<DeploymentView> {
  const agent = await agentInScope(ctx, p, agentId);
  if (agent.status !== 'active') throw invalidState(`Agent is ${agent.status}; enable it before redeploying`);
  const row = await ctx.db.transaction(async (tx) => {
    await lockAgent(tx, agentId);
    let target: DeploymentRow | undefined;
    if (input.version !== undefined) {
      [target] = await tx
        .select()
        .from(deployments)
        .where(and(eq(deployments.agentId, agentId), eq(deployments.version, input.version)));
      if (!target) throw notFound(`Version ${input.version}`);
    } else {
      target = await activeOf(tx, agentId);
      if (!target) {
        [target] = await tx
          .select()
          .from(deployments)
          .where(
            and(eq(deployments.agentId, agentId), sql`${deployments.status} in ('stopped', 'failed', 'preparing')`),
          )
          .orderBy(desc(deployments.version))
          .limit(1);
      }
      if (!target) throw invalidState('Nothing to redeploy: the agent has no active, stopped or failed deployment');
    }
    // A prepare older than its timeout plus a margin was lost (its host died): it may be retried.
    const stale = target.updatedAt.getTime() < Date.now() - ctx.config.sandbox.prepareTimeoutMs - STALE_MARGIN_MS;
    if (target.status === 'preparing' && !stale) throw invalidState(`Version ${target.version} is already preparing`);
    const [r] = await tx
      .update(deployments)
      .set({ status: 'preparing', failureReason: null, updatedAt: new Date() })
      .where(eq(deployments.id, target.id))
      .returning();
    return r;
  });
  drainAgent(ctx, agentId);
  await ctx.jobs.enqueue(PREPARE_JOB, { deploymentId: row.id, activate: 'always' });
  return deploymentView(row);
}

// ---------------------------------------------------------------------------------------------
// Invocations.
