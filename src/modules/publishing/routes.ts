/** HTTP routes of publishing and validation (`/v1/services/:id/…`) and the owner's report views. */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../context.js';
import { accountOf, principalOf, requireAuth, userOf } from '../../http/auth.js';
import { created, operations } from '../../http/operations.js';
import { ListOf, USER_SECURITY, errorResponses } from '../../http/schemas.js';
import { ToolSchema } from '../registry/schemas.js';
import { renameTool } from '../registry/service.js';
import {
  DomainVerificationSchema,
  PublishStatusSchema,
  RenameBody,
  ReportBody,
  ReportParams,
  ReportResultSchema,
  ReportSchema,
  ReportsQuery,
  ServiceParams,
  ToolParams,
  VerificationConfigBody,
  VerificationConfigSchema,
} from './schemas.js';
import { listServiceReports, reportService, resolveReport } from './reports.js';
import {
  registerPublishingJobs,
  setVerificationConfig,
  startPublish,
  unpublish,
  verificationStatus,
  verifyDomain,
} from './service.js';

export async function publishingRoutes(app: FastifyInstance, { ctx }: { ctx: AppContext }): Promise<void> {
  registerPublishingJobs(ctx);
  const op = operations(['publishing'], USER_SECURITY);

  // Owner-only actions (users); another account's service is 404.
  await app.register(async (owner) => {
    requireAuth(owner, ctx.auth, { principals: ['user'] });
    const r = owner.withTypeProvider<TypeBoxTypeProvider>();
    const params = ServiceParams;

    r.post(
      '/v1/services/:id/publish',
      op('publishing.publish', 'Start the publish checklist (runs in the background)', {
        params,
        response: { 202: PublishStatusSchema, ...errorResponses(403, 404, 409) },
      }),
      async (req, reply) => reply.code(202).send(await startPublish(ctx, userOf(req).userId, req.params.id, 'publish')),
    );
    r.post(
      '/v1/services/:id/publish/resubmit',
      op('publishing.resubmit', 'Re-run the publish checklist of a rejected or unpublished service', {
        params,
        response: { 202: PublishStatusSchema, ...errorResponses(403, 404, 409) },
      }),
      async (req, reply) =>
        reply.code(202).send(await startPublish(ctx, userOf(req).userId, req.params.id, 'resubmit')),
    );
    r.get(
      '/v1/services/:id/publish/verification-status',
      op('publishing.verificationStatus', 'Functional verification status: per-test results and checklist', {
        params,
        response: { 200: PublishStatusSchema, ...errorResponses(403, 404) },
      }),
      async (req) => verificationStatus(ctx, userOf(req).userId, req.params.id),
    );
    r.post(
      '/v1/services/:id/verify-domain',
      op('publishing.verifyDomain', 'Get the domain token and methods; call again to check', {
        params,
        response: { 200: DomainVerificationSchema, ...errorResponses(403, 404) },
      }),
      async (req) => verifyDomain(ctx, userOf(req).userId, req.params.id),
    );
    r.post(
      '/v1/services/:id/verification-config',
      op('publishing.setVerificationConfig', 'Set the functional verification test calls', {
        params,
        body: VerificationConfigBody,
        response: { 200: VerificationConfigSchema, ...errorResponses(403, 404) },
      }),
      async (req) => setVerificationConfig(ctx, userOf(req).userId, req.params.id, req.body),
    );
    r.post(
      '/v1/services/:id/unpublish',
      op('publishing.unpublish', 'Remove the service from the marketplace', {
        params,
        response: { 200: PublishStatusSchema, ...errorResponses(403, 404, 409) },
      }),
      async (req) => unpublish(ctx, userOf(req).userId, req.params.id),
    );
    r.patch(
      '/v1/services/:serviceId/tools/:toolId/rename',
      op('publishing.renameTool', 'Rename a tool (the old name stays an alias for execution)', {
        params: ToolParams,
        body: RenameBody,
        response: { 200: ToolSchema, ...errorResponses(403, 404, 409) },
      }),
      async (req) => renameTool(ctx, userOf(req).userId, req.params.serviceId, req.params.toolId, req.body.name),
    );
    r.get(
      '/owner/services/:id/reports',
      op('publishing.listReports', 'Reports on the caller’s service', {
        params,
        querystring: ReportsQuery,
        response: { 200: ListOf(ReportSchema), ...errorResponses(403, 404) },
      }),
      async (req) => listServiceReports(ctx, userOf(req).userId, req.params.id, req.query),
    );
    r.post(
      '/owner/services/:id/reports/:reportId/resolve',
      op('publishing.resolveReport', 'Resolve a report (a degraded tool recovers below the threshold)', {
        params: ReportParams,
        response: { 200: ReportResultSchema, ...errorResponses(403, 404) },
      }),
      async (req) => resolveReport(ctx, userOf(req).userId, req.params.id, req.params.reportId),
    );
  });

  // Reports: any authenticated principal (agents report for their owner's account).
  await app.register(async (any) => {
    requireAuth(any, ctx.auth);
    const r = any.withTypeProvider<TypeBoxTypeProvider>();
    r.post(
      '/v1/services/:id/report',
      op('publishing.report', 'Report a broken tool or service (one open report per user per tool)', {
        params: ServiceParams,
        body: ReportBody,
        response: { 201: ReportResultSchema, ...errorResponses(404, 409) },
      }),
      async (req, reply) => created(reply, reportService(ctx, accountOf(principalOf(req)), req.params.id, req.body)),
    );
  });
}
