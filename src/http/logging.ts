/**
 * Request logging without secrets: the values of query parameters whose names carry a secret
 * (`lib/secret-names.ts`: `api_key`, `key`, `password`, `access_token` (RFC 6750 §2.3), …) and of
 * the OAuth 2.0 authorization response's single-use `code` and `state` (RFC 6749 §4.1.2) are
 * replaced in logged URLs — the connections callback (`GET /connections/callback?code=…&state=…`)
 * is reached by a browser redirect, so its credentials travel in the query string.
 */
import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest } from 'fastify';
import type { FastifyChildLoggerFactory } from 'fastify/types/logger.js';
import { isSecretName } from '../lib/secret-names.js';

/** pino's level values (unknown custom levels count as enabled). */
const LEVELS: Record<string, number> = {
  trace: 10,
  debug: 20,
  info: 30,
  warn: 40,
  error: 50,
  fatal: 60,
  silent: Infinity,
};

/**
 * The numeric level of `log` (pino's `levelVal`: 30 for info, Infinity for silent): read as a
 * number, not through the `level` name getter (pino maps the value back to its name on each read;
 * with two checks per request that was ~0.5 µs of an agent-memory GET).
 */
function levelValOf(log: FastifyBaseLogger): number {
  const v = (log as { levelVal?: unknown }).levelVal;
  return typeof v === 'number' ? v : (LEVELS[log.level] ?? 0);
}

/** Whether `log` writes lines of `level`. */
function enabled(log: FastifyBaseLogger, level: 'debug' | 'info' | 'error'): boolean {
  return levelValOf(log) <= LEVELS[level];
}

/** The authorization response's single-use values (RFC 6749 §4.1.2): credentials, though not by name. */
const OAUTH_RESPONSE_PARAMS = /^(?:code|state)$/i;

/** Whether the value of the query parameter `name` (decoded) stays out of the logs. */
function isSecretParam(name: string): boolean {
  return OAUTH_RESPONSE_PARAMS.test(name) || isSecretName(name);
}

/** The decoded form of a query parameter name (`+` is a space); the raw name when it is malformed. */
function decodeName(name: string): string {
  try {
    return decodeURIComponent(name.replace(/\+/g, ' '));
  } catch {
    return name;
  }
}

/** `url` (path + query) with the values of secret parameters ({@link isSecretParam}) replaced by `[redacted]`. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const params = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const name = eq < 0 ? pair : pair.slice(0, eq);
      return eq >= 0 && isSecretParam(decodeName(name)) ? `${name}=[redacted]` : pair;
    });
  return `${url.slice(0, q)}?${params.join('&')}`;
}

/** pino serializer of `req` (the fields of Fastify's default one, the URL redacted). */
export function serializeRequest(req: FastifyRequest): Record<string, unknown> {
  return {
    method: req.method,
    url: redactUrl(req.url),
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  };
}

/**
 * Fastify's per-request log lines, one per request (Fastify writes two by default: `incoming
 * request` and `request completed`). The line (`msg: "request"`) is written when the answer has
 * been sent — hijacked replies (`/idp`, MCP streams) included — with `reqId` (the `x-request-id`),
 * `req` ({@link serializeRequest}: method, redacted URL, host, client address), `route` (the
 * matched pattern, e.g. `/v2/agents/:id`; absent for unknown URLs), `res.statusCode`,
 * `responseTime` (ms), the principal's kind and id when authenticated (never a credential), and
 * `err` when the response failed. Level `info`, `error` for 5xx answers and failed responses.
 * Fastify's separate "route not found" line is dropped (the request line carries the 404); the
 * arrival of a request is logged at `debug` only.
 */
export class RequestLogController extends LogController {
  /** Client addresses, read when the request arrives: by the time it is answered the socket may be gone. */
  private readonly clients = new WeakMap<FastifyRequest, string | undefined>();

  /** At `debug` only: `request received` (to see requests still in flight). */
  override incomingRequest(request: FastifyRequest): void {
    // Nothing is built for a line the level drops (this runs on every request).
    if (!enabled(request.log, 'info')) return;
    this.clients.set(request, request.ip);
    if (enabled(request.log, 'debug')) request.log.debug({ req: serializeRequest(request) }, 'request received');
  }

  override routeNotFound(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const failed = !!error || reply.statusCode >= 500;
    if (!enabled(request.log, failed ? 'error' : 'info')) return;
    const principal = request.principal;
    const fields = {
      req: { ...serializeRequest(request), remoteAddress: this.clients.get(request) ?? request.ip },
      route: request.routeOptions.url,
      res: { statusCode: reply.statusCode },
      responseTime: Math.round(reply.elapsedTime * 100) / 100,
      ...(principal
        ? { principal: { kind: principal.kind, id: principal.kind === 'agent' ? principal.agentId : principal.userId } }
        : {}),
      ...(error ? { err: error } : {}),
    };
    if (failed) request.log.error(fields, 'request');
    else request.log.info(fields, 'request');
  }
}

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

/**
 * A request's logger that becomes a real pino child (with the request id binding) only when a
 * line at an enabled level is written: Fastify builds a child per request by default, which
 * serialises its bindings each time (~1 % of an execute's CPU, for lines that
 * `LOG_LEVEL=warn` mostly drops). Lines, bindings, serializers and levels are those of the child
 * it stands for.
 */
class LazyChildLogger {
  #child: FastifyBaseLogger | undefined;
  #level: string | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Record<string, unknown>,
    private readonly opts: Record<string, unknown>,
  ) {
    this.#level = opts.level as string | undefined;
  }

  /** pino's numeric level of the child this stands for (see {@link levelValOf}). */
  get levelVal(): number {
    if (this.#child) return levelValOf(this.#child);
    return this.#level === undefined ? levelValOf(this.parent) : (LEVELS[this.#level] ?? 0);
  }

  /** The pino child, built on first need. */
  private real(): FastifyBaseLogger {
    return (this.#child ??= this.parent.child(this.bindings, this.opts as never));
  }

  get level(): string {
    return this.#child?.level ?? this.#level ?? this.parent.level;
  }

  set level(l: string) {
    this.real().level = l;
  }

  /** Write one line at `level` (dropped without building the child when the level is off). */
  write(level: Level, args: unknown[]): void {
    if (this.levelVal > LEVELS[level]) return;
    (this.real()[level] as (...a: unknown[]) => void)(...args);
  }

  // The level methods are on the prototype (below): nothing is allocated per request beyond the object.
  declare fatal: (...a: unknown[]) => void;
  declare error: (...a: unknown[]) => void;
  declare warn: (...a: unknown[]) => void;
  declare info: (...a: unknown[]) => void;
  declare debug: (...a: unknown[]) => void;
  declare trace: (...a: unknown[]) => void;
  silent(): void {}

  child(bindings: Record<string, unknown>, opts?: Record<string, unknown>): FastifyBaseLogger {
    return this.real().child(bindings, opts as never);
  }
}

for (const level of ['fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const) {
  LazyChildLogger.prototype[level] = function (this: LazyChildLogger, ...a: unknown[]) {
    this.write(level, a);
  };
}

/**
 * Fastify `childLoggerFactory`: the per-request logger is a {@link LazyChildLogger}.
 * Same arguments as Fastify's default factory (`logger.child(bindings, opts)`).
 */
export const lazyChildLoggerFactory: FastifyChildLoggerFactory = (logger, bindings, opts) =>
  new LazyChildLogger(
    logger,
    bindings as Record<string, unknown>,
    opts as Record<string, unknown>,
  ) as unknown as FastifyBaseLogger;
