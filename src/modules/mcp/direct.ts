/**
 * The common `POST /mcp` — one JSON-RPC request (`tools/call`, `tools/list`, `ping`…) after
 * `initialize`, with the headers the Streamable HTTP transport requires — handed to the SDK
 * `Server` through a one-request in-process {@link Transport}, its JSON-RPC response written as
 * `application/json` (MCP spec 2025-06-18 "Transports" §Sending Messages to the Server: a server
 * may answer a POSTed request with one JSON object).
 *
 * Nothing is decided here that the SDK's `WebStandardStreamableHTTPServerTransport` would answer
 * otherwise: {@link directRequest} only picks requests that transport would accept (Accept lists
 * both `application/json` and `text/event-stream`, JSON Content-Type, a supported
 * `MCP-Protocol-Version` or none, one valid JSON-RPC request that is not `initialize`), and its
 * JSON response mode answers them with exactly this 200 and body. Everything else — initialize,
 * notifications, batches, every error — still goes through the SDK transport (transport.ts).
 * Reason: that transport works on Web `Request`/`Response` objects, and building them and reading
 * the body back cost more CPU per `execute_tool` call than the rest of the MCP layer together
 * (`npm run bench:mcp`, see docs/adr/0250-mcp-direct-a-post-mcp-carrying-one.md).
 */
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { isJsonContentType } from '@modelcontextprotocol/sdk/shared/mediaType.js';
import {
  JSONRPCRequestSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
  type JSONRPCMessage,
  type JSONRPCRequest,
  type MessageExtraInfo,
} from '@modelcontextprotocol/sdk/types.js';

/**
 * `body` as one JSON-RPC request when the SDK's Streamable HTTP transport (stateless, JSON
 * responses) would accept the POST and answer it with a single JSON response; undefined
 * otherwise (the caller hands the POST to that transport, which answers it or its error).
 */
export function directRequest(headers: IncomingHttpHeaders, body: unknown): JSONRPCRequest | undefined {
  const accept = headers.accept;
  if (!accept?.includes('application/json') || !accept.includes('text/event-stream')) return undefined;
  if (!isJsonContentType(headers['content-type'])) return undefined;
  const version = headers['mcp-protocol-version'];
  if (version !== undefined && (typeof version !== 'string' || !SUPPORTED_PROTOCOL_VERSIONS.includes(version)))
    return undefined;
  if (typeof body !== 'object' || body === null || (body as { method?: unknown }).method === 'initialize')
    return undefined;
  const parsed = JSONRPCRequestSchema.safeParse(body);
  return parsed.success ? (parsed.data as JSONRPCRequest) : undefined;
}

/**
 * An SDK {@link Transport} that carries one request in and its response out: {@link deliver}
 * passes the request to the connected server, {@link response} resolves with the first JSON-RPC
 * response (result or error) the server sends. Server notifications tied to the request are
 * dropped, as in the SDK transport's JSON response mode (there is no stream to carry them).
 */
export class OneRequestTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;
  /** Stateless: no transport session (the `Mcp-Session-Id` is the platform's, see sessions.ts). */
  sessionId = undefined;
  private resolve!: (message: JSONRPCMessage | undefined) => void;
  /** The server's JSON-RPC response to the delivered request; undefined when closed before it (client gone). */
  readonly response = new Promise<JSONRPCMessage | undefined>((resolve) => {
    this.resolve = resolve;
  });
  private closed = false;

  async start(): Promise<void> {}

  async send(message: JSONRPCMessage): Promise<void> {
    if ('id' in message && ('result' in message || 'error' in message)) this.resolve(message);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.onclose?.();
    this.resolve(undefined);
  }

  /** Hand `request` to the server, with the HTTP request's headers as `requestInfo` (no URL: no tool reads it). */
  deliver(request: JSONRPCRequest, headers: IncomingHttpHeaders): void {
    this.onmessage?.(request, { requestInfo: { headers } });
  }
}

/** Write a JSON-RPC response as the SDK's JSON response mode does: 200, `application/json`. */
export function writeJsonRpc(res: ServerResponse, message: JSONRPCMessage): void {
  const payload = JSON.stringify(message);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) });
  res.end(payload);
}
