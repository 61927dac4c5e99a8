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
import { and, desc, eq, getTableColumns, lt, sql } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import type { Tx } from '../../db/client.js';
import { agentInvocations, deploymentArtifacts, deployments } from '../../db/schema/index.js';
import { accountOf, type Principal } from '../../http/auth.js';
import { AppError, notFound } from '../../http/errors.js';
import { newId } from '../../http/ids.js';
import { decodeCursor, toPage, type Page } from '../../http/pagination.js';
import { decryptSecret, encryptSecret } from '../../lib/secrets.js';
import { getAgentForAccount } from '../agents/service.js';
import { ArtifactError, inspectArtifact, resolveEntrypoint, unpackArtifact, type ArtifactLimits } from '../../sandbox/artifact.js';
import { Sandbox, type SandboxError, type SandboxResult } from '../../sandbox/runner.js';
import type { DeploymentView, InvocationSummary, InvocationView } from './schemas.js';

type DeploymentRow = typeof deployments.$inferSelect;
type InvocationRow = typeof agentInvocations.$inferSelect;

/** Columns of an invocation without its (possibly large) input, output and logs. */
const { input: _input, output: _output, logs: _logs, logsTruncated: _lt, ...summaryColumns } = getTableColumns(agentInvocations);

export type DeploymentStatus = DeploymentView['status'];
export type InvocationStatus = InvocationView['status'];

/** Job names of this module. */
export const PREPARE_JOB = 'deployments.prepare';
export const INVOKE_JOB = 'deployments.invoke';

/** Input of {@link createDeployment}, parsed from the multipart form by the route. */
export interface DeployInput {
  artifact: Buffer;
  entrypoint?: string;
  /** Raw `env` field: a JSON object of string values. */
  env?: string;
  description?: string;
}

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

function deploymentView(d: DeploymentRow): DeploymentView {
  return {
    id: d.id,
    agent_id: d.agentId,
    version: d.version,
    status: d.status as DeploymentStatus,
    entrypoint: d.entrypoint,
    description: d.description,
    artifact: { sha256: d.artifactSha256, size_bytes: d.artifactSize, files: d.fileCount, unpacked_bytes: d.unpackedBytes },
    env_keys: d.envKeys,
    failure_reason: d.failureReason,
    created_by: d.createdBy,
    created_at: d.createdAt.toISOString(),
    updated_at: d.updatedAt.toISOString(),
    prepared_at: iso(d.preparedAt),
    activated_at: iso(d.activatedAt),
  };
}

function invocationSummary(r: Omit<InvocationRow, 'input' | 'output' | 'logs' | 'logsTruncated'>): InvocationSummary {
  return {
    id: r.id,
    agent_id: r.agentId,
    deployment_id: r.deploymentId,
    version: r.version,
    status: r.status as InvocationStatus,
    async: r.async,
    error: (r.error as SandboxError | null) ?? null,
    timeout_ms: r.timeoutMs,
    duration_ms: r.durationMs,
    created_at: r.createdAt.toISOString(),
    started_at: iso(r.startedAt),
    finished_at: iso(r.finishedAt),
  };
}

function invocationView(r: InvocationRow): InvocationView {
  return { ...invocationSummary(r), input: r.input ?? null, output: r.output ?? null, logs: r.logs as InvocationView['logs'], logs_truncated: r.logsTruncated };
}

// ---------------------------------------------------------------------------------------------
// Runtime state (one sandbox per app) and job registration.

const sandboxes = new WeakMap<AppContext, Sandbox>();
const unpacking = new Map<string, Promise<string>>();

/** The app's sandbox (created on first use; probes network isolation once). */
export function sandboxOf(ctx: AppContext): Sandbox {
  let s = sandboxes.get(ctx);
  if (!s) {
    const c = ctx.config.sandbox;
    fs.mkdirSync(c.dir, { recursive: true, mode: 0o755 });
    s = new Sandbox({ memoryMb: c.memoryMb, maxLogBytes: c.maxLogBytes, maxOutputBytes: c.maxOutputBytes, concurrency: c.concurrency, network: c.network, user: c.user, readableDir: fs.realpathSync(c.dir) });
    if (!s.networkIsolated) ctx.log.warn('sandbox: network isolation unavailable (unshare --net failed or SANDBOX_NETWORK=allowed): deployed code has network access');
    if (s.runAsNote) ctx.log.warn(`sandbox: ${s.runAsNote}`);
    ctx.log.info({ network_isolated: s.networkIsolated, run_as: s.runAs }, 'sandbox ready');
    const sandbox = s;
    ctx.onClose.push(() => sandbox.killAll());
    sandboxes.set(ctx, s);
  }
  return s;
}

