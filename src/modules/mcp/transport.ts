/**
 * Streamable HTTP (MCP spec 2025-06-18 / 2025-11-25 "Transports") inside Fastify, stateless on
 * every instance: each `POST /mcp` gets a fresh SDK server + transport (JSON responses, no
 * per-instance state); the `Mcp-Session-Id` is a row of `mcp_sessions` (see sessions.ts) that
 * any instance serves. A single JSON-RPC request takes the direct path (direct.ts: the SDK server
 * over a one-request in-process transport); everything else — initialize, notifications,
 * batches, transport faults — the SDK's web-standard transport, fed the body Fastify already
 * parsed and a body-less Web `Request` of the headers, its Web `Response` written to the socket
 * here (the SDK's Node wrapper converts both ways through @hono/node-server, which cost more CPU
 * per `execute_tool` call than the SDK server itself in `npm run bench:mcp`). `GET /mcp` is this
 * module's own SSE stream that only carries `notifications/tools/list_changed` (polled from the
 * database, so a change made through any instance reaches it).
 */
import type { ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { isInitializeRequest, LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import type { AppContext } from '../../context.js';
import { AppError } from '../../http/errors.js';
import { actorOf, type Principal } from '../../http/auth.js';
import { exposedTools, toolListFingerprint } from './catalog.js';
import { mcpResourceUrl } from './metadata.js';
import { directRequest, OneRequestTransport, writeJsonRpc } from './direct.js';
import { buildServer } from './server.js';
import { SESSION_HEADER, findMcpSession, openMcpSession, type McpSessionRow } from './sessions.js';
import type { McpCall } from './tools.js';

/** `?expose_tools=` of the connection URL; undefined when absent. */
export type ExposeFlag = boolean | undefined;

function jsonRpcError(
  reply: FastifyReply,
  status: number,
  code: number,
  message: string,
  id: unknown = null,
): FastifyReply {
  return reply.code(status).type('application/json').send({ jsonrpc: '2.0', error: { code, message }, id });
}

function sessionIdOf(req: FastifyRequest): string | undefined {
  const v = req.headers[SESSION_HEADER];
  return typeof v === 'string' && v ? v : undefined;
}

/** The session named by the request, or null when none; 404 (JSON-RPC error) answered when unknown. */
async function sessionOf(
  ctx: AppContext,
  req: FastifyRequest,
  reply: FastifyReply,
  principal: Principal,
): Promise<McpSessionRow | null | 'answered'> {
  const sid = sessionIdOf(req);
  if (!sid) return null;
  try {
    return await findMcpSession(ctx, actorOf(principal), sid);
  } catch (err) {
    if (err instanceof AppError && err.code === 'not_found') {
      jsonRpcError(reply, 404, -32001, err.message, (req.body as { id?: unknown } | undefined)?.id ?? null);
      return 'answered';
    }
    throw err;
  }
}

/** Handle `POST /mcp` for `principal`. */
export async function handlePost(
  ctx: AppContext,
  req: FastifyRequest,
  reply: FastifyReply,
  principal: Principal,
  exposeFlag: ExposeFlag,
): Promise<FastifyReply | void> {
  const actor = actorOf(principal);
  const body = req.body;
  let session: McpSessionRow | null;
  if ((body as { method?: unknown } | null)?.method === 'initialize' && isInitializeRequest(body)) {
    if (sessionIdOf(req))
      return jsonRpcError(
        reply,
        400,
        -32600,
        'initialize must not carry Mcp-Session-Id',
        (body as { id?: unknown }).id,
      );
    const p = body.params;
    session = await openMcpSession(
      ctx,
      actor,
      {
        name: p.clientInfo.name,
        version: p.clientInfo.version,
        protocolVersion: p.protocolVersion || LATEST_PROTOCOL_VERSION,
        elicitationUrl: p.capabilities?.elicitation?.url !== undefined,
      },
      exposeFlag ?? ctx.config.mcp.exposeSubscribedTools,
    );
  } else {
    const found = await sessionOf(ctx, req, reply, principal);
    if (found === 'answered') return reply;
    session = found;
  }
  const call: McpCall = {
    principal,
    actor,
    session,
    expose: session?.exposeTools ?? exposeFlag ?? ctx.config.mcp.exposeSubscribedTools,
  };

  // From here the response is written on the raw socket.
  reply.hijack();
  const res = reply.raw;
  for (const [k, v] of Object.entries(reply.getHeaders())) if (v !== undefined) res.setHeader(k, v as string);
  if (session) res.setHeader(SESSION_HEADER, session.id);
  const server = buildServer(ctx, call);
  let answered = false;
  res.on('close', () => {
    // Closing aborts a request still in flight (Protocol.close; it closes its transport too). A
    // server that has answered its one direct request holds nothing that needs it.
    if (!answered) void server.close();
  });
  try {
    const request = directRequest(req.headers, body);
    if (request) {
      const transport = new OneRequestTransport();
      await server.connect(transport);
      transport.deliver(request, req.headers);
      const answer = await transport.response;
      if (answer) {
        answered = true;
        writeJsonRpc(res, answer);
      }
      return;
    }
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    await server.connect(transport);
    await writeResponse(res, await transport.handleRequest(webRequest(ctx, req), { parsedBody: body }));
  } catch (err) {
    ctx.log.error({ err }, 'mcp transport failed');
    if (!res.headersSent) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          jsonrpc: '2.0',
          error: { code: -32603, message: 'Internal error; it was logged' },
          id: (body as { id?: unknown } | undefined)?.id ?? null,
        }),
      );
    } else res.end();
  }
}

