/**
 * Publishing and validation (spec group "Publishing and validation (v1)"):
 *
 *   draft ──publish──▶ pending_verification ──(job)──▶ published | rejected
 *   published | pending_verification ──unpublish──▶ unpublished
 *   rejected | unpublished ──publish/resubmit──▶ pending_verification
 *
 * The checklist has three items — `manifest_valid`, `domain_verified`, `functional_verification` —
 * each `passed | failed | pending` with a detail. `publish` answers at once (manifest checked
 * synchronously); the domain check and the owner's test calls run as a background job
 * (`publishing.verify`) on `ctx.jobs`. A service becomes `published` only when all items passed.
 *
 * Reports (`reports.ts`): one open report per user (account) per tool; when open reports from
 * `REPORT_THRESHOLD` distinct accounts exist for a tool, the tool becomes `degraded`.
 */
import { randomBytes } from 'node:crypto';
import { and, count, eq } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import {
  servicePublications,
  serviceReports,
  type ChecklistItem,
  type VerificationResult,
} from '../../db/schema/index.js';
import { AppError } from '../../http/errors.js';
import { newId, iso } from '../../http/ids.js';
import { argumentErrors, validatorFor } from '../../upstream/arguments.js';
import { checkToolSchema } from '../registry/manifest.js';
import { findTool, type ServiceRow } from '../registry/executable.js';
import {
  getOwnedService,
  getOwnerService,
  getServiceRow,
  revalidateService,
  setServiceStatus,
} from '../registry/service.js';
import { checkDomain, verificationMethods } from './domain.js';
import { runTest, type VerificationTest } from './verification.js';

type PublicationRow = typeof servicePublications.$inferSelect;
export type Checklist = {
  manifest_valid: ChecklistItem;
  domain_verified: ChecklistItem;
  functional_verification: ChecklistItem;
};

/** Name of the background job that finishes a publish run. */
export const VERIFY_JOB = 'publishing.verify';
/** Most test calls in a verification config. */
export const MAX_TESTS = 20;

function item(status: ChecklistItem['status'], detail: string, at: Date | null = new Date()): ChecklistItem {
  return { status, detail, checked_at: at ? at.toISOString() : null };
}

/** The publication row of a service, created (with a fresh domain token) on first use. */
async function publicationOf(ctx: AppContext, serviceId: string): Promise<PublicationRow> {
  const [existing] = await ctx.db
    .select()
    .from(servicePublications)
    .where(eq(servicePublications.serviceId, serviceId));
  if (existing) return existing;
  await ctx.db
    .insert(servicePublications)
    .values({ serviceId, domainToken: `apv_${randomBytes(20).toString('hex')}` })
    .onConflictDoNothing();
  const [row] = await ctx.db.select().from(servicePublications).where(eq(servicePublications.serviceId, serviceId));
  return row;
}

function hostOf(baseUrl: string): string {
  return new URL(baseUrl).host;
}

function domainVerifiedFor(pub: PublicationRow, s: ServiceRow): boolean {
  return !!pub.domainVerifiedAt && pub.domainHost === hostOf(s.baseUrl);
}

/** The checklist as it stands (stored by the last run, else derived from current facts). */
function currentChecklist(pub: PublicationRow, s: ServiceRow): Checklist {
  if (pub.checklist) {
    const c = pub.checklist as Checklist;
    // A later base_url change invalidates a stored domain result.
    if (c.domain_verified.status === 'passed' && !domainVerifiedFor(pub, s))
      return { ...c, domain_verified: item('pending', `domain not verified for ${hostOf(s.baseUrl)}`, null) };
    return c;
  }
  return {
    manifest_valid: item('pending', 'checked when the service is published', null),
    domain_verified: domainVerifiedFor(pub, s)
      ? item('passed', pub.domainDetail ?? 'verified', pub.domainVerifiedAt)
      : item('pending', 'POST /v1/services/:id/verify-domain for the token and methods', null),
    functional_verification: pub.verificationConfig
      ? item('pending', `${pub.verificationConfig.tests.length} test call(s) configured; run at publish`, null)
      : item('pending', 'POST /v1/services/:id/verification-config to set test calls', null),
  };
}

