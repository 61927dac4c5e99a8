/**
 * Allow-listed egress of sandboxed code: the deployment's `egress` patterns, and the
 * host-side HTTP proxy that is the sandbox's only way out.
 *
 * A sandbox process lives in an empty network namespace. When its deployment declares `egress`,
 * the host starts one {@link EgressProxy} per execution environment, listening on a unix socket
 * with an unguessable name (file-system sockets cross network namespaces; the directory is not
 * listable, and Node's permission model keeps the code from reading it). Inside the sandbox the
 * bootstrap brings up nothing but a loopback relay to that socket, sets `HTTP_PROXY`/`HTTPS_PROXY`
 * to it and installs an undici `ProxyAgent` as the global dispatcher, so `fetch` works unchanged.
 *
 * The proxy speaks HTTP/1.1 proxy semantics (RFC 9110 §9.3.6 CONNECT tunnels, and absolute-form
 * requests, RFC 9112 §3.2.2, for plain-HTTP clients). Each target is admitted only when
 * 1. it matches an allow-list pattern ({@link egressAllows}), and
 * 2. every address it resolves to passes the platform's SSRF rules (the injected
 *    {@link EgressResolver}: `UpstreamPool.resolveChecked` in `src/upstream/pool.ts`), and the connection goes to
 *    the checked address itself (no DNS-rebinding window).
 * Refusals answer 403 to the client and are reported through `onDenied` (the invocation's logs).
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';

/**
 * One parsed allow-list pattern: `host`, `*.suffix` (any sub-domain of `suffix`, not `suffix`
 * itself), each with an optional `:port`. Without a port the default ports 80 and 443 are admitted.
 */
export interface EgressRule {
  /** Lower-case host name or IPv4 literal (for a wildcard: the suffix, without `*.`). */
  host: string;
  wildcard: boolean;
  /** 1–65535, or null for the default ports (80, 443). */
  port: number | null;
}

/** Most patterns per deployment. */
export const MAX_EGRESS_RULES = 50;

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/**
 * Parse one pattern (`api.example.com`, `*.example.org:443`, `203.0.113.7:8443`).
 * Host names follow RFC 1123 §2.1 (letters, digits, hyphens; labels ≤ 63; ≤ 253 in all); IPv6
 * literals are not accepted.
 * @returns the rule, or a string saying why the pattern is invalid.
 */
export function parseEgressRule(raw: string): EgressRule | string {
  if (typeof raw !== 'string') return 'must be a string';
  const s = raw.trim().toLowerCase();
  const m = /^(\*\.)?([^:]+)(?::(\d{1,5}))?$/.exec(s);
  if (!m) return 'must be "host", "*.domain" or either with ":port"';
  const host = m[2].replace(/\.$/, '');
  const port = m[3] === undefined ? null : Number(m[3]);
  if (port !== null && (port < 1 || port > 65535)) return 'port must be 1-65535';
  if (host.length > 253 || !host.split('.').every((l) => LABEL.test(l))) return 'not a valid host name';
  if (m[1] && !host.includes('.')) return 'a wildcard needs a domain with at least two labels ("*.example.com")';
  if (m[1] && net.isIP(host)) return 'a wildcard cannot apply to an IP address';
  return { host, wildcard: !!m[1], port };
}

/**
 * Validate and normalise a deployment's `egress` list (de-duplicated, order kept).
 * @returns `{ rules }` (normalised pattern strings) or `{ errors }` with JSON-pointer-style indexes.
 */
export function parseEgress(
  list: unknown,
):
  | { patterns: string[]; errors?: undefined }
  | { errors: Array<{ index: number | null; message: string }>; patterns?: undefined } {
  if (!Array.isArray(list)) return { errors: [{ index: null, message: 'must be an array of strings' }] };
  if (list.length > MAX_EGRESS_RULES)
    return { errors: [{ index: null, message: `at most ${MAX_EGRESS_RULES} patterns` }] };
  const errors: Array<{ index: number; message: string }> = [];
  const out: string[] = [];
  list.forEach((raw, index) => {
    const r = parseEgressRule(raw as string);
    if (typeof r === 'string') errors.push({ index, message: r });
    else {
      const norm = `${r.wildcard ? '*.' : ''}${r.host}${r.port === null ? '' : `:${r.port}`}`;
      if (!out.includes(norm)) out.push(norm);
    }
  });
  return errors.length ? { errors } : { patterns: out };
}

/** Does `host:port` match one of `rules`? `host` is compared lower-case without a trailing dot. */
export function egressAllows(rules: EgressRule[], host: string, port: number): boolean {
  const h = host.toLowerCase().replace(/\.$/, '');
  return rules.some(
    (r) =>
      (r.port === null ? port === 80 || port === 443 : port === r.port) &&
      (r.wildcard ? h.endsWith(`.${r.host}`) : h === r.host),
  );
}

/**
 * Resolves a host name (or IP literal) to the addresses a connection may use, applying the SSRF
 * rules. @throws an Error (with `blocked: true` when an address is refused) — the target is denied.
 */
export type EgressResolver = (hostname: string) => Promise<Array<{ address: string; family: number }>>;

/** A refused or failed egress attempt, for the invocation's logs. */
export interface EgressEvent {
  /** `CONNECT` or the method of a forwarded request. */
  method: string;
  host: string;
  port: number;
  /** `not_allowed` (no pattern matches), `blocked_address` (SSRF rules), `unreachable` (DNS or connect failure). */
  reason: 'not_allowed' | 'blocked_address' | 'unreachable';
  message: string;
}

