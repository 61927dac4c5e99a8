/** HTTP routes of the api-keys module (spec group "API keys"). */
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { AppContext } from '../../context.js';
import { userOf } from '../../http/auth.js';
import { authScope, created, noContent } from '../../http/operations.js';
import { IdParams, ListOf, PageQuery, USER_SECURITY, errorResponses } from '../../http/schemas.js';
import { ApiKeySchema, CreateApiKeyBody, CreatedApiKeySchema } from './schemas.js';
import { createApiKey, listApiKeys, revokeApiKey } from './service.js';

export async function apiKeyRoutes(app: FastifyInstance, { ctx }: { ctx: AppContext }): Promise<void> {
  const { r, op } = authScope(app, ctx.auth, { principals: ['user'], tags: ['api-keys'], security: USER_SECURITY });

  r.get(
    '/api-keys',
    op('apiKeys.list', "List the user's API keys", {
      querystring: PageQuery,
      response: { 200: ListOf(ApiKeySchema), ...errorResponses(403) },
    }),
    async (req) => listApiKeys(ctx, userOf(req), req.query),
  );
  r.post(
    '/api-keys',
    op('apiKeys.create', 'Create an API key (the key is shown once); never broader than the creating credential', {
      body: CreateApiKeyBody,
      response: { 201: CreatedApiKeySchema, ...errorResponses(403) },
    }),
    async (req, reply) => created(reply, createApiKey(ctx, userOf(req), req.body), { noStore: true }),
  );
  r.delete(
    '/api-keys/:id',
    op('apiKeys.revoke', 'Revoke an API key', {
      params: IdParams,
      response: { 204: Type.Null(), ...errorResponses(403, 404) },
    }),
    async (req, reply) => noContent(reply, revokeApiKey(ctx, userOf(req), req.params.id)),
  );
}