function limitsOf(ctx: AppContext): ArtifactLimits {
  return { maxUnpackedBytes: ctx.config.deploy.maxUnpackedBytes, maxFiles: ctx.config.deploy.maxFiles };
}

/** Margin after a run's own deadline before it is considered interrupted (its process died with its host). */
const STALE_MARGIN_MS = 60_000;

/**
 * Register this module's job handlers on `ctx.jobs` (call once per app, API and worker processes
 * alike) and recover work interrupted by a restart (in the background; failures are logged).
 */
export function registerDeploymentJobs(ctx: AppContext): void {
  ctx.jobs.register<{ deploymentId: string; activate: 'always' | 'if_newest' }>(PREPARE_JOB, (p) => prepareDeployment(ctx, p.deploymentId, p.activate));
  ctx.jobs.register<{ invocationId: string }>(INVOKE_JOB, (p) => runQueuedInvocation(ctx, p.invocationId));
  if (ctx.config.processRole !== 'api') {
    recoverInterrupted(ctx).catch((err) => ctx.log.error({ err }, 'deployments: recovery of interrupted work failed'));
  }
}

/**
 * After a restart: invocations `running` well past their deadline become `failed`
 * (`interrupted`). With the in-process queue (a single instance, whose queue died with it),
 * stale `queued` invocations and `preparing` deployments are enqueued again; BullMQ keeps its
 * jobs, so there only the `running` sweep applies.
 */
export async function recoverInterrupted(ctx: AppContext): Promise<void> {
  const now = Date.now();
  const interrupted = await ctx.db
    .update(agentInvocations)
    .set({ status: 'failed', error: { code: 'interrupted', message: 'the process running this invocation stopped before it finished' }, finishedAt: new Date() })
    .where(and(eq(agentInvocations.status, 'running'), lt(agentInvocations.startedAt, new Date(now - ctx.config.sandbox.maxTimeoutMs - STALE_MARGIN_MS))))
    .returning({ id: agentInvocations.id });
  if (ctx.jobs.kind !== 'in-process') return;
  const cutoff = new Date(now - STALE_MARGIN_MS);
  const queued = await ctx.db
    .select({ id: agentInvocations.id })
    .from(agentInvocations)
    .where(and(eq(agentInvocations.status, 'queued'), lt(agentInvocations.createdAt, cutoff)));
  for (const q of queued) await ctx.jobs.enqueue(INVOKE_JOB, { invocationId: q.id });
  const preparing = await ctx.db
    .select({ id: deployments.id })
    .from(deployments)
    .where(and(eq(deployments.status, 'preparing'), lt(deployments.updatedAt, new Date(now - ctx.config.sandbox.prepareTimeoutMs - STALE_MARGIN_MS))));
  for (const d of preparing) await ctx.jobs.enqueue(PREPARE_JOB, { deploymentId: d.id, activate: 'if_newest' });
  if (interrupted.length || queued.length || preparing.length) {
    ctx.log.info({ interrupted: interrupted.length, requeued_invocations: queued.length, requeued_prepares: preparing.length }, 'deployments: recovered interrupted work');
  }
}

// ---------------------------------------------------------------------------------------------
// Access.

/**
 * The agent `agentId` as seen by `p`: its owner (user token or API key), or the agent itself with
 * its own agent token. Anything else — another account, a sibling agent — is "not found".
 * @throws AppError not_found
 */
export async function agentInScope(ctx: AppContext, p: Principal, agentId: string): Promise<{ id: string; ownerId: string; status: string }> {
  if (p.kind === 'agent' && p.agentId !== agentId) throw notFound('Agent');
  return getAgentForAccount(ctx, accountOf(p), agentId);
}

function principalId(p: Principal): string {
  return p.kind === 'user' ? p.userId : p.agentId;
}

