/**
 * Building an upstream HTTP request from a tool and its arguments, putting the upstream credential on
 * it, and decoding the upstream's answer. Pure functions over the {@link HttpToolTarget} shape (the
 * registry's `ExecutableTool` satisfies it), used by tool execution and publish verification.
 */
import { AppError } from '../http/errors.js';
import type { OAuth2Client } from './oauth2.js';

/** Where an argument of an HTTP tool goes: a `{name}` path placeholder, the query, a header, or a field of the JSON body. */
export type ArgLocation = 'path' | 'query' | 'header' | 'body';

/**
 * A decrypted upstream credential (never log it): bearer → Authorization, header → its header,
 * query → its query parameter. `oauth2`: no shared credential — the caller's own token is put in
 * by the connections module (`withCallerGrant`) before a request is built; `oauth2` carries the
 * service's client for that.
 */
export interface UpstreamAuth {
  type: 'none' | 'bearer' | 'header' | 'query' | 'oauth2';
  name?: string;
  secret?: string;
  oauth2?: OAuth2Client;
}

/** What {@link buildHttpRequest} reads of a tool: its service's base URL, the tool's method and path template, argument placement and the credential. */
export interface HttpToolTarget {
  service: { baseUrl: string };
  tool: {
    /** HTTP method (any case). */
    method: string;
    /** Path template with `{param}` placeholders. */
    path: string;
    /** Where each top-level argument goes (OpenAPI tools); absent → default placement. */
    argLocations?: Record<string, ArgLocation>;
    /** The argument whose value is the whole JSON body (OpenAPI tools with a non-object body). */
    bodyArgument?: string;
  };
  upstreamAuth: UpstreamAuth;
}

/** An upstream HTTP request ready to send. */
export interface HttpRequest {
  method: string;
  url: URL;
  headers: Record<string, string>;
  body?: string;
}

const BODYLESS = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS']);
/** Headers an argument may not set: framing, hop-by-hop, and the platform's own. */
const RESERVED_HEADER =
  /^(?:host|content-length|content-type|transfer-encoding|connection|keep-alive|te|trailer|upgrade|expect|proxy-.*|x-agent-platform-.*)$/;

/** Put the upstream credential on `url` (query) or `headers` (bearer, header), in place. */
export function setUpstreamCredential(auth: UpstreamAuth, url: URL, headers: Record<string, string>): void {
  if (auth.type === 'bearer' && auth.secret) headers.authorization = `Bearer ${auth.secret}`;
  else if (auth.type === 'header' && auth.name && auth.secret) headers[auth.name.toLowerCase()] = auth.secret;
  else if (auth.type === 'query' && auth.name && auth.secret) url.searchParams.set(auth.name, auth.secret);
}

/** Headers and URL carrying an upstream credential (`query` auth adds a query parameter); the inputs are not changed. */
export function applyUpstreamAuth(
  auth: UpstreamAuth,
  url: string,
  headers: Record<string, string> = {},
): { url: string; headers: Record<string, string> } {
  const u = new URL(url);
  const h = { ...headers };
  setUpstreamCredential(auth, u, h);
  return { url: auth.type === 'query' && auth.name && auth.secret ? u.toString() : url, headers: h };
}

/** Placeholders `{name}` of a tool path. Cached per path string. */
const placeholderCache = new Map<string, string[]>();
function placeholders(path: string): string[] {
  let p = placeholderCache.get(path);
  if (!p) {
    p = [...path.matchAll(/\{([^{}]+)\}/g)].map((m) => m[1]);
    if (placeholderCache.size > 10_000) placeholderCache.clear();
    placeholderCache.set(path, p);
  }
  return p;
}

function queryValue(v: unknown): string {
  return typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v);
}

/**
 * Build the upstream HTTP request of a tool call. Arguments go where the tool says
 * (`argLocations` of OpenAPI tools), else: `{name}` placeholders of the path, then the query
 * string for GET/HEAD/DELETE/OPTIONS or a JSON body object otherwise. `bodyArgument` names an
 * argument whose value is the whole JSON body. The upstream credential is injected last
 * (bearer → Authorization, header → its header, query → its query parameter).
 * @throws AppError validation_failed when a path parameter is missing
 */
