/**
 * HTTP routes of the mcp module: the MCP endpoint `POST/GET/DELETE /mcp` (Streamable HTTP) for
 * users (access token or API key) and agents (agent token), and its OAuth 2.0 Protected Resource
 * Metadata (RFC 9728) for MCP clients that sign in by themselves (MCP spec "Authorization").
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AppContext } from '../../context.js';
import { actorOf, principalOf, requireAuth } from '../../http/auth.js';
import { PUBLIC_SECURITY, USER_SECURITY, errorResponses } from '../../http/schemas.js';
import { closeSession } from '../sessions/service.js';
import { protectedResourceMetadata, mcpResourceUrl, resourceMetadataUrl } from './metadata.js';
import { SESSION_HEADER, closeMcpSession, findMcpSession, purgeExpiredMcpSessions } from './sessions.js';
import type { OpenStreams } from './transport.js';

const McpQuery = Type.Object({
  expose_tools: Type.Optional(
    Type.Boolean({
      description:
        'list each subscribed tool as its own MCP tool (<service>__<tool>); default MCP_EXPOSE_SUBSCRIBED_TOOLS',
    }),
  ),
});

const Metadata = Type.Object(
  {
    resource: Type.String(),
    authorization_servers: Type.Array(Type.String()),
    bearer_methods_supported: Type.Array(Type.String()),
    scopes_supported: Type.Optional(Type.Array(Type.String())),
    resource_name: Type.String(),
    resource_documentation: Type.String(),
  },
  { additionalProperties: true },
);

/** A JSON-RPC 2.0 error answer without a request id (transport-level faults of MCP, e.g. an unknown session). */
const JsonRpcError = Type.Object({
  jsonrpc: Type.Literal('2.0'),
  error: Type.Object({ code: Type.Integer(), message: Type.String() }),
  id: Type.Null(),
});

/**
 * The transport and the MCP SDK behind it are loaded by the first `/mcp` request, not at start-up
 * (the SDK is a sizeable part of start-up that most processes never use).
 */
let transportModule: Promise<typeof import('./transport.js')> | undefined;
const transport = () => (transportModule ??= import('./transport.js'));

export async function mcpRoutes(app: FastifyInstance, { ctx }: { ctx: AppContext }): Promise<void> {
  const resource = mcpResourceUrl(ctx.config);
  const metadataUrl = resourceMetadataUrl(ctx.config);
  const streams: OpenStreams = new Set();
  app.addHook('preClose', async () => {
    for (const end of [...streams]) end();
  });
  const timer = setInterval(() => {
    purgeExpiredMcpSessions(ctx).catch((err: Error) => ctx.log.warn({ err: err.message }, 'mcp session purge failed'));
  }, 60 * 60_000);
  timer.unref();
  ctx.onClose.push(() => clearInterval(timer));

  // RFC 9728 §3: at the well-known URI suffixed with the resource's path, and at the root.
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  for (const url of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
    r.get(
      url,
      {
        schema: {
          tags: ['mcp'],
          operationId: url.endsWith('/mcp') ? 'mcp.resourceMetadata' : 'mcp.resourceMetadataRoot',
          summary: 'OAuth 2.0 Protected Resource Metadata of /mcp (RFC 9728)',
          security: PUBLIC_SECURITY,
          response: { 200: Metadata, ...errorResponses() },
        },
      },
      async (_req, reply) =>
        reply.header('cache-control', 'public, max-age=300').send(protectedResourceMetadata(ctx.config)),
    );
  }

  await app.register(async (scope) => {
    requireAuth(scope, ctx.auth, { resource });
    // MCP "Authorization" §Protected Resource Metadata Discovery: every 401 names the metadata.
    scope.addHook('onSend', async (_req, reply, payload) => {
      if (reply.statusCode === 401) {
        const current = String(reply.getHeader('www-authenticate') ?? 'Bearer');
        reply.header(
          'www-authenticate',
          current.replace(/^Bearer\b\s*/i, `Bearer resource_metadata="${metadataUrl}", `).replace(/,\s*$/, ''),
        );
      }
      return payload;
    });
    const s = scope.withTypeProvider<TypeBoxTypeProvider>();
    const tags = ['mcp'];
    const security = USER_SECURITY;
    const description =
      'MCP Streamable HTTP transport (JSON-RPC 2.0). Use an MCP client; see README "Connect an MCP client".';

    s.post(
      '/mcp',
      {
        schema: {
          tags,
          security,
          operationId: 'mcp.post',
          summary: 'Send an MCP message',
          description,
          querystring: McpQuery,
          body: Type.Unknown(),
          response: { 200: Type.Unknown({ description: 'the JSON-RPC answer' }), ...errorResponses(401, 403) },
        },
      },
      async (req, reply) => (await transport()).handlePost(ctx, req, reply, principalOf(req), req.query.expose_tools),
    );
    s.get(
      '/mcp',
      {
        schema: {
          tags,
          security,
          operationId: 'mcp.stream',
          summary: 'Open the server-to-client stream (notifications/tools/list_changed)',
          description,
          response: {
            200: Type.Unknown({ description: 'text/event-stream of notifications' }),
            ...errorResponses(401, 403),
          },
        },
      },
      async (req, reply) => (await transport()).handleGet(ctx, req, reply, principalOf(req), streams),
    );
    s.delete(
      '/mcp',
      {
        schema: {
          tags,
          security,
          operationId: 'mcp.delete',
          summary: 'End an MCP session',
          description,
          response: { ...errorResponses(401, 403), 204: Type.Null(), 400: JsonRpcError, 404: JsonRpcError },
        },
      },
      async (req, reply) => {
        const sid = req.headers[SESSION_HEADER];
        if (typeof sid !== 'string' || !sid)
          return reply.code(400).send({
            jsonrpc: '2.0' as const,
            error: { code: -32600, message: 'Mcp-Session-Id header required' },
            id: null,
          });
        const actor = actorOf(principalOf(req));
        const session = await findMcpSession(ctx, actor, sid).catch(() => null);
        if (!session)
          return reply.code(404).send({
            jsonrpc: '2.0' as const,
            error: { code: -32001, message: 'MCP session not found or expired' },
            id: null,
          });
        await closeMcpSession(ctx, actor, sid);
        if (session.platformSessionId) await closeSession(ctx, actor, session.platformSessionId);
        return reply.code(204).send(null);
      },
    );
  });
}
