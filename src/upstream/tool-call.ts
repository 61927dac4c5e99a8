/**
 * One upstream tool call — HTTP or MCP — with the upstream credential and the platform's request id,
 * user pseudonym and signature headers (docs/upstream-signing.md), measured and turned into a
 * {@link CallOutcome}. The execute path records the outcome; nothing here touches the database.
 */
import type { AppContext } from '../context.js';
import { AppError } from '../http/errors.js';
import { upstreamFetch } from './http.js';
import { mcpCallTool } from './mcp.js';
import { parseBody, setUpstreamCredential, type HttpRequest, type HttpToolTarget } from './request.js';
import { HEADER_REQUEST_ID, HEADER_SIGNATURE, HEADER_USER, signRequest, userPseudonym } from './signing.js';

/** What a call reads of a tool: {@link HttpToolTarget} plus the MCP endpoint, the tool name and the signing secret. */
export interface CallTarget extends HttpToolTarget {
  service: HttpToolTarget['service'] & { mcpUrl: string | null };
  tool: HttpToolTarget['tool'] & { name: string };
  /** Decrypted per-service HMAC signing secret. */
  signingSecret: string;
}

/** Outcome of one upstream call, before recording. `durationMs` in whole milliseconds. */
export interface CallOutcome {
  status: 'succeeded' | 'failed';
  httpStatus: number | null;
  output: unknown;
  error: { code: string; message: string } | null;
  durationMs: number;
  /** Set when the platform could not do its job (502/504): recorded, then thrown. */
  failure?: AppError;
}

/**
 * Send one HTTP tool call built by {@link buildHttpRequest}, signed for the upstream
 * (docs/upstream-signing.md), and decode the answer. A non-2xx answer is a `failed` outcome; the
 * platform's own failures (blocked address, unreachable, timeout, malformed JSON) carry `failure`.
 * Never throws an AppError (they become `failure`); `timeoutMs` in milliseconds.
 */
export async function callHttpTool(
  ctx: AppContext,
  t: CallTarget,
  req: HttpRequest,
  accountId: string,
  executionId: string,
  timeoutMs: number,
): Promise<CallOutcome> {
  const started = performance.now();
  req.headers[HEADER_REQUEST_ID] = executionId;
  req.headers[HEADER_USER] = userPseudonym(t.signingSecret, accountId);
  req.headers[HEADER_SIGNATURE] = signRequest(t.signingSecret, req.method, req.url.pathname + req.url.search, req.body);
  try {
    const res = await upstreamFetch(ctx, {
      method: req.method,
      url: req.url.toString(),
      headers: req.headers,
      body: req.body,
      timeoutMs,
    });
    const durationMs = Math.round(performance.now() - started);
    const parsed = parseBody(res.headers['content-type'], res.body);
    if (!parsed.ok) {
      return {
        status: 'failed',
        httpStatus: res.status,
        output: null,
        error: { code: 'upstream_error', message: parsed.message },
        durationMs,
        failure: new AppError('upstream_error', parsed.message),
      };
    }
    const ok = res.status >= 200 && res.status < 300;
    return {
      status: ok ? 'succeeded' : 'failed',
      httpStatus: res.status,
      output: parsed.value,
      error: ok ? null : { code: 'upstream_status', message: `Upstream answered HTTP ${res.status}` },
      durationMs,
    };
  } catch (err) {
    return failedCall(err, started);
  }
}

/**
 * The failed outcome of a call that threw an AppError (`started`: `performance.now()` when the call
 * began); rethrows anything else.
 */
export function failedCall(err: unknown, started: number): CallOutcome {
  if (!(err instanceof AppError)) throw err;
  return {
    status: 'failed',
    httpStatus: null,
    output: null,
    error: { code: err.code, message: err.message },
    durationMs: Math.round(performance.now() - started),
    failure: err,
  };
}

/**
 * Call one tool of an MCP server (`tools/call` over Streamable HTTP, MCP 2025-06-18) with the
 * upstream credential and the platform's headers, each HTTP request of the exchange signed.
 * `isError` results are a `failed` outcome with code `tool_error`; transport failures carry `failure`.
 */
export async function callMcpTool(
  ctx: AppContext,
  t: CallTarget,
  accountId: string,
  executionId: string,
  args: Record<string, unknown>,
  timeoutMs: number,
): Promise<CallOutcome> {
  const started = performance.now();
  const endpoint = t.service.mcpUrl ?? t.service.baseUrl;
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return failedCall(new AppError('upstream_error', 'The MCP endpoint of this service is not a valid URL'), started);
  }
  const headers: Record<string, string> = {};
  setUpstreamCredential(t.upstreamAuth, url, headers);
  headers[HEADER_REQUEST_ID] = executionId;
  headers[HEADER_USER] = userPseudonym(t.signingSecret, accountId);
  // One tool call is several HTTP requests written by the MCP SDK; each is signed over its own
  // method, path + query and body bytes, like HTTP tools (docs/upstream-signing.md "MCP servers").
  const perRequestHeaders = (r: { method: string; pathAndQuery: string; body: string | Buffer | null }) => ({
    [HEADER_SIGNATURE]: signRequest(t.signingSecret, r.method, r.pathAndQuery, r.body),
  });
  try {
    // The registry keeps the server's own tool name in `path` (the platform name may be a slug of it).
    const res = await mcpCallTool(ctx, url.toString(), t.tool.path || t.tool.name, args, {
      headers,
      timeoutMs,
      perRequestHeaders,
    });
    const durationMs = Math.round(performance.now() - started);
    const output = res.structuredContent !== undefined ? res.structuredContent : mcpContentValue(res.content);
    if (res.isError) {
      const text = res.content
        .map((c) => (c as { text?: unknown }).text)
        .filter((x) => typeof x === 'string')
        .join('\n');
      return {
        status: 'failed',
        httpStatus: null,
        output,
        error: { code: 'tool_error', message: (text || 'The MCP tool reported an error').slice(0, 1000) },
        durationMs,
      };
    }
    return { status: 'succeeded', httpStatus: null, output, error: null, durationMs };
  } catch (err) {
    return failedCall(err, started);
  }
}

/**
 * MCP content → output: a single text item is returned as its JSON value when it parses, else as
 * text; anything else as the content array.
 */
function mcpContentValue(content: unknown[]): unknown {
  if (content.length === 1) {
    const c = content[0] as { type?: unknown; text?: unknown };
    if (c.type === 'text' && typeof c.text === 'string') {
      try {
        return JSON.parse(c.text);
      } catch {
        return c.text;
      }
    }
  }
  return content;
}