/** Checklist and open-report counts of one service (owner view). */
export async function publicationSummary(ctx: AppContext, s: ServiceRow) {
  const pub = await publicationOf(ctx, s.id);
  const reportRows = await ctx.db
    .select({ toolId: serviceReports.toolId, n: count() })
    .from(serviceReports)
    .where(and(eq(serviceReports.serviceId, s.id), eq(serviceReports.status, 'open')))
    .groupBy(serviceReports.toolId);
  const byTool = new Map<string, number>();
  let open = 0;
  for (const r of reportRows) {
    open += Number(r.n);
    if (r.toolId) byTool.set(r.toolId, Number(r.n));
  }
  return { checklist: currentChecklist(pub, s), openReports: open, byTool };
}

/** GET /owner/services/:id — the registry's owner view plus checklist and report counts. @throws AppError not_found */
export async function ownerServiceDetail(ctx: AppContext, ownerId: string, ref: string) {
  const view = await getOwnerService(ctx, ownerId, ref);
  const s = await getServiceRow(ctx, view.id);
  const sum = await publicationSummary(ctx, s);
  return {
    ...view,
    tools: view.tools.map((t) => ({ ...t, open_reports: sum.byTool.get(t.id) ?? 0 })),
    checklist: sum.checklist,
    reports: { open: sum.openReports, degraded_tools: view.tools.filter((t) => t.status === 'degraded').length },
  };
}

// ------------------------------------------------------------------ domain verification

/**
 * First call: issue the token and describe both methods (status `pending`). Later calls: check
 * (HTTP file, then DNS TXT) and record the result.
 * @throws AppError not_found
 */
export async function verifyDomain(ctx: AppContext, ownerId: string, ref: string) {
  const s = await getOwnedService(ctx, ownerId, ref);
  const pub = await publicationOf(ctx, s.id);
  const methods = verificationMethods(s.baseUrl, pub.domainToken);
  const base = { service_id: s.id, host: hostOf(s.baseUrl), token: pub.domainToken, methods };
  if (domainVerifiedFor(pub, s)) {
    return {
      ...base,
      status: 'verified' as const,
      method: pub.domainMethod,
      verified_at: pub.domainVerifiedAt!.toISOString(),
      detail: pub.domainDetail ?? 'verified',
    };
  }
  if (pub.domainDetail === null) {
    const detail = 'token issued: publish it by one of the methods, then call this endpoint again';
    await ctx.db
      .update(servicePublications)
      .set({ domainDetail: detail, updatedAt: new Date() })
      .where(eq(servicePublications.serviceId, s.id));
    return { ...base, status: 'pending' as const, method: null, verified_at: null, detail };
  }
  const check = await checkDomain(ctx, s.baseUrl, pub.domainToken);
  const now = new Date();
  await ctx.db
    .update(servicePublications)
    .set({
      domainVerifiedAt: check.verified ? now : null,
      domainHost: check.verified ? hostOf(s.baseUrl) : null,
      domainMethod: check.method,
      domainDetail: check.detail,
      updatedAt: now,
    })
    .where(eq(servicePublications.serviceId, s.id));
  return {
    ...base,
    status: check.verified ? ('verified' as const) : ('failed' as const),
    method: check.method,
    verified_at: check.verified ? now.toISOString() : null,
    detail: check.detail,
  };
}

// ------------------------------------------------------------------ functional verification config

/**
 * Set the test calls. Each `tool` must exist (name, former name or id), its `arguments` must
 * satisfy the tool's input schema, and `expect.json_schema` must be a valid schema.
 * @throws AppError not_found | validation_failed (every problem, with pointers)
 */
export async function setVerificationConfig(
  ctx: AppContext,
  ownerId: string,
  ref: string,
  input: { tests: VerificationTest[] },
) {
  const s = await getOwnedService(ctx, ownerId, ref);
  const errors: Array<{ in: 'body'; pointer: string; message: string }> = [];
  if (input.tests.length === 0)
    errors.push({ in: 'body', pointer: '/tests', message: 'must list at least one test call' });
  for (const [i, t] of input.tests.entries()) {
    const tool = await findTool(ctx, s.id, t.tool);
    if (!tool) {
      errors.push({ in: 'body', pointer: `/tests/${i}/tool`, message: `no tool "${t.tool}" in this service` });
      continue;
    }
    try {
      const validate = validatorFor(tool.id, tool.inputSchema);
      if (!validate(t.arguments)) {
        for (const e of argumentErrors(validate.errors ?? []))
          errors.push({ in: 'body', pointer: `/tests/${i}${e.pointer}`, message: e.message });
      }
    } catch {
      errors.push({ in: 'body', pointer: `/tests/${i}/tool`, message: 'the tool input_schema does not compile' });
    }
    if (t.expect?.json_schema) {
      for (const p of checkToolSchema(t.expect.json_schema, `/tests/${i}/expect/json_schema`, false))
        errors.push({ in: 'body', ...p });
    }
  }
  if (errors.length) {
    throw new AppError(
      'validation_failed',
      `Verification config is invalid: ${errors
        .map((e) => `${e.pointer} ${e.message}`)
        .join('; ')
        .slice(0, 2000)}`,
      { errors },
    );
  }
  await publicationOf(ctx, s.id);
  await ctx.db
    .update(servicePublications)
    .set({ verificationConfig: { tests: input.tests }, updatedAt: new Date() })
    .where(eq(servicePublications.serviceId, s.id));
  return { service_id: s.id, tests: input.tests };
}

