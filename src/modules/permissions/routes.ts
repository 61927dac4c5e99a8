/**
 * HTTP routes of the permissions module: grants of an agent's memory to other agents. Callable by
 * the owner user of `:id` or by agent `:id` itself; anybody else gets 404.
 */
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { AppContext } from '../../context.js';
import { principalOf } from '../../http/auth.js';
import { authScope, created, noContent } from '../../http/operations.js';
import { IdParams, USER_SECURITY, ListOf, PageQuery, errorResponses } from '../../http/schemas.js';
import { CreatePermissionBody, PermissionParams, PermissionSchema } from './schemas.js';
import { createPermission, listGrants, listPermissions, revokePermission } from './service.js';

export async function permissionRoutes(app: FastifyInstance, { ctx }: { ctx: AppContext }): Promise<void> {
  const { r, op } = authScope(app, ctx.auth, { tags: ['agent-permissions'], security: USER_SECURITY }); // owner users (token or API key) and agents

  r.post(
    '/v2/agents/:id/permissions',
    op('permissions.create', "Grant another agent (any account's) read or write access to this agent's memory", {
      params: IdParams,
      body: CreatePermissionBody,
      response: { 201: PermissionSchema, ...errorResponses(403, 404) },
    }),
    async (req, reply) => created(reply, createPermission(ctx, principalOf(req), req.params.id, req.body)),
  );
  r.get(
    '/v2/agents/:id/permissions',
    op('permissions.list', "Live grants on this agent's memory (who may access it)", {
      params: IdParams,
      querystring: PageQuery,
      response: { 200: ListOf(PermissionSchema), ...errorResponses(403, 404) },
    }),
    async (req) => listPermissions(ctx, principalOf(req), req.params.id, req.query),
  );
  r.get(
    '/v2/agents/:id/grants',
    op('permissions.grants', 'Live grants this agent holds (what it may access)', {
      params: IdParams,
      querystring: PageQuery,
      response: { 200: ListOf(PermissionSchema), ...errorResponses(403, 404) },
    }),
    async (req) => listGrants(ctx, principalOf(req), req.params.id, req.query),
  );
  r.delete(
    '/v2/agents/:id/permissions/:permId',
    op('permissions.revoke', 'Revoke a grant (effective immediately)', {
      params: PermissionParams,
      response: { 204: Type.Null(), ...errorResponses(403, 404) },
    }),
    async (req, reply) => noContent(reply, revokePermission(ctx, principalOf(req), req.params.id, req.params.permId)),
  );
}
