/**
 * Domain-ownership check of a service's `base_url` host, two methods (as Google Search Console
 * and Let's Encrypt's dns-01/http-01 do):
 * - DNS: a TXT record at `_agent-platform.<host>` whose value is the token (node:dns resolveTxt);
 * - HTTP: `<base_url origin>/.well-known/agent-platform-verification.txt` containing the token,
 *   fetched through the guarded client (so private addresses are refused; loopback only with
 *   `ALLOW_LOOPBACK_UPSTREAMS=on`).
 * The TXT resolver is injectable so tests never send DNS traffic.
 */
import dns from 'node:dns';
import { isIP } from 'node:net';
import type { AppContext } from '../../context.js';
import { AppError } from '../../http/errors.js';
import { isLoopbackAddress } from '../../upstream/address.js';
import { upstreamFetch } from '../../upstream/http.js';

export const WELL_KNOWN_PATH = '/.well-known/agent-platform-verification.txt';
export const TXT_PREFIX = '_agent-platform.';

/** Resolves TXT records (each record is a list of chunks, as node:dns returns them). */
export type TxtResolver = (name: string) => Promise<string[][]>;

const systemResolver = new dns.promises.Resolver({ timeout: 3000, tries: 2 });
let txtResolver: TxtResolver = (name) => systemResolver.resolveTxt(name);

/** Replace the TXT resolver (tests); returns the previous one. */
export function setTxtResolver(r: TxtResolver): TxtResolver {
  const prev = txtResolver;
  txtResolver = r;
  return prev;
}

/** The two ways to prove ownership of `baseUrl`'s host with `token`. */
export function verificationMethods(baseUrl: string, token: string) {
  const u = new URL(baseUrl);
  return [
    { type: 'dns' as const, record_type: 'TXT', name: `${TXT_PREFIX}${u.hostname}`, value: token },
    { type: 'http' as const, url: `${u.origin}${WELL_KNOWN_PATH}`, content: token },
  ];
}

/** True for hosts that are loopback by name or literal (localhost, *.localhost, 127/8, ::1). */
function isLoopbackHost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  return isIP(h) !== 0 && isLoopbackAddress(h);
}

/** Outcome of one ownership check. */
export interface DomainCheck {
  verified: boolean;
  method: 'dns' | 'http' | null;
  detail: string;
}

/** Check `baseUrl`'s host for `token` by HTTP file, then DNS TXT. Never throws for upstream failures. */
export async function checkDomain(ctx: AppContext, baseUrl: string, token: string): Promise<DomainCheck> {
  const u = new URL(baseUrl);
  const host = u.hostname.replace(/^\[|\]$/g, '');
  if (isLoopbackHost(host) && !ctx.config.upstream.allowLoopback) {
    return {
      verified: false,
      method: null,
      detail: `${host} is a loopback host; loopback hosts count only when ALLOW_LOOPBACK_UPSTREAMS=on`,
    };
  }
  const reasons: string[] = [];
  try {
    const res = await upstreamFetch(ctx, {
      method: 'GET',
      url: `${u.origin}${WELL_KNOWN_PATH}`,
      headers: { accept: 'text/plain' },
      maxResponseBytes: 4096,
      timeoutMs: Math.min(10_000, ctx.config.upstream.timeoutMs),
    });
    if (res.status !== 200) reasons.push(`HTTP file answered ${res.status}`);
    else if (!res.body.toString('utf8').split(/\s+/).includes(token))
      reasons.push('HTTP file does not contain the token');
    else return { verified: true, method: 'http', detail: `token found at ${u.origin}${WELL_KNOWN_PATH}` };
  } catch (err) {
    reasons.push(`HTTP file: ${err instanceof AppError ? err.message : 'could not be fetched'}`);
  }
  if (isIP(host) === 0 && !isLoopbackHost(host)) {
    try {
      const records = await txtResolver(`${TXT_PREFIX}${host}`);
      if (records.some((chunks) => chunks.join('').trim() === token))
        return { verified: true, method: 'dns', detail: `TXT record ${TXT_PREFIX}${host} holds the token` };
      reasons.push(`TXT record ${TXT_PREFIX}${host} does not hold the token`);
    } catch (err) {
      const code = (err as { code?: string }).code;
      reasons.push(
        `TXT record ${TXT_PREFIX}${host}: ${code === 'ENOTFOUND' || code === 'ENODATA' ? 'not found' : 'lookup failed'}`,
      );
    }
  } else {
    reasons.push('DNS method not available for an IP address or loopback host');
  }
  return { verified: false, method: null, detail: reasons.join('; ') };
}
