/**
 * The deployments module's runtime state on this host: the app's sandbox (with its warm pool),
 * unpacked artifacts, decrypted deployment environments, and the warm-pool key of a version.
 */
import fs from 'node:fs';
import path from 'node:path';
import { and, eq } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { deploymentArtifacts, deployments } from '../../db/schema/index.js';
import { decryptSecret } from '../../lib/secrets.js';
import { SharedCache } from '../../lib/shared-cache.js';
import { ArtifactError, unpackArtifact, type ArtifactLimits } from '../../sandbox/artifact.js';
import { Sandbox, type SandboxOptions } from '../../sandbox/runner.js';
import { AppError } from '../../http/errors.js';

export type DeploymentRow = typeof deployments.$inferSelect;

/** Job names of this module. */
export const PREPARE_JOB = 'deployments.prepare';
export const INVOKE_JOB = 'deployments.invoke';

/** Margin after a run's own deadline before it is considered interrupted (its process died with its host). */
export const STALE_MARGIN_MS = 60_000;

const unpacking = new Map<string, Promise<string>>();

/**
 * The app's sandbox, `ctx.sandbox` (created at start by `registerDeploymentJobs`; probes the host once).
 * @throws Error when a required wall is unavailable (SANDBOX_ISOLATION=bwrap without a working bwrap, …)
 */
export function sandboxOf(ctx: AppContext): Sandbox {
  let s = ctx.sandbox;
  if (!s) {
    const c = ctx.config.sandbox;
    fs.mkdirSync(c.dir, { recursive: true, mode: 0o755 });
    s = newSandbox({
      memoryMb: c.memoryMb,
      processMemoryMb: c.processMemoryMb,
      maxLogBytes: c.maxLogBytes,
      maxOutputBytes: c.maxOutputBytes,
      concurrency: c.concurrency,
      network: c.network,
      isolation: c.isolation,
      freeze: c.freeze,
      user: c.user,
      readableDir: fs.realpathSync(c.dir),
      warm:
        c.warmPerVersion > 0 && c.warmTotal > 0
          ? { perVersion: c.warmPerVersion, total: c.warmTotal, idleMs: c.warmIdleMs }
          : undefined,
      // Egress targets pass the same SSRF rules as the platform's own upstream calls.
      egress: { resolve: (host) => ctx.upstream.resolveChecked(host) },
      forkServer: c.forkServer,
      provisioned: c.provisioned,
    });
    if (!s.egressAvailable)
      ctx.log.warn(
        'sandbox: egress proxy unavailable (iproute2 ip, sh or setpriv missing): deployments with egress have no network',
      );
    if (!s.sealed)
      ctx.log.warn(
        "sandbox: SANDBOX_ISOLATION=off: deployed code is confined by Node's permission model alone and can reach the host's Unix sockets",
      );
    if (!s.networkIsolated)
      ctx.log.warn(
        'sandbox: network isolation unavailable (unshare --net failed or SANDBOX_NETWORK=allowed): deployed code has network access',
      );
    if (s.runAsNote) ctx.log.warn(`sandbox: ${s.runAsNote}`);
    if (c.processMemoryMb > 0 && s.processMemoryMb === 0)
      ctx.log.warn('sandbox: prlimit not found: only the V8 heap of sandbox processes is limited');
    ctx.log.info(
      {
        sealed: s.sealed,
        network_isolated: s.networkIsolated,
        run_as: s.runAs,
        process_memory_mb: s.processMemoryMb,
        warm_per_version: c.warmPerVersion,
        warm_total: c.warmTotal,
      },
      'sandbox ready',
    );
    const sandbox = s;
    ctx.onClose.push(() => sandbox.killAll());
    ctx.sandbox = s;
  }
  return s;
}

/**
 * Warm-pool key of a deployment as it is now: agent, deployment, and the times it was prepared and
 * activated — a rollback, redeploy or re-activation changes the key, so no instance reuses an
 * environment of the version as it was before.
 */
