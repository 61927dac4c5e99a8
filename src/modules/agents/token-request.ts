/**
 * The agent token request (RFC 6749 §4.4.2) read from its parameters and its client
 * authentication (§2.3.1: HTTP Basic or client_id + client_secret in the body, exactly one).
 * Transport-neutral: takes the parsed body (form or JSON) and the Authorization header.
 */
import { OAuthError } from './tokens.js';

/** A well-formed client credentials request: who asks, with which secret, for which scope. */
export interface TokenRequest {
  clientId: string;
  clientSecret: string;
  scope?: string;
}

/** RFC 6749 Appendix B: application/x-www-form-urlencoded decoding of one value. */
function formDecode(s: string): string {
  return decodeURIComponent(s.replace(/\+/g, ' '));
}

/** Client credentials of an `Authorization: Basic` header (RFC 6749 §2.3.1). @throws OAuthError invalid_client */
function basicCredentials(header: string): { id: string; secret: string } {
  const m = /^Basic\s+([A-Za-z0-9+/]+={0,2})\s*$/i.exec(header);
  if (!m)
    throw new OAuthError('invalid_client', 'Authorization header must be "Basic <base64(client_id:client_secret)>"');
  const decoded = Buffer.from(m[1], 'base64').toString('utf8');
  const i = decoded.indexOf(':');
  if (i < 0) throw new OAuthError('invalid_client', 'Basic credentials must be "client_id:client_secret"');
  try {
    return { id: formDecode(decoded.slice(0, i)), secret: formDecode(decoded.slice(i + 1)) };
  } catch {
    throw new OAuthError('invalid_client', 'Basic credentials are not correctly form-urlencoded');
  }
}

/** The client id a request claims (header or body), for the per-client rate limit; no verification. */
export function claimedClientId(body: unknown, h: string | undefined): string | null {
  if (h) {
    try {
      return basicCredentials(h).id;
    } catch {
      return null;
    }
  }
  const b = body as Record<string, unknown> | null | undefined;
  return b && typeof b === 'object' && typeof b.client_id === 'string' && b.client_id ? b.client_id : null;
}

/**
 * Read the token request's parameters (RFC 6749 §3.2: empty values count as absent; no parameter
 * may appear twice) and the client credentials (exactly one method).
 * @throws OAuthError invalid_request | unsupported_grant_type | invalid_client
 */
export function readTokenRequest(body: unknown, header: string | undefined): TokenRequest {
  const raw = body ?? {};
  if (typeof raw !== 'object' || Array.isArray(raw))
    throw new OAuthError('invalid_request', 'The request body must be form-urlencoded parameters or a JSON object');
  const params: Record<string, string | undefined> = {};
  for (const name of ['grant_type', 'scope', 'client_id', 'client_secret']) {
    const v = (raw as Record<string, unknown>)[name];
    if (Array.isArray(v)) throw new OAuthError('invalid_request', `Parameter "${name}" is included more than once`);
    if (v !== undefined && v !== null && typeof v !== 'string')
      throw new OAuthError('invalid_request', `Parameter "${name}" must be a string`);
    params[name] = v === '' || v === null ? undefined : (v as string | undefined);
  }
  if (header && params.client_secret !== undefined) {
    throw new OAuthError(
      'invalid_request',
      'Use exactly one client authentication method (HTTP Basic or client_secret in the body), not both',
    );
  }
  if (params.grant_type === undefined) throw new OAuthError('invalid_request', 'Missing parameter "grant_type"');
  if (params.grant_type !== 'client_credentials') {
    throw new OAuthError(
      'unsupported_grant_type',
      `grant_type "${params.grant_type}" is not supported; use "client_credentials"`,
    );
  }
  if (header) {
    const { id, secret } = basicCredentials(header);
    if (params.client_id !== undefined && params.client_id !== id)
      throw new OAuthError('invalid_request', 'client_id in the body does not match the Basic credentials');
    if (!id || !secret)
      throw new OAuthError('invalid_client', 'Basic credentials need a client_id and a client_secret');
    return { clientId: id, clientSecret: secret, scope: params.scope };
  }
  if (params.client_id === undefined || params.client_secret === undefined) {
    throw new OAuthError(
      'invalid_client',
      'Client authentication is required: HTTP Basic (client_secret_basic) or client_id and client_secret in the body (client_secret_post)',
    );
  }
  return { clientId: params.client_id, clientSecret: params.client_secret, scope: params.scope };
}
