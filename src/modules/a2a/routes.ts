/**
 * HTTP routes of the a2a module:
 *
 * - `GET /a2a/agents/:agent_id/.well-known/agent-card.json` — the agent card of a published agent
 *   (A2A v1 JSON; no credential: discovery is public while published, 404 otherwise).
 * - `POST /a2a/agents/:agent_id` — the A2A JSON-RPC 2.0 endpoint (SSE for the streaming methods),
 *   for whoever may invoke the agent (401 without a credential, 404 for an agent outside the
 *   caller's scope or not published). `A2A-Version: 1.0` selects the v1 methods (`SendMessage`,
 *   `SendStreamingMessage`, `GetTask`, `CancelTask`, `SubscribeToTask`); no header or `0.3` the
 *   v0.3 ones (`message/send`, `message/stream`, `tasks/get`, `tasks/cancel`, `tasks/resubscribe`),
 *   through the SDK's compatibility layer.
 * - `GET|PUT /v2/agents/:id/a2a` — whether the agent is published; publish or withdraw it (owner).
 */
import { A2A_VERSION_HEADER, AgentCard } from '@a2a-js/sdk';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import { JsonRpcTransportHandler, ServerCallContext } from '@a2a-js/sdk/server';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AppContext } from '../../context.js';
import { principalOf } from '../../http/auth.js';
import { authScope, operations } from '../../http/operations.js';
import { BEARER_SECURITY, IdParams, PUBLIC_SECURITY, USER_SECURITY, errorResponses } from '../../http/schemas.js';
import { buildCard } from './card.js';
import { PlatformA2AHandler } from './handler.js';
import { AgentParams, PublicationBody, PublicationSchema } from './schemas.js';
import { a2aTarget, getPublication, publishedAgent, setPublication } from './service.js';

/** Largest JSON-RPC request body, bytes. */
const MAX_RPC_BYTES = 1024 * 1024;

type Envelope = { jsonrpc: string; id: string | number | null; result?: unknown; error?: unknown };

/** Write `stream`'s envelopes as SSE `data:` events (A2A §9.4.2) until it ends or the client leaves. */
async function sendStream(req: FastifyRequest, reply: FastifyReply, stream: AsyncGenerator<Envelope>): Promise<void> {
  // The first event decides: an error before it is a plain JSON-RPC answer.
  let first: IteratorResult<Envelope>;
  try {
    first = await stream.next();
  } catch (err) {
    return void reply.code(200).send({ jsonrpc: '2.0', id: rpcId(req), error: errorOf(err) });
  }
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  let gone = false;
  req.raw.on('close', () => {
    gone = true;
    void stream.return(undefined);
  });
  try {
    if (!first.done) res.write(`data: ${JSON.stringify(first.value)}\n\n`);
    while (!gone) {
      const next = await stream.next();
      if (next.done) break;
      res.write(`data: ${JSON.stringify(next.value)}\n\n`);
    }
  } catch (err) {
    if (!gone)
      res.write(`event: error\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: rpcId(req), error: errorOf(err) })}\n\n`);
  } finally {
    res.end();
  }
}

function rpcId(req: FastifyRequest): string | number | null {
  try {
    const id = (JSON.parse(String(req.body)) as { id?: unknown }).id;
    return typeof id === 'string' || typeof id === 'number' ? id : null;
  } catch {
    return null;
  }
}

function errorOf(err: unknown) {
  return JsonRpcTransportHandler.mapToJSONRPCError(err);
}

