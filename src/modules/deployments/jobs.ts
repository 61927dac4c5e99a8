/** Job registration and restart recovery of the deployments module. */
import { and, eq, lt } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { agentInvocations, deployments } from '../../db/schema/index.js';
import { sweepSpawnDirs } from '../../sandbox/spawner.js';
import { runQueuedInvocation } from './invocations.js';
import { INVOKE_JOB, PREPARE_JOB, sandboxOf, STALE_MARGIN_MS } from './runtime.js';
import { prepareDeployment } from './service.js';

/**
 * Register this module's job handlers on `ctx.jobs` (call once per app, API and worker processes
 * alike) and recover work interrupted by a restart (in the background; failures are logged).
 * Creates the sandbox now, so a host that cannot raise a required wall says so at start (an error
 * line naming the wall and its fix; deploying and invoking then answer 503, the rest of the API
 * serves), and removes spawn directories left by a server that was killed.
 */
export function registerDeploymentJobs(ctx: AppContext): void {
  try {
    sandboxOf(ctx);
  } catch (err) {
    ctx.log.error(`deployments disabled: ${(err as Error).message}`);
  }
  sweepSpawnDirs().then(
    (dirs) => dirs.length && ctx.log.info({ dirs }, 'sandbox: removed spawn directories of dead servers'),
    (err: unknown) => ctx.log.warn({ err }, 'sandbox: sweeping spawn directories failed'),
  );
  ctx.jobs.register<{ deploymentId: string; activate: 'always' | 'if_newest' }>(PREPARE_JOB, (p) =>
    prepareDeployment(ctx, p.deploymentId, p.activate),
  );
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
    .set({
      status: 'failed',
      error: { code: 'interrupted', message: 'the process running this invocation stopped before it finished' },
      finishedAt: new Date(),
    })
    .where(
      and(
        eq(agentInvocations.status, 'running'),
        lt(agentInvocations.startedAt, new Date(now - ctx.config.sandbox.maxTimeoutMs - STALE_MARGIN_MS)),
      ),
    )
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
    .where(
      and(
        eq(deployments.status, 'preparing'),
        lt(deployments.updatedAt, new Date(now - ctx.config.sandbox.prepareTimeoutMs - STALE_MARGIN_MS)),
      ),
    );
  for (const d of preparing) await ctx.jobs.enqueue(PREPARE_JOB, { deploymentId: d.id, activate: 'if_newest' });
  if (interrupted.length || queued.length || preparing.length) {
    ctx.log.info(
      { interrupted: interrupted.length, requeued_invocations: queued.length, requeued_prepares: preparing.length },
      'deployments: recovered interrupted work',
    );
  }
}
