/** HTTP routes of the api-keys module (spec group "API keys"). */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AppContext } from '../../context.js';
import { requireAuth, userOf } from '../../http/auth.js';
import { IdParams, ListOf, PageQuery, USER_SECURITY, errorResponses } from '../../http/schemas.js';
import { ApiKeySchema, CreateApiKeyBody, CreatedApiKeySchema } from './schemas.js';
import { createApiKey, listApiKeys, revokeApiKey } from './service.js';

export async function apiKeyRoutes(app: FastifyInstance, { ctx }: { ctx: AppContext }): Promise<void> {
  requireAuth(app, ctx.auth, { principals: ['user'] });
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['api-keys'];
  const security = USER_SECURITY;

  r.get(
    '/api-keys',
    { schema: { tags, security, operationId: 'apiKeys.list', summary: "List the user's API keys", querystring: PageQuery, response: { 200: ListOf(ApiKeySchema), ...errorResponses(403) } } },
    async (req) => listApiKeys(ctx, userOf(req).userId, req.query),
  );
  r.post(
    '/api-keys',
    { schema: { tags, security, operationId: 'apiKeys.create', summary: 'Create an API key (the key is shown once)', body: CreateApiKeyBody, response: { 201: CreatedApiKeySchema, ...errorResponses(403) } } },
    async (req, reply) => {
      reply.header('cache-control', 'no-store');
      return reply.code(201).send(await createApiKey(ctx, userOf(req).userId, req.body));
    },
  );
  r.delete(
    '/api-keys/:id',
    { schema: { tags, security, operationId: 'apiKeys.revoke', summary: 'Revoke an API key', params: IdParams, response: { 204: Type.Null(), ...errorResponses(403, 404) } } },
    async (req, reply) => {
      await revokeApiKey(ctx, userOf(req).userId, req.params.id);
      return reply.code(204).send(null);
    },
  );
}