const CONNECT_TIMEOUT_MS = 10_000;
/** Simultaneous client connections per environment. */
const MAX_CONNECTIONS = 64;
const HOP_BY_HOP = ['proxy-authorization', 'proxy-connection', 'connection', 'keep-alive', 'te', 'trailer', 'upgrade'];

/** The host proxy of one execution environment. Create with {@link EgressProxy.listen}. */
export class EgressProxy {
  private constructor(
    /** Path of the unix socket (mode 0666, in a directory that cannot be listed). */
    readonly socketPath: string,
    private readonly server: http.Server,
  ) {}

  /**
   * Listen on a new socket in `dir` (created 0711: traversable, not listable).
   * `onDenied` receives every refused or failed attempt.
   */
  static async listen(
    dir: string,
    patterns: string[],
    resolve: EgressResolver,
    onDenied: (e: EgressEvent) => void,
  ): Promise<EgressProxy> {
    const rules = patterns.map(parseEgressRule).filter((r): r is EgressRule => typeof r !== 'string');
    fs.mkdirSync(dir, { recursive: true, mode: 0o711 });
    fs.chmodSync(dir, 0o711);
    const socketPath = path.join(dir, `${randomBytes(16).toString('hex')}.sock`);
    const server = http.createServer();
    server.maxConnections = MAX_CONNECTIONS;
    const check = async (method: string, host: string, port: number): Promise<string | null> => {
      const deny = (reason: EgressEvent['reason'], message: string) => {
        onDenied({ method, host, port, reason, message });
        return null;
      };
      if (!egressAllows(rules, host, port))
        return deny('not_allowed', `${host}:${port} is not in the deployment's egress allow-list`);
      try {
        const [a] = await resolve(host);
        return a.address;
      } catch (err) {
        const e = err as Error & { blocked?: boolean };
        return deny(e.blocked ? 'blocked_address' : 'unreachable', e.message);
      }
    };
    server.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
      client.on('error', () => {});
      const target = parseAuthority(req.url ?? '', 443);
      if (!target) return void client.end('HTTP/1.1 400 Bad Request\r\n\r\n');
      void check('CONNECT', target.host, target.port).then((address) => {
        if (!address)
          return void client.end(
            'HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\n\r\negress to this host is not allowed\n',
          );
        if (client.destroyed) return;
        const upstream = net.connect({ host: address, port: target.port, timeout: CONNECT_TIMEOUT_MS });
        upstream.once('connect', () => {
          upstream.setTimeout(0);
          client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
          if (head.length) upstream.write(head);
          upstream.pipe(client);
          client.pipe(upstream);
        });
        const fail = (message: string) => {
          onDenied({ method: 'CONNECT', host: target.host, port: target.port, reason: 'unreachable', message });
          client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
          upstream.destroy();
        };
        upstream.once('timeout', () => fail('connect timed out'));
        upstream.on('error', (e) => (upstream.readyState === 'opening' ? fail(e.message) : client.destroy()));
        client.on('close', () => upstream.destroy());
      });
    });
    server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
      let url: URL;
      try {
        url = new URL(req.url ?? '');
        if (url.protocol !== 'http:') throw new Error('scheme');
      } catch {
        return void res
          .writeHead(400, { 'content-type': 'text/plain' })
          .end('absolute-form http:// request expected (use CONNECT for https)\n');
      }
      const host = url.hostname.replace(/^\[|\]$/g, '');
      const port = Number(url.port || 80);
      void check(req.method ?? 'GET', host, port).then((address) => {
        if (!address)
          return void res.writeHead(403, { 'content-type': 'text/plain' }).end('egress to this host is not allowed\n');
        const headers = { ...req.headers };
        for (const h of HOP_BY_HOP) delete headers[h];
        const out = http.request({
          host: address,
          port,
          method: req.method,
          path: `${url.pathname}${url.search}`,
          headers: { ...headers, host: url.host },
          setHost: false,
          timeout: CONNECT_TIMEOUT_MS,
        });
        out.on('response', (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        });
        out.on('timeout', () => out.destroy(new Error('upstream timed out')));
        out.on('error', (e) => {
          onDenied({ method: req.method ?? 'GET', host, port, reason: 'unreachable', message: e.message });
          if (!res.headersSent) res.writeHead(502).end();
          else res.destroy();
        });
        req.pipe(out);
      });
    });
    await new Promise<void>((ok, fail) => {
      server.once('error', fail);
      server.listen(socketPath, () => ok());
    });
    fs.chmodSync(socketPath, 0o666);
    return new EgressProxy(socketPath, server);
  }

  /** Stop listening, drop open tunnels and remove the socket file. */
  close(): void {
    this.server.close();
    this.server.closeAllConnections();
    fs.rm(this.socketPath, { force: true }, () => {});
  }
}

/** `host:port` of a CONNECT request (RFC 9110 §9.3.6 authority-form; `[v6]:port` accepted), or null. */
function parseAuthority(authority: string, defaultPort: number): { host: string; port: number } | null {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:/@[\]\s]+)(?::(\d{1,5}))?$/.exec(authority);
  if (!m) return null;
  const port = m[2] === undefined ? defaultPort : Number(m[2]);
  if (port < 1 || port > 65535) return null;
  return { host: m[1].replace(/^\[|\]$/g, ''), port };
}