/** Serialise deployment state changes of one agent (transaction-scoped advisory lock). */
async function lockAgent(tx: Tx, agentId: string): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(1684369457, hashtext(${agentId}))`);
}

async function activeOf(tx: Tx, agentId: string): Promise<DeploymentRow | undefined> {
  const [d] = await tx.select().from(deployments).where(and(eq(deployments.agentId, agentId), eq(deployments.status, 'active')));
  return d;
}

function invalidState(detail: string): AppError {
  return new AppError('invalid_state', detail);
}

// ---------------------------------------------------------------------------------------------
// Deploy.

const ENV_KEY = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
/** Variables that change how Node or the loader behave (NODE_OPTIONS could widen the permissions). */
const ENV_RESERVED = /^(NODE_|LD_|DYLD_|UV_|OPENSSL_)/i;
const MAX_ENV_KEYS = 64;
const MAX_ENV_BYTES = 16 * 1024;

function parseEnv(raw: string | undefined): Record<string, string> | null {
  if (raw === undefined || raw.trim() === '') return null;
  const bad = (message: string) => new AppError('validation_failed', `env: ${message}`, { errors: [{ in: 'body', pointer: '/env', message }] });
  if (Buffer.byteLength(raw) > MAX_ENV_BYTES) throw bad(`must be at most ${MAX_ENV_BYTES} bytes`);
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    throw bad('must be a JSON object');
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw bad('must be a JSON object');
  const out: Record<string, string> = {};
  const entries = Object.entries(v as Record<string, unknown>);
  if (entries.length > MAX_ENV_KEYS) throw bad(`at most ${MAX_ENV_KEYS} variables`);
  for (const [k, val] of entries) {
    if (!ENV_KEY.test(k)) throw bad(`${JSON.stringify(k)} is not a valid variable name`);
    if (ENV_RESERVED.test(k)) throw bad(`${JSON.stringify(k)} is reserved (NODE_*, LD_*, DYLD_*, UV_*, OPENSSL_* are not allowed)`);
    if (typeof val !== 'string' && typeof val !== 'number' && typeof val !== 'boolean') throw bad(`value of ${k} must be a string`);
    if (String(val).includes('\0')) throw bad(`value of ${k} contains a NUL byte`);
    out[k] = String(val);
  }
  return out;
}

/**
 * Validate an uploaded artifact and create version N+1 in status `preparing`; the prepare job
 * activates it. The artifact is stored once per sha256.
 * @throws AppError not_found (agent not in scope), invalid_state (agent disabled),
 *   invalid_artifact (archive rejected: see `src/sandbox/artifact.ts`), validation_failed (env, entrypoint)
 */
export async function createDeployment(ctx: AppContext, p: Principal, agentId: string, input: DeployInput): Promise<DeploymentView> {
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
        createdBy: principalId(p),
      })
      .returning();
    return d;
  });
  await ctx.jobs.enqueue(PREPARE_JOB, { deploymentId: row.id, activate: 'if_newest' });
  ctx.log.info({ agent_id: agentId, deployment_id: row.id, version: row.version, sha256: inspected.sha256 }, 'deployment created');
  return deploymentView(row);
}

/** Unpack the artifact `sha256` on this host (once; concurrent callers share the work). Returns its directory. */
async function ensureUnpacked(ctx: AppContext, sha256: string): Promise<string> {
  const dir = ctx.config.sandbox.dir;
  const dest = path.join(dir, sha256);
  if (fs.existsSync(dest)) return fs.realpathSync(dest);
  const key = `${dir}\0${sha256}`;
  let p = unpacking.get(key);
  if (!p) {
    p = (async () => {
      const [a] = await ctx.db.select({ data: deploymentArtifacts.data }).from(deploymentArtifacts).where(eq(deploymentArtifacts.sha256, sha256));
      if (!a) throw new ArtifactError(`artifact ${sha256} is missing from storage`);
      const buf = Buffer.isBuffer(a.data) ? a.data : Buffer.from((a.data as Uint8Array).buffer, (a.data as Uint8Array).byteOffset, (a.data as Uint8Array).byteLength);
      return unpackArtifact(buf, dir, limitsOf(ctx));
    })().finally(() => unpacking.delete(key));
    unpacking.set(key, p);
  }
  return p;
}

function envOf(ctx: AppContext, d: DeploymentRow): Record<string, string> {
  return d.envEncrypted ? (JSON.parse(decryptSecret(ctx, d.envEncrypted)) as Record<string, string>) : {};
}

/**
 * The prepare step (job `deployments.prepare`): unpack, check the entrypoint, smoke-load it in the
 * sandbox (module top level runs, a handler export must exist), then activate. `if_newest` (a new
 * deploy) activates unless a newer version became active meanwhile; `always` (redeploy) activates.
 * Idempotent: does nothing unless the deployment is still `preparing`.
 */
export async function prepareDeployment(ctx: AppContext, deploymentId: string, activate: 'always' | 'if_newest' = 'if_newest'): Promise<void> {
  const [d] = await ctx.db.select().from(deployments).where(eq(deployments.id, deploymentId));
  if (!d || d.status !== 'preparing') return;
  let failure: string | null = null;
  try {
    const root = await ensureUnpacked(ctx, d.artifactSha256);
    const file = path.join(root, d.entrypoint);
    if (!fs.existsSync(file) || !fs.statSync(file).isFile()) {
      failure = `entrypoint ${d.entrypoint} is not a file of the artifact`;
    } else {
      const r = await sandboxOf(ctx).run({ mode: 'load', root, entrypoint: d.entrypoint, timeoutMs: ctx.config.sandbox.prepareTimeoutMs, env: envOf(ctx, d), context: { agentId: d.agentId, deploymentId: d.id, version: d.version } });
      if (r.status === 'timed_out') failure = `smoke load did not finish within ${ctx.config.sandbox.prepareTimeoutMs} ms`;
      else if (r.status !== 'succeeded') failure = `smoke load failed (${r.error?.code}): ${r.error?.message}`;
    }
  } catch (err) {
    if (err instanceof ArtifactError) failure = err.message;
    else {
      ctx.log.error({ err, deployment_id: d.id }, 'prepare failed unexpectedly');
      failure = 'internal error while preparing; try redeploy';
    }
  }
  await ctx.db.transaction(async (tx) => {
    await lockAgent(tx, d.agentId);
    const [cur] = await tx.select().from(deployments).where(eq(deployments.id, d.id));
    if (!cur || cur.status !== 'preparing') return;
    const now = new Date();
    if (failure) {
      await tx.update(deployments).set({ status: 'failed', failureReason: failure.slice(0, 2000), updatedAt: now }).where(eq(deployments.id, d.id));
      return;
    }
    const active = await activeOf(tx, d.agentId);
    if (activate === 'if_newest' && active && active.version > d.version) {
      await tx.update(deployments).set({ status: 'superseded', failureReason: null, preparedAt: now, updatedAt: now }).where(eq(deployments.id, d.id));
      return;
    }
    if (active) await tx.update(deployments).set({ status: 'superseded', updatedAt: now }).where(eq(deployments.id, active.id));
    await tx.update(deployments).set({ status: 'active', failureReason: null, preparedAt: now, activatedAt: now, updatedAt: now }).where(eq(deployments.id, d.id));
  });
  ctx.log.info({ deployment_id: d.id, agent_id: d.agentId, version: d.version, ok: !failure, reason: failure ?? undefined }, 'deployment prepared');
}

// ---------------------------------------------------------------------------------------------
// History and lifecycle actions.

/** Deployments of the agent, newest first. @throws AppError not_found */
export async function listDeployments(ctx: AppContext, p: Principal, agentId: string, q: { limit?: number; cursor?: string }): Promise<Page<DeploymentView>> {
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
export async function rollbackDeployment(ctx: AppContext, p: Principal, agentId: string, input: { version?: number }): Promise<DeploymentView> {
  await agentInScope(ctx, p, agentId);
  return ctx.db.transaction(async (tx) => {
    await lockAgent(tx, agentId);
    const active = await activeOf(tx, agentId);
    if (!active) throw invalidState('No active deployment to roll back');
    let target: DeploymentRow | undefined;
    if (input.version !== undefined) {
      [target] = await tx.select().from(deployments).where(and(eq(deployments.agentId, agentId), eq(deployments.version, input.version)));
      if (!target) throw notFound(`Version ${input.version}`);
      if (target.id === active.id) throw invalidState(`Version ${input.version} is already active`);
      if (!target.preparedAt || !['superseded', 'rolled_back', 'stopped'].includes(target.status)) {
        throw invalidState(`Version ${input.version} is ${target.status} and cannot be made active by a rollback`);
      }
    } else {
      [target] = await tx
        .select()
        .from(deployments)
        .where(and(eq(deployments.agentId, agentId), eq(deployments.status, 'superseded'), lt(deployments.version, active.version), sql`${deployments.preparedAt} is not null`))
        .orderBy(desc(deployments.version))
        .limit(1);
      if (!target) throw invalidState(`No earlier good version to roll back to from version ${active.version}`);
    }
    const now = new Date();
    await tx.update(deployments).set({ status: 'rolled_back', updatedAt: now }).where(eq(deployments.id, active.id));
    const [row] = await tx.update(deployments).set({ status: 'active', activatedAt: now, updatedAt: now }).where(eq(deployments.id, target.id)).returning();
    ctx.log.info({ agent_id: agentId, from: active.version, to: row.version }, 'deployment rolled back');
    return deploymentView(row);
  });
}

/** Stop the active deployment (→ `stopped`; invocations then answer 409). @throws AppError not_found, invalid_state */
export async function stopDeployment(ctx: AppContext, p: Principal, agentId: string): Promise<DeploymentView> {
  await agentInScope(ctx, p, agentId);
  return ctx.db.transaction(async (tx) => {
    await lockAgent(tx, agentId);
    const active = await activeOf(tx, agentId);
    if (!active) throw invalidState('No active deployment to stop');
    const [row] = await tx.update(deployments).set({ status: 'stopped', updatedAt: new Date() }).where(eq(deployments.id, active.id)).returning();
    return deploymentView(row);
  });
}

/**
 * Re-run the prepare step on a version (→ `preparing`; the job makes it `active` or `failed`).
 * Default target, "the current version": the active one; when none is active, the newest version
 * that is `stopped` or `failed`. Any version except one already `preparing` may be named.
 * @throws AppError not_found, invalid_state
 */
export async function redeployDeployment(ctx: AppContext, p: Principal, agentId: string, input: { version?: number }): Promise<DeploymentView> {
  const agent = await agentInScope(ctx, p, agentId);
  if (agent.status !== 'active') throw invalidState(`Agent is ${agent.status}; enable it before redeploying`);
  const row = await ctx.db.transaction(async (tx) => {
    await lockAgent(tx, agentId);
    let target: DeploymentRow | undefined;
    if (input.version !== undefined) {
      [target] = await tx.select().from(deployments).where(and(eq(deployments.agentId, agentId), eq(deployments.version, input.version)));
      if (!target) throw notFound(`Version ${input.version}`);
    } else {
      target = await activeOf(tx, agentId);
      if (!target) {
        [target] = await tx
          .select()
          .from(deployments)
          .where(and(eq(deployments.agentId, agentId), sql`${deployments.status} in ('stopped', 'failed', 'preparing')`))
          .orderBy(desc(deployments.version))
          .limit(1);
      }
      if (!target) throw invalidState('Nothing to redeploy: the agent has no active, stopped or failed deployment');
    }
    // A prepare older than its timeout plus a margin was lost (its host died): it may be retried.
    const stale = target.updatedAt.getTime() < Date.now() - ctx.config.sandbox.prepareTimeoutMs - STALE_MARGIN_MS;
    if (target.status === 'preparing' && !stale) throw invalidState(`Version ${target.version} is already preparing`);
    const [r] = await tx.update(deployments).set({ status: 'preparing', failureReason: null, updatedAt: new Date() }).where(eq(deployments.id, target.id)).returning();
    return r;
  });
  await ctx.jobs.enqueue(PREPARE_JOB, { deploymentId: row.id, activate: 'always' });
  return deploymentView(row);
}

// ---------------------------------------------------------------------------------------------
// Invocations.

/** Input of {@link invokeAgent}. */
export interface InvokeInput {
  input?: unknown;
  timeout_ms?: number;
  async?: boolean;
}

/**
 * Invoke the active version. Synchronous: runs now and returns the finished record. Async:
 * records a `queued` invocation, enqueues `deployments.invoke` and returns it at once.
 * @throws AppError not_found; invalid_state (agent disabled, nothing active: never deployed,
 *   stopped, or still preparing); validation_failed (timeout_ms above SANDBOX_MAX_TIMEOUT_MS)
 */
export async function invokeAgent(ctx: AppContext, p: Principal, agentId: string, body: InvokeInput): Promise<InvocationView> {
  const agent = await agentInScope(ctx, p, agentId);
  if (agent.status !== 'active') throw invalidState(`Agent is ${agent.status}`);
  const max = ctx.config.sandbox.maxTimeoutMs;
  if (body.timeout_ms !== undefined && body.timeout_ms > max) {
    throw new AppError('validation_failed', `timeout_ms must be at most ${max}`, { errors: [{ in: 'body', pointer: '/timeout_ms', message: `must be <= ${max}` }] });
  }
  const timeoutMs = body.timeout_ms ?? Math.min(ctx.config.sandbox.timeoutMs, max);
  const [d] = await ctx.db.select().from(deployments).where(and(eq(deployments.agentId, agentId), eq(deployments.status, 'active')));
  if (!d) {
    const [latest] = await ctx.db.select().from(deployments).where(eq(deployments.agentId, agentId)).orderBy(desc(deployments.updatedAt), desc(deployments.version)).limit(1);
    if (!latest) throw invalidState('The agent has no deployment; deploy code first');
    if (latest.status === 'stopped') throw invalidState(`The deployment (version ${latest.version}) is stopped; redeploy, roll back or deploy to invoke`);
    if (latest.status === 'preparing') throw invalidState(`Version ${latest.version} is still preparing; retry shortly`);
    throw invalidState(`No active deployment (last changed: version ${latest.version}, ${latest.status})`);
  }
  const async = body.async === true;
  const sandbox = sandboxOf(ctx);
  if (!async && sandbox.load.waiting >= ctx.config.sandbox.concurrency * 4) {
    throw new AppError('service_unavailable', 'All sandboxes of this instance are busy; retry shortly or invoke with async=true', { headers: { 'retry-after': '1' } });
  }
  const now = new Date();
  const [row] = await ctx.db
    .insert(agentInvocations)
    .values({
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
      createdAt: now,
      startedAt: async ? null : now,
    })
    .returning();
  if (async) {
    await ctx.jobs.enqueue(INVOKE_JOB, { invocationId: row.id });
    return invocationView(row);
  }
  return invocationView(await execute(ctx, row, d));
}

/** Run a claimed (`running`) invocation against deployment `d` and store the outcome. */
async function execute(ctx: AppContext, row: InvocationRow, d: DeploymentRow): Promise<InvocationRow> {
  let r: SandboxResult;
  try {
    const root = await ensureUnpacked(ctx, d.artifactSha256);
    r = await sandboxOf(ctx).run({
      mode: 'invoke',
      root,
      entrypoint: d.entrypoint,
      input: row.input,
      context: { invocationId: row.id, agentId: row.agentId, deploymentId: d.id, version: d.version },
      timeoutMs: row.timeoutMs,
      env: envOf(ctx, d),
    });
  } catch (err) {
    ctx.log.error({ err, invocation_id: row.id }, 'sandbox failed to run');
    r = { status: 'failed', output: null, error: { code: 'sandbox_error', message: 'the sandbox could not run this invocation' }, logs: [], logsTruncated: false, durationMs: 0 };
  }
  const [done] = await ctx.db
    .update(agentInvocations)
    .set({
      status: r.status,
      output: r.output ?? null,
      error: r.error ? { ...r.error } : null,
      logs: r.logs,
      logsTruncated: r.logsTruncated,
      durationMs: r.durationMs,
      finishedAt: new Date(),
    })
    .where(eq(agentInvocations.id, row.id))
    .returning();
  ctx.log.info({ invocation_id: row.id, agent_id: row.agentId, version: d.version, status: r.status, duration_ms: r.durationMs }, 'agent invoked');
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
      .set({ status: 'failed', error: { code: 'deployment_stopped', message: 'the deployment was stopped before the queued invocation ran' }, durationMs: 0, finishedAt: new Date() })
      .where(eq(agentInvocations.id, row.id));
    return;
  }
  await execute(ctx, row, d);
}

/** Invocations of the agent, newest first (no input/output/logs). @throws AppError not_found */
export async function listInvocations(ctx: AppContext, p: Principal, agentId: string, q: { limit?: number; cursor?: string }): Promise<Page<InvocationSummary>> {
  await agentInScope(ctx, p, agentId);
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
export async function getInvocation(ctx: AppContext, p: Principal, agentId: string, invocationId: string): Promise<InvocationView> {
  await agentInScope(ctx, p, agentId);
  const [row] = await ctx.db.select().from(agentInvocations).where(and(eq(agentInvocations.id, invocationId), eq(agentInvocations.agentId, agentId)));
  if (!row) throw notFound('Execution');
  return invocationView(row);
}
