/**
 * The one guarded HTTP client for upstream calls (publish verification, tool execution, MCP).
 *
 * Guards (OWASP SSRF Prevention Cheat Sheet):
 * - only `http:` / `https:` URLs without embedded credentials;
 * - the address decision ({@link isAddressAllowed}) runs on the resolved addresses of every
 *   connection, inside the socket's own DNS lookup, so the connection goes to exactly the address
 *   that was checked (no DNS-rebinding window); IP-literal hosts are checked before dispatch;
 *   a name that resolves to any refused address is refused as a whole;
 * - redirects are followed by hand (at most {@link MAX_REDIRECTS}), each hop checked again;
 *   credentials-bearing headers are dropped when a hop changes origin;
 * - one overall timeout (`config.upstream.timeoutMs` unless the request sets one) covering
 *   connect, headers and body, and a response-size cap (`config.upstream.maxResponseBytes`).
 */
import { isIP } from 'node:net';
import { Readable, Transform } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { AppContext } from '../context.js';
import { AppError } from '../http/errors.js';
import { traceUpstreamRequest } from '../telemetry/spans.js';
import { classifyAddress, isAddressAllowed } from './address.js';
import { BlockedAddressError, type HostResolver } from './pool.js';

export type { HostResolver } from './pool.js';

/** A request to an upstream. `timeoutMs` / `maxResponseBytes` override the configured defaults. */
export interface UpstreamRequest {
  method: string;
  url: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  timeoutMs?: number;
  maxResponseBytes?: number;
}

/** A fully read upstream response. Header names are lower-case; repeated headers are joined with `, `. */
export interface UpstreamResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  /** Wall time from the first byte sent to the last byte read, all hops included, ms. */
  durationMs: number;
  /** URL of the final hop (differs from the request URL after redirects). */
  url?: string;
}

/** Most redirect hops followed before giving up (Fetch standard uses 20; 5 is plenty for APIs). */
export const MAX_REDIRECTS = 5;

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** Headers kept when a redirect changes origin (everything else may carry credentials). */
const CROSS_ORIGIN_SAFE = new Set(['accept', 'accept-language', 'user-agent', 'content-type']);
const USER_AGENT = 'agent-platform/1.0 (+upstream)';

/**
 * Replace the host resolver of `ctx`'s upstream pool (tests: fake DNS for one app).
 * @returns the previous resolver
 */
export function setUpstreamResolver(ctx: AppContext, r: HostResolver): HostResolver {
  return ctx.upstream.setResolver(r);
}

function parseTarget(raw: string): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new AppError('upstream_blocked', `Upstream URL is not a valid URL: ${raw.slice(0, 200)}`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new AppError('upstream_blocked', `Upstream URL scheme ${u.protocol} is not allowed (http or https only)`);
  if (u.username || u.password) throw new AppError('upstream_blocked', 'Upstream URL must not embed credentials');
  return u;
}

