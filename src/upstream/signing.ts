/**
 * How upstreams can trust the platform (docs/upstream-signing.md).
 *
 * Every upstream request carries:
 * - `X-Agent-Platform-Request-Id`: the execution id (`exe_…`), also returned to the caller;
 * - `X-Agent-Platform-User`: a per-service pseudonym of the calling user — HMAC-SHA256 keyed with
 *   the service's signing secret over the user id, so it is stable per user and service, differs
 *   between services (no cross-service tracking) and cannot be turned back into the user id;
 *   rotating the signing secret rotates the pseudonyms too;
 * - `X-Agent-Platform-Signature: t=<unix seconds>,v1=<hex>` where
 *   `v1 = HMAC-SHA256(signing_secret, "<t>.<METHOD>.<path>[?<query>].<hex sha256(body)>")`,
 *   the path and query exactly as sent on the request line (the body hash of an empty body is the
 *   hash of the empty string). Modelled on Stripe's webhook signatures (timestamp + HMAC, checked
 *   against a tolerance to stop replays).
 */
import { createHash, createHmac } from 'node:crypto';

export const HEADER_REQUEST_ID = 'x-agent-platform-request-id';
export const HEADER_USER = 'x-agent-platform-user';
export const HEADER_SIGNATURE = 'x-agent-platform-signature';

const EMPTY_SHA256 = createHash('sha256').digest('hex');

/** Hex SHA-256 of a body (empty → hash of the empty string). */
export function bodyHash(body: string | Buffer | undefined | null): string {
  if (body === undefined || body === null || body.length === 0) return EMPTY_SHA256;
  return createHash('sha256').update(body).digest('hex');
}

/** The string that is signed: `t.METHOD.pathAndQuery.sha256hex(body)`. */
export function signingPayload(
  t: number,
  method: string,
  pathAndQuery: string,
  body: string | Buffer | undefined | null,
): string {
  return `${t}.${method.toUpperCase()}.${pathAndQuery}.${bodyHash(body)}`;
}

/** The `X-Agent-Platform-Signature` value for one request. `t` defaults to now (Unix seconds). */
export function signRequest(
  secret: string,
  method: string,
  pathAndQuery: string,
  body: string | Buffer | undefined | null,
  t = Math.floor(Date.now() / 1000),
): string {
  const v1 = createHmac('sha256', secret)
    .update(signingPayload(t, method, pathAndQuery, body))
    .digest('hex');
  return `t=${t},v1=${v1}`;
}

/** The pseudonym of `userId` for the service whose signing secret is `secret` (`psu_` + 32 hex). */
export function userPseudonym(secret: string, userId: string): string {
  let bySecret = pseudonyms.get(secret);
  if (!bySecret) {
    if (pseudonyms.size >= 1024) pseudonyms.clear();
    bySecret = new Map();
    pseudonyms.set(secret, bySecret);
  }
  let p = bySecret.get(userId);
  if (p === undefined) {
    p = `psu_${createHmac('sha256', secret).update(`user:${userId}`).digest('hex').slice(0, 32)}`;
    if (bySecret.size >= 4096) bySecret.clear();
    bySecret.set(userId, p);
  }
  return p;
}

/** Memo of {@link userPseudonym} per signing secret (pure; one HMAC per call otherwise). A rotated secret is a new key. */
const pseudonyms = new Map<string, Map<string, string>>();