// ------------------------------------------------------------------ publish lifecycle

/** Verification status of the current/last run (per-test results and overall state). */
function statusView(s: ServiceRow, pub: PublicationRow) {
  return {
    service_id: s.id,
    status: s.status,
    verification: {
      state: pub.verificationState as 'not_started' | 'pending' | 'running' | 'passed' | 'failed',
      started_at: iso(pub.verificationStartedAt),
      finished_at: iso(pub.verificationFinishedAt),
      tests: pub.verificationResults,
    },
    checklist: currentChecklist(pub, s),
  };
}

/**
 * Start a publish run: re-validate the manifest now, move to `pending_verification`, enqueue the
 * domain check and the test calls. Answers the initial checklist.
 * @throws AppError not_found | invalid_state (from `published` or `pending_verification`; resubmit only from `rejected`/`unpublished`)
 */
export async function startPublish(ctx: AppContext, ownerId: string, ref: string, mode: 'publish' | 'resubmit') {
  const s = await getOwnedService(ctx, ownerId, ref);
  const allowed = mode === 'publish' ? ['draft', 'rejected', 'unpublished'] : ['rejected', 'unpublished'];
  if (!allowed.includes(s.status)) {
    const hint = s.status === 'draft' ? '; use POST /v1/services/:id/publish' : '';
    throw new AppError('invalid_state', `Service is ${s.status}; ${mode} needs ${allowed.join(' or ')}${hint}`);
  }
  const pub = await publicationOf(ctx, s.id);
  const problems = await revalidateService(ctx, s.id);
  const now = new Date();
  const checklist: Checklist = {
    manifest_valid: problems.length
      ? item(
          'failed',
          problems
            .slice(0, 10)
            .map((p) => `${p.pointer} ${p.message}`)
            .join('; '),
          now,
        )
      : item('passed', 'manifest valid; every tool described', now),
    domain_verified: domainVerifiedFor(pub, s)
      ? item('passed', pub.domainDetail ?? 'verified', pub.domainVerifiedAt)
      : item('pending', 'checking the domain', null),
    functional_verification: pub.verificationConfig
      ? item('pending', `${pub.verificationConfig.tests.length} test call(s) queued`, null)
      : item('failed', 'no verification config: POST /v1/services/:id/verification-config', now),
  };
  const runId = newId('job');
  const [updated] = await ctx.db
    .update(servicePublications)
    .set({
      runId,
      checklist,
      verificationState: pub.verificationConfig ? 'pending' : 'failed',
      verificationResults: [],
      verificationStartedAt: now,
      verificationFinishedAt: pub.verificationConfig ? null : now,
      updatedAt: now,
    })
    .where(eq(servicePublications.serviceId, s.id))
    .returning();
  await setServiceStatus(ctx, s.id, 'pending_verification');
  await ctx.jobs.enqueue(VERIFY_JOB, { serviceId: s.id, runId }, { jobId: runId, attempts: 2, backoffMs: 2000 });
  return statusView({ ...s, status: 'pending_verification' }, updated);
}

/** GET /v1/services/:id/publish/verification-status. @throws AppError not_found */
export async function verificationStatus(ctx: AppContext, ownerId: string, ref: string) {
  const s = await getOwnedService(ctx, ownerId, ref);
  return statusView(s, await publicationOf(ctx, s.id));
}