function flatHeaders(h: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h))
    if (v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

interface Dispatched {
  status: number;
  headers: Record<string, string>;
  body: Dispatcher.ResponseData['body'];
  url: string;
}

/**
 * Send with redirects followed by hand (unless `followRedirects` is false: a 3xx is returned as it
 * is); returns the final response with its body unread.
 * Every hop's host is checked (IP literals here; names inside the socket lookup).
 */
function dispatch(
  ctx: AppContext,
  req: { method: string; url: string; headers: Record<string, string>; body?: string | Buffer | null },
  signal: AbortSignal,
  timeoutMs: number,
  followRedirects = true,
): Promise<Dispatched> {
  // An HTTP CLIENT span with W3C `traceparent` sent upstream (docs/observability.md); a plain call when tracing is off.
  return traceUpstreamRequest(req, () => dispatchHops(ctx, req, signal, timeoutMs, followRedirects));
}

async function dispatchHops(
  ctx: AppContext,
  req: { method: string; url: string; headers: Record<string, string>; body?: string | Buffer | null },
  signal: AbortSignal,
  timeoutMs: number,
  followRedirects: boolean,
): Promise<Dispatched> {
  const allowLoopback = ctx.config.upstream.allowLoopback;
  let url = parseTarget(req.url);
  let method = req.method.toUpperCase();
  let headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) headers[k.toLowerCase()] = v;
  if (!headers['user-agent']) headers['user-agent'] = USER_AGENT;
  let body = req.body ?? null;
  for (let hop = 0; ; hop++) {
    const bare = url.hostname.replace(/^\[|\]$/g, '');
    if (isIP(bare) && !isAddressAllowed(bare, allowLoopback)) {
      throw new AppError(
        'upstream_blocked',
        `${url.host} is a ${classifyAddress(bare)} address, which upstream calls may not reach${hop ? ' (redirect target)' : ''}`,
      );
    }
    let res: Dispatcher.ResponseData;
    try {
      // What undici's `request(url, opts)` does with `opts.dispatcher`, without importing undici here.
      res = await (await ctx.upstream.dispatcher()).request({
        origin: url.origin,
        path: url.pathname + url.search,
        method: method as Dispatcher.HttpMethod,
        headers,
        body,
        signal,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
    } catch (err) {
      throw toAppError(err, signal, url, hop > 0);
    }
    const location = res.headers.location;
    if (!followRedirects || !REDIRECTS.has(res.statusCode) || typeof location !== 'string') {
      return { status: res.statusCode, headers: flatHeaders(res.headers), body: res.body, url: url.toString() };
    }
    await res.body.dump().catch(() => undefined);
    if (hop >= MAX_REDIRECTS)
      throw new AppError('upstream_error', `Upstream redirected more than ${MAX_REDIRECTS} times`);
    let next: URL;
    try {
      next = new URL(location, url);
    } catch {
      throw new AppError('upstream_error', 'Upstream sent an invalid redirect Location');
    }
    if (next.protocol !== 'http:' && next.protocol !== 'https:')
      throw new AppError('upstream_blocked', `Upstream redirected to a ${next.protocol} URL`);
    if (next.username || next.password)
      throw new AppError('upstream_blocked', 'Upstream redirected to a URL with embedded credentials');
    if (res.statusCode === 303 || ((res.statusCode === 301 || res.statusCode === 302) && method === 'POST')) {
      if (method !== 'HEAD') method = 'GET';
      body = null;
      delete headers['content-type'];
      delete headers['content-length'];
    }
    if (next.origin !== url.origin) {
      headers = Object.fromEntries(Object.entries(headers).filter(([k]) => CROSS_ORIGIN_SAFE.has(k)));
    }
    url = next;
  }
}

/** Map a transport failure to the platform's upstream codes. */
function toAppError(err: unknown, signal: AbortSignal, url: URL, redirected: boolean): AppError {
  if (err instanceof AppError) return err;
  const e = err as Error & { code?: string; cause?: unknown };
  const blocked = e instanceof BlockedAddressError ? e : e?.cause instanceof BlockedAddressError ? e.cause : null;
  if (blocked) return new AppError('upstream_blocked', blocked.message + (redirected ? ' (redirect target)' : ''));
  if (
    signal.aborted ||
    e?.code === 'UND_ERR_HEADERS_TIMEOUT' ||
    e?.code === 'UND_ERR_BODY_TIMEOUT' ||
    e?.code === 'UND_ERR_CONNECT_TIMEOUT'
  ) {
    return new AppError('upstream_timeout', `Upstream ${url.host} did not answer in time`);
  }
  const code = e?.code ?? (e?.cause as { code?: string } | undefined)?.code;
  const why =
    code === 'ENOTFOUND' || code === 'EAI_AGAIN'
      ? 'its host name does not resolve'
      : code === 'ECONNREFUSED'
        ? 'the connection was refused'
        : code === 'ECONNRESET' || code === 'UND_ERR_SOCKET'
          ? 'the connection was reset'
          : 'it could not be reached';
  return new AppError('upstream_error', `Upstream ${url.host} failed: ${why}`);
}

/**
 * Guarded request: SSRF checks after DNS resolution and on every redirect hop (at most 5),
 * timeout, response cap. Nothing is sent to a refused address.
 * @throws AppError 'upstream_blocked' (address or scheme not allowed; nothing sent),
 *         'upstream_timeout' (504), 'upstream_error' (502: unreachable, connection reset, too
 *         many redirects, or body larger than maxResponseBytes: detail says so)
 */
export async function upstreamFetch(ctx: AppContext, req: UpstreamRequest): Promise<UpstreamResponse> {
  const timeoutMs = req.timeoutMs ?? ctx.config.upstream.timeoutMs;
  const cap = req.maxResponseBytes ?? ctx.config.upstream.maxResponseBytes;
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(new Error('timeout')), timeoutMs);
  const started = performance.now();
  try {
    const res = await dispatch(
      ctx,
      { method: req.method, url: req.url, headers: req.headers ?? {}, body: req.body },
      ac.signal,
      timeoutMs,
    );
    const declared = Number(res.headers['content-length']);
    if (Number.isFinite(declared) && declared > cap) {
      res.body.destroy();
      throw new AppError(
        'upstream_error',
        `Upstream response is larger than the ${cap}-byte limit (Content-Length ${declared})`,
      );
    }
    if (Number.isFinite(declared)) {
      // A declared length within the cap: read it whole (undici refuses a body longer or shorter
      // than declared), without an async iterator per response.
      try {
        const bytes = Buffer.from(await res.body.arrayBuffer());
        return {
          status: res.status,
          headers: res.headers,
          body: bytes,
          durationMs: Math.round(performance.now() - started),
          url: res.url,
        };
      } catch (err) {
        throw toAppError(err, ac.signal, new URL(res.url), false);
      }
    }
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of res.body) {
        size += (chunk as Buffer).length;
        if (size > cap) {
          res.body.destroy();
          throw new AppError('upstream_error', `Upstream response is larger than the ${cap}-byte limit`);
        }
        chunks.push(chunk as Buffer);
      }
    } catch (err) {
      throw toAppError(err, ac.signal, new URL(res.url), false);
    }
    return {
      status: res.status,
      headers: res.headers,
      body: Buffer.concat(chunks),
      durationMs: Math.round(performance.now() - started),
      url: res.url,
    };
  } finally {
    clearTimeout(timer);
  }
}