/** Register the a2a module's routes (card, JSON-RPC endpoint, publication) on `app`. */
export async function a2aRoutes(app: FastifyInstance, { ctx }: { ctx: AppContext }): Promise<void> {
  // Public discovery.
  await app.register(async (scope) => {
    const op = operations(['a2a'], PUBLIC_SECURITY);
    scope.withTypeProvider<TypeBoxTypeProvider>().get(
      '/a2a/agents/:agent_id/.well-known/agent-card.json',
      op('a2a.card', 'The A2A v1 agent card of a published agent (404 unless published)', {
        params: AgentParams,
        response: { 200: Type.Unknown({ description: 'AgentCard (A2A v1 JSON)' }), ...errorResponses(404) },
      }),
      async (req, reply) => {
        const agent = await publishedAgent(ctx, req.params.agent_id);
        reply.header('cache-control', 'public, max-age=60');
        return AgentCard.toJSON(await buildCard(ctx, agent));
      },
    );
  });

  // The JSON-RPC endpoint, for callers who may invoke the agent.
  await app.register(async (scope) => {
    // The body stays text: invalid JSON is answered as a JSON-RPC parse error (-32700), not a problem.
    scope.removeContentTypeParser('application/json');
    scope.addContentTypeParser(
      ['application/json', 'application/a2a+json'],
      { parseAs: 'string', bodyLimit: MAX_RPC_BYTES },
      (_req, body, done) => done(null, body),
    );
    const { r, op } = authScope(scope, ctx.auth, {
      principals: ['user', 'agent'],
      tags: ['a2a'],
      security: [...USER_SECURITY, ...BEARER_SECURITY],
    });
    r.post(
      '/a2a/agents/:agent_id',
      {
        bodyLimit: MAX_RPC_BYTES,
        ...op(
          'a2a.rpc',
          'A2A JSON-RPC 2.0 (v1 methods with A2A-Version: 1.0, v0.3 methods otherwise); SSE for the streaming methods',
          {
            params: AgentParams,
            body: Type.Unknown({ description: 'a JSON-RPC 2.0 request' }),
            response: { 200: Type.Unknown({ description: 'a JSON-RPC 2.0 response' }), ...errorResponses(401, 404) },
          },
        ),
      },
      async (req, reply) => {
        const p = principalOf(req);
        const agent = await a2aTarget(ctx, p, req.params.agent_id);
        const handler = new PlatformA2AHandler(ctx, p, agent.id, await buildCard(ctx, agent));
        const version = req.headers[A2A_VERSION_HEADER.toLowerCase()];
        const requested = typeof version === 'string' && version.trim() ? version.trim() : '0.3';
        const context = new ServerCallContext({ requestedVersion: requested });
        const legacy = requested === '0.3' || requested.startsWith('0.3.');
        if (!legacy && requested !== '1.0' && !requested.startsWith('1.0.')) {
          return reply.code(200).send({
            jsonrpc: '2.0',
            id: rpcId(req),
            error: { code: -32009, message: `A2A version ${requested} is not supported (1.0 and 0.3 are)` },
          });
        }
        let body: Record<string, unknown>;
        try {
          body = JSON.parse(String(req.body ?? ''));
        } catch {
          // JSON-RPC 2.0 §5.1: invalid JSON is a parse error.
          return reply.code(200).send({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
        }
        const out = legacy
          ? await new LegacyJsonRpcTransportHandler(handler).handle(body, context)
          : await new JsonRpcTransportHandler(handler).handle(body, context);
        if (out && typeof (out as AsyncGenerator)[Symbol.asyncIterator] === 'function')
          return sendStream(req, reply, out as AsyncGenerator<Envelope>);
        return reply.code(200).send(out);
      },
    );
  });

  // Publication, for the agent's owner.
  await app.register(async (scope) => {
    const { r, op } = authScope(scope, ctx.auth, { principals: ['user'], tags: ['a2a'], security: USER_SECURITY });
    r.get(
      '/v2/agents/:id/a2a',
      op('a2a.get', 'Whether the agent is published over A2A, with its A2A URLs', {
        params: IdParams,
        response: { 200: PublicationSchema, ...errorResponses(404) },
      }),
      async (req) => getPublication(ctx, principalOf(req), req.params.id),
    );
    r.put(
      '/v2/agents/:id/a2a',
      op('a2a.publish', 'Publish the agent over A2A (enabled: true) or withdraw it (enabled: false)', {
        params: IdParams,
        body: PublicationBody,
        response: { 200: PublicationSchema, ...errorResponses(400, 404) },
      }),
      async (req) => setPublication(ctx, principalOf(req), req.params.id, req.body.enabled),
    );
  });
}