/** Take a service off the marketplace (also cancels a pending run). @throws AppError not_found | invalid_state */
export async function unpublish(ctx: AppContext, ownerId: string, ref: string) {
  const s = await getOwnedService(ctx, ownerId, ref);
  if (s.status !== 'published' && s.status !== 'pending_verification')
    throw new AppError('invalid_state', `Service is ${s.status}, not published`);
  const pub = await publicationOf(ctx, s.id);
  const [updated] = await ctx.db
    .update(servicePublications)
    .set({
      runId: null,
      ...(pub.verificationState === 'pending' || pub.verificationState === 'running'
        ? { verificationState: 'not_started' }
        : {}),
      updatedAt: new Date(),
    })
    .where(eq(servicePublications.serviceId, s.id))
    .returning();
  await setServiceStatus(ctx, s.id, 'unpublished');
  return statusView({ ...s, status: 'unpublished' }, updated);
}

/**
 * The `publishing.verify` job: check the domain (unless verified for the current host), run the
 * test calls, store the checklist and decide `published` / `rejected`. A job whose run id is no
 * longer current (unpublished, or superseded by a newer run) does nothing.
 */
export async function runVerificationJob(
  ctx: AppContext,
  payload: { serviceId: string; runId: string },
): Promise<void> {
  const [pub] = await ctx.db
    .select()
    .from(servicePublications)
    .where(eq(servicePublications.serviceId, payload.serviceId));
  if (!pub || pub.runId !== payload.runId) return;
  let s: ServiceRow;
  try {
    s = await getServiceRow(ctx, payload.serviceId);
  } catch {
    return; // deleted meanwhile
  }
  const checklist = { ...(pub.checklist as Checklist) };
  const stillCurrent = async () => {
    const [p] = await ctx.db
      .select({ runId: servicePublications.runId })
      .from(servicePublications)
      .where(eq(servicePublications.serviceId, s.id));
    return p?.runId === payload.runId;
  };

  if (checklist.domain_verified.status !== 'passed') {
    const check = await checkDomain(ctx, s.baseUrl, pub.domainToken);
    const now = new Date();
    checklist.domain_verified = check.verified
      ? item('passed', check.detail, now)
      : item('failed', `${check.detail}. Token and methods: POST /v1/services/:id/verify-domain`, now);
    await ctx.db
      .update(servicePublications)
      .set(
        check.verified
          ? {
              domainVerifiedAt: now,
              domainHost: hostOf(s.baseUrl),
              domainMethod: check.method,
              domainDetail: check.detail,
              checklist,
            }
          : { checklist },
      )
      .where(and(eq(servicePublications.serviceId, s.id), eq(servicePublications.runId, payload.runId)));
  }

  const tests = pub.verificationConfig?.tests ?? [];
  if (tests.length) {
    await ctx.db
      .update(servicePublications)
      .set({ verificationState: 'running' })
      .where(and(eq(servicePublications.serviceId, s.id), eq(servicePublications.runId, payload.runId)));
    const timeoutMs = Math.min(ctx.config.upstream.timeoutMs, 30_000);
    const results: VerificationResult[] = [];
    for (const t of tests) {
      if (!(await stillCurrent())) return;
      results.push(await runTest(ctx, s.id, t, timeoutMs));
      await ctx.db
        .update(servicePublications)
        .set({ verificationResults: results })
        .where(and(eq(servicePublications.serviceId, s.id), eq(servicePublications.runId, payload.runId)));
    }
    const failed = results.filter((r) => r.status === 'failed').length;
    checklist.functional_verification = failed
      ? item('failed', `${failed} of ${results.length} test call(s) failed`)
      : item('passed', `${results.length} test call(s) passed`);
  }

  const passed = Object.values(checklist).every((c) => c.status === 'passed');
  const now = new Date();
  const [done] = await ctx.db
    .update(servicePublications)
    .set({
      checklist,
      verificationState: tests.length
        ? checklist.functional_verification.status === 'passed'
          ? 'passed'
          : 'failed'
        : 'failed',
      verificationFinishedAt: now,
      runId: null,
      updatedAt: now,
    })
    .where(and(eq(servicePublications.serviceId, s.id), eq(servicePublications.runId, payload.runId)))
    .returning({ serviceId: servicePublications.serviceId });
  if (!done) return; // superseded while finishing
  await setServiceStatus(ctx, s.id, passed ? 'published' : 'rejected');
  ctx.log.info({ service: s.id, outcome: passed ? 'published' : 'rejected' }, 'publish run finished');
}

/** Register the publishing job handler on `ctx.jobs` (once per app). */
export function registerPublishingJobs(ctx: AppContext): void {
  ctx.jobs.register<{ serviceId: string; runId: string }>(VERIFY_JOB, (payload) => runVerificationJob(ctx, payload));
}