/**
 * The Web `Request` the SDK's web-standard transport reads for a POST whose body Fastify has
 * already parsed: method, headers and URL only (no body). The URL is resolved against the
 * configured public `/mcp` URL, never the client's Host header (the SDK only hands it to request
 * handlers as `requestInfo.url`, which the platform's tools do not read).
 */
function webRequest(ctx: AppContext, req: FastifyRequest): Request {
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (typeof v === 'string') headers.set(k, v);
    else if (v) for (const x of v) headers.append(k, x);
  }
  return new Request(new URL(req.url, mcpResourceUrl(ctx.config)), { method: req.method, headers });
}

/**
 * Write the transport's answer to `res`. With `enableJsonResponse` a POST is always answered by a
 * complete body (a JSON-RPC response or error, or none for 202), never an SSE stream, so it is
 * read whole and sent with its length.
 */
async function writeResponse(res: ServerResponse, response: Response): Promise<void> {
  const headers: Record<string, string> = {};
  response.headers.forEach((v, k) => {
    headers[k] = v;
  });
  const payload = response.body ? Buffer.from(await response.arrayBuffer()) : undefined;
  if (payload) headers['content-length'] = String(payload.length);
  res.writeHead(response.status, headers);
  res.end(payload);
}

/** Open `GET /mcp` streams, ended when the app closes. */
export type OpenStreams = Set<() => void>;

/**
 * Handle `GET /mcp`: an SSE stream for server-to-client messages. It carries only
 * `notifications/tools/list_changed`, so it is offered to sessions that list subscribed tools;
 * others get 405 (allowed by the spec when the server offers no stream).
 */
export async function handleGet(
  ctx: AppContext,
  req: FastifyRequest,
  reply: FastifyReply,
  principal: Principal,
  streams: OpenStreams,
): Promise<FastifyReply | void> {
  const found = await sessionOf(ctx, req, reply, principal);
  if (found === 'answered') return reply;
  if (!found?.exposeTools)
    return reply
      .code(405)
      .header('allow', 'POST, DELETE')
      .type('application/json')
      .send({
        jsonrpc: '2.0',
        error: { code: -32000, message: 'This session has no server-to-client stream (tools are not exposed)' },
        id: null,
      });
  const actor = actorOf(principal);
  let fingerprint = toolListFingerprint(await exposedTools(ctx, actor));

  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-request-id': String(req.id),
    [SESSION_HEADER]: found.id,
  });
  res.write(': stream open\n\n');
  let polling = false;
  let ticks = 0;
  const timer = setInterval(async () => {
    if (polling) return;
    polling = true;
    try {
      const now = toolListFingerprint(await exposedTools(ctx, actor));
      if (now !== fingerprint) {
        fingerprint = now;
        res.write(
          `event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' })}\n\n`,
        );
      } else if (++ticks * ctx.config.mcp.listChangedPollMs >= 25_000) {
        ticks = 0;
        res.write(': keep-alive\n\n');
      }
    } catch (err) {
      ctx.log.warn({ err: (err as Error).message }, 'mcp list_changed poll failed');
    } finally {
      polling = false;
    }
  }, ctx.config.mcp.listChangedPollMs);
  const end = () => {
    clearInterval(timer);
    streams.delete(end);
    if (!res.writableEnded) res.end();
  };
  streams.add(end);
  res.on('close', end);
}
