/**
 * Model Context Protocol client (Streamable HTTP transport, MCP spec 2025-06-18 "Transports")
 * over the guarded HTTP client: every request of the SDK transport goes through
 * {@link guardedFetch}, so SSRF checks, timeouts and the response cap apply to MCP servers too.
 *
 * Each call opens a short-lived client (initialize → request → close); upstream MCP servers are
 * treated like any other upstream API, statelessly.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { AppContext } from '../context.js';
import { AppError } from '../http/errors.js';
import { traceMcpClientCall } from '../telemetry/spans.js';
import { traceCarrier } from '../telemetry/trace.js';
import { guardedFetch } from './http.js';

/** Per-call options: extra headers (upstream credentials) and an overall timeout in ms. */
export interface McpCallOptions {
  headers?: Record<string, string>;
  timeoutMs?: number;
  /**
   * Headers computed for each HTTP request the transport sends (e.g. a signature over that
   * request's own method, path + query and body bytes); added after `headers`.
   */
  perRequestHeaders?: (req: {
    method: string;
    pathAndQuery: string;
    body: string | Buffer | null;
  }) => Record<string, string>;
}

const CLIENT_INFO = { name: 'agent-platform', version: '1.0.0' };
/** At most this many `tools/list` pages are read (a server that pages forever is cut off). */
const MAX_LIST_PAGES = 50;

function toAppError(err: unknown, url: string, timeoutMs: number): AppError {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof AppError) return e;
  }
  const e = err as { code?: number | string; message?: string; name?: string };
  if (e?.code === -32001 || e?.name === 'TimeoutError' || e?.name === 'AbortError') {
    return new AppError('upstream_timeout', `MCP server ${safeHost(url)} did not answer within ${timeoutMs} ms`);
  }
  const msg = String(e?.message ?? err).slice(0, 300);
  return new AppError('upstream_error', `MCP server ${safeHost(url)} failed: ${msg}`);
}

function safeHost(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'upstream';
  }
}

async function withClient<T>(
  ctx: AppContext,
  url: string,
  opts: McpCallOptions,
  fn: (c: Client, timeoutMs: number) => Promise<T>,
): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? ctx.config.upstream.timeoutMs;
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw new AppError('upstream_blocked', 'MCP server URL is not a valid URL');
  }
  const guarded = guardedFetch(ctx, { timeoutMs });
  const perRequest = opts.perRequestHeaders;
  // The MCP client SDK loads on the first call to an MCP server, not at start-up.
  const [{ Client }, { StreamableHTTPClientTransport }] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
  ]);
  const transport = new StreamableHTTPClientTransport(target, {
    fetch: perRequest
      ? (input, init = {}) => {
          const u = new URL(String(input));
          const body =
            typeof init.body === 'string' ? init.body : init.body instanceof Uint8Array ? Buffer.from(init.body) : null;
          const headers = new Headers(init.headers);
          for (const [k, v] of Object.entries(
            perRequest({ method: (init.method ?? 'GET').toUpperCase(), pathAndQuery: u.pathname + u.search, body }),
          ))
            headers.set(k, v);
          return guarded(input, { ...init, headers });
        }
      : guarded,
    requestInit: { headers: opts.headers ?? {} },
    redirectPolicy: 'follow',
    reconnectionOptions: {
      maxReconnectionDelay: 1000,
      initialReconnectionDelay: 1000,
      reconnectionDelayGrowFactor: 1,
      maxRetries: 0,
    },
  });
  const client = new Client(CLIENT_INFO, { capabilities: {} });
  client.onerror = () => undefined; // failures surface through the awaited request
  try {
    await client.connect(transport, { timeout: timeoutMs });
    return await fn(client, timeoutMs);
  } catch (err) {
    throw toAppError(err, url, timeoutMs);
  } finally {
    await transport.terminateSession().catch(() => undefined);
    await client.close().catch(() => undefined);
  }
}

/**
 * A tool as an MCP server lists it (`tools/list`, MCP 2025-06-18 "Tool"): `inputSchema`, and
 * `outputSchema` when the tool declares the shape of its `structuredContent`.
 */
export interface McpListedTool {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  /** Behaviour hints (`readOnlyHint`, `destructiveHint`, `idempotentHint`, `openWorldHint`, `title`). */
  annotations?: Record<string, unknown>;
}

/**
 * `initialize` + `tools/list` (all pages) against the MCP server at `url`.
 * @throws AppError upstream_blocked | upstream_timeout | upstream_error (protocol or HTTP failure)
 */
export async function mcpListTools(
  ctx: AppContext,
  url: string,
  opts: McpCallOptions = {},
): Promise<{ serverInfo: { name: string; version?: string }; tools: McpListedTool[] }> {
  return withClient(ctx, url, opts, async (client, timeoutMs) => {
    const info = client.getServerVersion();
    const tools: McpListedTool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const res = await client.listTools(cursor ? { cursor } : undefined, { timeout: timeoutMs });
      for (const t of res.tools) {
        tools.push({
          name: t.name,
          ...(t.description ? { description: t.description } : {}),
          inputSchema: t.inputSchema as Record<string, unknown>,
          ...(t.outputSchema ? { outputSchema: t.outputSchema as Record<string, unknown> } : {}),
          ...(t.annotations ? { annotations: t.annotations as Record<string, unknown> } : {}),
        });
      }
      cursor = res.nextCursor;
      if (!cursor) break;
    }
    return {
      serverInfo: { name: info?.name ?? 'mcp-server', ...(info?.version ? { version: info.version } : {}) },
      tools,
    };
  });
}

/**
 * `tools/call` of tool `name` with `args`. A tool-level failure is a result with `isError: true`
 * (not an exception), as MCP specifies.
 * @throws AppError upstream_blocked | upstream_timeout | upstream_error
 */
export async function mcpCallTool(
  ctx: AppContext,
  url: string,
  name: string,
  args: Record<string, unknown>,
  opts: McpCallOptions = {},
): Promise<{ content: unknown[]; structuredContent?: unknown; isError?: boolean }> {
  return withClient(ctx, url, opts, async (client, timeoutMs) => {
    // A `tools/call {name}` CLIENT span; its W3C context travels in `params._meta` (MCP semantic conventions).
    const res = (await traceMcpClientCall('tools/call', name, () => {
      const meta = traceCarrier();
      return client.callTool({ name, arguments: args, ...(meta ? { _meta: meta } : {}) }, undefined, {
        timeout: timeoutMs,
      });
    })) as {
      content?: unknown[];
      structuredContent?: unknown;
      isError?: boolean;
      toolResult?: unknown;
    };
    const content = Array.isArray(res.content)
      ? res.content
      : res.toolResult !== undefined
        ? [{ type: 'text', text: JSON.stringify(res.toolResult) }]
        : [];
    return {
      content,
      ...(res.structuredContent !== undefined ? { structuredContent: res.structuredContent } : {}),
      ...(res.isError ? { isError: true } : {}),
    };
  });
}
