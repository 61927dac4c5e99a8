/**
 * HTTP routes of the approvals module (`/v1/approvals`): list, read, approve, deny. Users (token
 * or API key) and agents (their own requests, read only) may read; only users reach approve/deny; who may decide is checked
 * in `service.ts`.
 */
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';
import { principalOf } from '../../http/auth.js';
import { authScope } from '../../http/operations.js';
import { IdParams, ListOf, USER_SECURITY, errorResponses } from '../../http/schemas.js';
import { ApprovalListQuery, ApprovalSchema, DenyBody } from './schemas.js';
import { decideApproval, getApproval, listApprovals } from './service.js';

export async function approvalRoutes(app: FastifyInstance, { ctx }: { ctx: AppContext }): Promise<void> {
  const { r, op } = authScope(app, ctx.auth, { tags: ['approvals'], security: USER_SECURITY });
  r.get(
    '/v1/approvals',
    op('approvals.list', "The account's approval requests of held tool calls, newest first", {
      description: 'An agent token sees only the requests of its own calls.',
      querystring: ApprovalListQuery,
      response: { 200: ListOf(ApprovalSchema), ...errorResponses(400) },
    }),
    async (req) => listApprovals(ctx, principalOf(req), req.query),
  );
  r.get(
    '/v1/approvals/:id',
    op(
      'approvals.get',
      'One approval request: the held call (service, tool, arguments, agent, policies) and its state',
      {
        params: IdParams,
        response: { 200: ApprovalSchema, ...errorResponses(404) },
      },
    ),
    async (req) => getApproval(ctx, principalOf(req), req.params.id),
  );
  // Deciding is for users: declared here so the route answers agents 403 before the handler (the
  // service refuses them too, for every other caller of decideApproval).
  await app.register(async (scope) => {
    const { r: users, op: userOp } = authScope(scope, ctx.auth, {
      principals: ['user'],
      tags: ['approvals'],
      security: USER_SECURITY,
    });
    users.post(
      '/v1/approvals/:id/approve',
      userOp('approvals.approve', 'Approve a pending call: the caller may then re-submit it once with approval_id', {
        description: 'Needs a user of the account with the `approvals:decide` scope; agents never decide.',
        params: IdParams,
        response: { 200: ApprovalSchema, ...errorResponses(403, 404, 409) },
      }),
      async (req) => decideApproval(ctx, principalOf(req), req.params.id, 'approved'),
    );
    users.post(
      '/v1/approvals/:id/deny',
      userOp('approvals.deny', 'Deny a pending call (optional reason, shown to the caller)', {
        description: 'Needs a user of the account with the `approvals:decide` scope; agents never decide.',
        params: IdParams,
        body: DenyBody,
        response: { 200: ApprovalSchema, ...errorResponses(403, 404, 409) },
      }),
      async (req) => decideApproval(ctx, principalOf(req), req.params.id, 'denied', req.body?.reason),
    );
  });
}