/** A WHATWG `fetch`-compatible function (the subset the MCP SDK uses). */
export type GuardedFetch = (input: string | URL, init?: RequestInit) => Promise<Response>;

function headersToRecord(h: HeadersInit | undefined): Record<string, string> {
  if (!h) return {};
  if (h instanceof Headers) return Object.fromEntries(h.entries());
  if (Array.isArray(h)) return Object.fromEntries(h);
  return { ...(h as Record<string, string>) };
}

/**
 * A `fetch` going through the same guard, for libraries that take a fetch implementation (the
 * MCP SDK transport). The body is streamed (server-sent events work) and capped at
 * `maxResponseBytes`; the whole exchange is bounded by `timeoutMs`. Failures reject with the
 * same AppErrors as {@link upstreamFetch}. `redirect: 'manual'` returns a 3xx as it is (not followed).
 */
export function guardedFetch(
  ctx: AppContext,
  opts: { timeoutMs?: number; maxResponseBytes?: number } = {},
): GuardedFetch {
  const timeoutMs = opts.timeoutMs ?? ctx.config.upstream.timeoutMs;
  const cap = opts.maxResponseBytes ?? ctx.config.upstream.maxResponseBytes;
  return async (input, init = {}) => {
    const signals = [AbortSignal.timeout(timeoutMs)];
    if (init.signal) signals.push(init.signal);
    const signal = AbortSignal.any(signals);
    let body: string | Buffer | null = null;
    if (typeof init.body === 'string') body = init.body;
    else if (init.body instanceof Uint8Array) body = Buffer.from(init.body);
    else if (init.body != null)
      throw new AppError('internal_error', 'guardedFetch supports string and byte bodies only');
    const res = await dispatch(
      ctx,
      { method: init.method ?? 'GET', url: String(input), headers: headersToRecord(init.headers), body },
      signal,
      timeoutMs,
      init.redirect !== 'manual',
    );
    let size = 0;
    const capped = new Transform({
      transform(chunk: Buffer, _enc, done) {
        size += chunk.length;
        if (size > cap)
          return done(new AppError('upstream_error', `Upstream response is larger than the ${cap}-byte limit`));
        done(null, chunk);
      },
    });
    res.body.on('error', (err) => capped.destroy(err));
    res.body.pipe(capped);
    const nullBody = [101, 204, 205, 304].includes(res.status) || init.method === 'HEAD';
    if (nullBody) res.body.destroy();
    const headers = new Headers();
    for (const [k, v] of Object.entries(res.headers)) headers.set(k, v);
    return new Response(nullBody ? null : (Readable.toWeb(capped) as ReadableStream<Uint8Array>), {
      status: res.status,
      headers,
    });
  };
}
