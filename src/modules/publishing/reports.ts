/**
 * Reports on published services (spec group "Publishing and validation (v1)"): one open report per
 * user (account) per tool; when open reports from `REPORT_THRESHOLD` distinct accounts exist for a
 * tool, the tool becomes `degraded`, and returns to `active` when resolved reports bring it below.
 */
import { and, countDistinct, eq, sql } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { serviceReports } from '../../db/schema/index.js';
import { AppError, notFound } from '../../http/errors.js';
import { newId, iso } from '../../http/ids.js';
import { mapPage, selectPage } from '../../http/pagination.js';
import { findTool } from '../registry/executable.js';
import { getOwnedService, getServiceRow, setToolStatus } from '../registry/service.js';

export type ReportReason = 'broken' | 'wrong_output' | 'security' | 'other';

function reportView(r: typeof serviceReports.$inferSelect) {
  return {
    id: r.id,
    service_id: r.serviceId,
    tool_id: r.toolId ?? null,
    reason: r.reason as ReportReason,
    details: r.details ?? null,
    status: r.status as 'open' | 'resolved',
    created_at: r.createdAt.toISOString(),
    resolved_at: iso(r.resolvedAt),
  };
}

/** Distinct accounts with an open report on `toolId`; degrade/restore the tool against the threshold. */
async function reconcileToolStatus(ctx: AppContext, serviceId: string, toolId: string): Promise<'active' | 'degraded'> {
  const [{ n }] = await ctx.db
    .select({ n: countDistinct(serviceReports.userId) })
    .from(serviceReports)
    .where(
      and(
        eq(serviceReports.serviceId, serviceId),
        eq(serviceReports.toolId, toolId),
        eq(serviceReports.status, 'open'),
      ),
    );
  const status = Number(n) >= ctx.config.reportThreshold ? 'degraded' : 'active';
  await setToolStatus(ctx, toolId, status);
  return status;
}

/**
 * Report a published service (or one's own) or one of its tools. One open report per account per
 * tool (per service when `tool_id` is absent).
 * @throws AppError not_found (service invisible to the caller, unknown tool) | conflict (already reported)
 */
export async function reportService(
  ctx: AppContext,
  accountId: string,
  ref: string,
  input: { tool_id?: string; reason: ReportReason; details?: string },
) {
  const s = await getServiceRow(ctx, ref).catch(() => null);
  if (!s || (s.status !== 'published' && s.ownerId !== accountId)) throw notFound('Service');
  let toolId: string | null = null;
  if (input.tool_id !== undefined) {
    const tool = await findTool(ctx, s.id, input.tool_id);
    if (!tool) throw notFound('Tool');
    toolId = tool.id;
  }
  const [existing] = await ctx.db
    .select({ id: serviceReports.id })
    .from(serviceReports)
    .where(
      and(
        eq(serviceReports.serviceId, s.id),
        eq(serviceReports.userId, accountId),
        eq(serviceReports.status, 'open'),
        toolId ? eq(serviceReports.toolId, toolId) : sql`${serviceReports.toolId} is null`,
      ),
    )
    .limit(1);
  if (existing)
    throw new AppError(
      'conflict',
      `You already have an open report (${existing.id}) for this ${toolId ? 'tool' : 'service'}`,
    );
  const [row] = await ctx.db
    .insert(serviceReports)
    .values({
      id: newId('rep'),
      serviceId: s.id,
      toolId,
      userId: accountId,
      reason: input.reason,
      details: input.details ?? null,
    })
    .returning();
  const toolStatus = toolId ? await reconcileToolStatus(ctx, s.id, toolId) : null;
  return { ...reportView(row), tool_status: toolStatus };
}

/** Reports on the owner's service, newest first (`status` filter optional). @throws AppError not_found */
export async function listServiceReports(
  ctx: AppContext,
  ownerId: string,
  ref: string,
  q: { limit?: number; cursor?: string; status?: 'open' | 'resolved' },
) {
  const s = await getOwnedService(ctx, ownerId, ref);
  return mapPage(
    await selectPage(ctx.db, serviceReports, q, [
      eq(serviceReports.serviceId, s.id),
      q.status ? eq(serviceReports.status, q.status) : undefined,
    ]),
    reportView,
  );
}

/** Resolve a report on the owner's service; the tool returns to `active` below the threshold. @throws AppError not_found */
export async function resolveReport(ctx: AppContext, ownerId: string, ref: string, reportId: string) {
  const s = await getOwnedService(ctx, ownerId, ref);
  const [row] = await ctx.db
    .update(serviceReports)
    .set({ status: 'resolved', resolvedAt: new Date() })
    .where(and(eq(serviceReports.id, reportId), eq(serviceReports.serviceId, s.id), eq(serviceReports.status, 'open')))
    .returning();
  if (!row) throw notFound('Open report');
  const toolStatus = row.toolId ? await reconcileToolStatus(ctx, s.id, row.toolId) : null;
  return { ...reportView(row), tool_status: toolStatus };
}
