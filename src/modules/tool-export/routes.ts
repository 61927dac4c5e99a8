/**
 * HTTP routes of the tool export: `GET /v1/tools/export` (the caller's subscribed tools as OpenAI,
 * Anthropic or Gemini function definitions) and `POST /v1/tools/call` (the model's tool call, run
 * through the execute path). Users, API keys and agents (an agent gets its own subscriptions).
 */
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';
import { principalOf } from '../../http/auth.js';
import { authScope } from '../../http/operations.js';
import { USER_SECURITY, errorResponses } from '../../http/schemas.js';
import { CallBody, CallQuery, CallResultSchema, ExportQuery, ExportResultSchema } from './schemas.js';
import { callExportedTool, exportTools } from './service.js';

export async function toolExportRoutes(app: FastifyInstance, { ctx }: { ctx: AppContext }): Promise<void> {
  const { r, op } = authScope(app, ctx.auth, { tags: ['tools'], security: USER_SECURITY });

  r.get(
    '/v1/tools/export',
    op('tools.export', "The caller's subscribed tools as function definitions for a model API", {
      querystring: ExportQuery,
      response: { 200: ExportResultSchema, ...errorResponses(403) },
    }),
    async (req) => exportTools(ctx, principalOf(req), req.query.format),
  );

  r.post(
    '/v1/tools/call',
    op(
      'tools.call',
      "Run a model's tool call (OpenAI, Anthropic or Gemini shape) and answer the result message for the model",
      {
        description:
          'The same execution as POST /v1/agents/{id}/execute (scope, subscription, quota, upstream, recording). ' +
          'Without `session_id` the call is recorded in a new session, whose id is in the answer. Quota headers as for execute.',
        querystring: CallQuery,
        body: CallBody,
        response: { 200: CallResultSchema, ...errorResponses(403, 404, 409, 502, 504) },
      },
    ),
    async (req, reply) => {
      const { answer, headers } = await callExportedTool(ctx, principalOf(req), req.body, req.query.session_id);
      reply.headers(headers);
      return answer;
    },
  );
}