export function warmKey(d: DeploymentRow): string {
  return `${d.agentId}/${d.id}/${d.preparedAt?.getTime() ?? 0}/${d.activatedAt?.getTime() ?? 0}`;
}

/** The active deployment by agent id (null: none), read through by every invocation. */
function activeCache(ctx: AppContext): SharedCache<DeploymentRow | null> {
  return SharedCache.of(ctx, { name: 'deployments.active', max: 10_000, ttlMs: ctx.config.cacheTtlMs });
}

/**
 * The agent's active deployment, or null. Cached per agent and evicted by {@link drainAgent}, which
 * every change of the active version calls after its commit (here and, with Redis, on every
 * instance; without Redis another instance may invoke the previous version for up to `CACHE_TTL_MS`).
 */
export async function activeDeployment(ctx: AppContext, agentId: string): Promise<DeploymentRow | null> {
  return activeCache(ctx).get(agentId, async () => {
    const [d] = await ctx.db
      .select()
      .from(deployments)
      .where(and(eq(deployments.agentId, agentId), eq(deployments.status, 'active')));
    return d ?? null;
  });
}

/**
 * After a committed change of the agent's active version (rollback, stop, redeploy or a new active
 * version): forget the cached active deployment and retire this host's warm environments of the agent.
 */
export function drainAgent(ctx: AppContext, agentId: string): void {
  void activeCache(ctx).invalidate(agentId);
  const s = ctx.sandbox;
  if (!s) return;
  const n = s.drain((k) => k.startsWith(`${agentId}/`));
  if (n) ctx.log.info({ agent_id: agentId, environments: n }, 'deployments: drained warm environments');
}

export function limitsOf(ctx: AppContext): ArtifactLimits {
  return { maxUnpackedBytes: ctx.config.deploy.maxUnpackedBytes, maxFiles: ctx.config.deploy.maxFiles };
}

/** Unpack the artifact `sha256` on this host (once; concurrent callers share the work). Returns its directory. */
export async function ensureUnpacked(ctx: AppContext, sha256: string): Promise<string> {
  const dir = ctx.config.sandbox.dir;
  const dest = path.join(dir, sha256);
  if (fs.existsSync(dest)) return fs.realpathSync(dest);
  const key = `${dir}\0${sha256}`;
  let p = unpacking.get(key);
  if (!p) {
    p = (async () => {
      const [a] = await ctx.db
        .select({ data: deploymentArtifacts.data })
        .from(deploymentArtifacts)
        .where(eq(deploymentArtifacts.sha256, sha256));
      if (!a) throw new ArtifactError(`artifact ${sha256} is missing from storage`);
      const buf = Buffer.isBuffer(a.data)
        ? a.data
        : Buffer.from(
            (a.data as Uint8Array).buffer,
            (a.data as Uint8Array).byteOffset,
            (a.data as Uint8Array).byteLength,
          );
      return unpackArtifact(buf, dir, limitsOf(ctx));
    })().finally(() => unpacking.delete(key));
    unpacking.set(key, p);
  }
  return p;
}

export function envOf(ctx: AppContext, d: DeploymentRow): Record<string, string> {
  return d.envEncrypted ? (JSON.parse(decryptSecret(ctx, d.envEncrypted)) as Record<string, string>) : {};
}

/**
 * The sandbox, or why this host cannot run deployed code: a required wall that is missing (no
 * bubblewrap or user namespaces with `SANDBOX_ISOLATION=bwrap`, no network namespace with
 * `SANDBOX_NETWORK=isolated`, a `SANDBOX_USER` that cannot read the sandbox directory) never
 * degrades to a weaker sandbox: deploying and invoking answer 503 with the reason, while the
 * rest of the API keeps serving.
 * @throws AppError service_unavailable naming the missing wall and its fix
 */
function newSandbox(opts: SandboxOptions): Sandbox {
  try {
    return new Sandbox(opts);
  } catch (err) {
    throw new AppError('service_unavailable', `Deployed code cannot run on this server: ${(err as Error).message}`);
  }
}
