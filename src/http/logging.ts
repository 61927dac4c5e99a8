/**
 * Request logging without secrets: the query parameters that carry OAuth 2.0 credentials or
 * single-use values (RFC 6749 `code`, `state`; RFC 6750 §2.3 `access_token`; …) are replaced in
 * logged URLs — the connections callback (`GET /connections/callback?code=…&state=…`) is reached
 * by a browser redirect, so its credentials travel in the query string.
 */
import type { FastifyRequest } from 'fastify';

/** Query parameters whose values never reach the logs. */
const SECRET_PARAMS = /^(?:code|state|access_token|refresh_token|id_token|client_secret|code_verifier|token)$/i;

/** `url` (path + query) with the values of {@link SECRET_PARAMS} replaced by `[redacted]`. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const params = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const name = eq < 0 ? pair : pair.slice(0, eq);
      return eq >= 0 && SECRET_PARAMS.test(decodeURIComponent(name.replace(/\+/g, ' '))) ? `${name}=[redacted]` : pair;
    });
  return `${url.slice(0, q)}?${params.join('&')}`;
}

/** pino serializer of `req` (the fields of Fastify's default one, the URL redacted). */
export function serializeRequest(req: FastifyRequest): Record<string, unknown> {
  return { method: req.method, url: redactUrl(req.url), host: req.host, remoteAddress: req.ip, remotePort: req.socket?.remotePort };
}
