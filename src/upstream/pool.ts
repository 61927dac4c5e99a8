/**
 * Per-app state of the guarded upstream client (`AppContext.upstream`): the undici connection pool
 * every upstream call goes through, and the host resolver its socket lookup checks addresses with
 * (OWASP SSRF Prevention Cheat Sheet: the connection goes to exactly the address that was checked).
 * Nothing here imports `AppContext`, so `context.ts` can name the type without an import loop.
 */
import dns from 'node:dns';
import { readFile } from 'node:fs/promises';
import { isIP, type LookupFunction } from 'node:net';
import { rootCertificates } from 'node:tls';
import type { Agent } from 'undici';
import type { Config } from '../config.js';
import { classifyAddress, isAddressAllowed } from './address.js';

/** Resolves a host name to addresses (`dns.lookup` with `all: true` by default; tests replace it per app). */
export type HostResolver = (hostname: string) => Promise<Array<{ address: string; family: number }>>;

/** Thrown inside the socket lookup when any resolved address is refused. */
export class BlockedAddressError extends Error {
  readonly blocked = true;
}

const systemResolver: HostResolver = async (hostname) => dns.promises.lookup(hostname, { all: true, verbatim: true });

/**
 * The upstream connection pool of one app, created on first use and closed with the app. undici
 * (~740 KB of JavaScript) is imported with it, not at start-up (~60 ms of a 2-core
 * machine's start); the app's `warm` (app.ts, run once the server listens) loads it early.
 */
export class UpstreamPool {
  /** Used by every new connection's DNS lookup; replace it (tests) with {@link setResolver}. */
  private resolver: HostResolver = systemResolver;
  private agent: Promise<Agent> | null = null;

  constructor(private readonly config: Pick<Config, 'upstream'>) {}

  /** Replace the resolver (tests: fake DNS for one app). @returns the previous one */
  setResolver(r: HostResolver): HostResolver {
    const prev = this.resolver;
    this.resolver = r;
    return prev;
  }

  /**
   * The undici dispatcher: keep-alive pool of up to 128 connections per origin, 10 s idle
   * keep-alive, connect timeout min(10 s, `UPSTREAM_TIMEOUT_MS`), every lookup address-checked,
   * the system CA roots plus `UPSTREAM_CA_FILE` when set.
   * The first call imports undici; later calls resolve to the same Agent (a failed import is
   * tried again by the next call).
   */
  dispatcher(): Promise<Agent> {
    if (!this.agent) {
      const caFile = this.config.upstream.caFile;
      const loading = Promise.all([import('undici'), caFile ? readFile(caFile, 'utf8') : null]).then(
        ([{ Agent }, extraCa]) =>
          new Agent({
            connect: {
              lookup: this.guardedLookup(),
              timeout: Math.min(10_000, this.config.upstream.timeoutMs),
              // UPSTREAM_CA_FILE: trusted besides (not instead of) the system roots.
              ...(extraCa ? { ca: [...rootCertificates, extraCa] } : {}),
            },
            keepAliveTimeout: 10_000,
            connections: 128,
          }),
      );
      loading.catch(() => {
        if (this.agent === loading) this.agent = null;
      });
      this.agent = loading;
    }
    return this.agent;
  }

  /** Close the pool: in-flight calls get 500 ms, then the sockets are destroyed. Idempotent. */
  async close(): Promise<void> {
    const pending = this.agent;
    this.agent = null;
    const a = await pending?.catch(() => null);
    if (!a) return;
    await Promise.race([a.close(), new Promise((r) => setTimeout(r, 500).unref())]);
    await a.destroy().catch(() => undefined);
  }

  /**
   * Resolve `hostname` and check every address.
   * @throws BlockedAddressError when any address is refused; the resolver's error when it fails.
   */
  async resolveChecked(hostname: string): Promise<Array<{ address: string; family: number }>> {
    const allowLoopback = this.config.upstream.allowLoopback;
    const bare = hostname.replace(/^\[|\]$/g, '');
    const addrs = isIP(bare) ? [{ address: bare, family: isIP(bare) }] : await this.resolver(bare);
    if (addrs.length === 0) throw Object.assign(new Error(`${hostname} has no addresses`), { code: 'ENOTFOUND' });
    for (const a of addrs) {
      if (!isAddressAllowed(a.address, allowLoopback)) {
        throw new BlockedAddressError(
          `${hostname} resolves to a ${classifyAddress(a.address)} address (${a.address}), which upstream calls may not reach`,
        );
      }
    }
    return addrs;
  }

  private guardedLookup(): LookupFunction {
    return ((hostname: string, options: { all?: boolean }, cb: (...args: unknown[]) => void) => {
      this.resolveChecked(hostname).then(
        (addrs) => (options?.all ? cb(null, addrs) : cb(null, addrs[0].address, addrs[0].family)),
        (err) => cb(err),
      );
    }) as unknown as LookupFunction;
  }
}