export function buildHttpRequest(t: HttpToolTarget, args: Record<string, unknown>): HttpRequest {
  const method = t.tool.method.toUpperCase();
  const names = placeholders(t.tool.path);
  const declared = t.tool.argLocations;
  let path = t.tool.path;
  for (const n of names) {
    const v = args[n];
    if (v === undefined || v === null) {
      throw new AppError('validation_failed', `Missing path parameter "${n}"`, {
        errors: [{ in: 'body', pointer: `/arguments/${n}`, message: 'is required (path parameter)' }],
      });
    }
    const value = queryValue(v);
    // `.`/`..` would be resolved as dot-segments (even percent-encoded) and leave the tool's path.
    if (value === '.' || value === '..') {
      throw new AppError('validation_failed', `Path parameter "${n}" may not be "${value}"`, {
        errors: [{ in: 'body', pointer: `/arguments/${n}`, message: 'may not be a dot-segment' }],
      });
    }
    path = path.replaceAll(`{${n}}`, encodeURIComponent(value));
  }
  const base = t.service.baseUrl.replace(/\/+$/, '');
  const url = new URL(base + (path.startsWith('/') ? path : `/${path}`));
  const headers: Record<string, string> = { accept: 'application/json, text/plain;q=0.9, */*;q=0.5' };
  const fallback: ArgLocation = BODYLESS.has(method) ? 'query' : 'body';
  let bodyObject: Record<string, unknown> | undefined;
  let wholeBody: unknown;
  let hasWholeBody = false;
  for (const [k, v] of Object.entries(args)) {
    if (v === undefined) continue;
    if (k === t.tool.bodyArgument) {
      wholeBody = v;
      hasWholeBody = true;
      continue;
    }
    const loc: ArgLocation = names.includes(k) ? 'path' : (declared?.[k] ?? fallback);
    if (loc === 'path') continue;
    if (loc === 'query') {
      if (v === null) continue;
      if (Array.isArray(v)) for (const item of v) url.searchParams.append(k, queryValue(item));
      else url.searchParams.append(k, queryValue(v));
    } else if (loc === 'header') {
      const name = k.toLowerCase();
      if (v !== null && !RESERVED_HEADER.test(name)) headers[name] = queryValue(v).replace(/[\r\n]/g, ' ');
    } else {
      (bodyObject ??= {})[k] = v;
    }
  }
  setUpstreamCredential(t.upstreamAuth, url, headers);
  let body: string | undefined;
  if (hasWholeBody) body = JSON.stringify(wholeBody);
  else if (bodyObject || !BODYLESS.has(method)) body = JSON.stringify(bodyObject ?? {});
  if (body !== undefined) headers['content-type'] = 'application/json';
  return { method, url, headers, body };
}

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\b/i;
const TEXT_TYPE =
  /^(?:text\/|application\/(?:xml|x-www-form-urlencoded|javascript|yaml|x-yaml)\b|[\w.+-]+\/[\w.-]+\+xml\b)/i;

/**
 * Decode an upstream body: JSON when declared (malformed JSON → not ok), text for textual types
 * and undeclared bodies (JSON when they parse), base64 for anything binary.
 */
export function parseBody(
  contentType: string | undefined,
  body: Buffer,
): { ok: true; value: unknown } | { ok: false; message: string } {
  if (body.length === 0) return { ok: true, value: null };
  const ct = (contentType ?? '').trim();
  if (JSON_TYPE.test(ct)) {
    try {
      return { ok: true, value: JSON.parse(body.toString('utf8')) };
    } catch {
      return { ok: false, message: 'Upstream declared a JSON body but sent malformed JSON' };
    }
  }
  if (!ct) {
    const text = body.toString('utf8');
    try {
      return { ok: true, value: JSON.parse(text) };
    } catch {
      return { ok: true, value: text };
    }
  }
  if (TEXT_TYPE.test(ct)) return { ok: true, value: body.toString('utf8') };
  return { ok: true, value: { content_type: ct, encoding: 'base64', data: body.toString('base64') } };
}
