/**
 * Principals and authentication (DESIGN.md §6).
 *
 * Credentials are read from `Authorization: Bearer <token>` or `X-API-Key: <key>`. Keys start
 * `apk_`; everything else is a JWT. Modules contribute resolvers to an {@link AuthRegistry}
 * (identity: user JWTs; api-keys: keys; agents: agent JWTs); protected routes are registered
 * inside a scope guarded by {@link requireAuth} — never by URL allow-lists (STYLE.md).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { decodeJwt } from 'jose';
import { LRUCache } from 'lru-cache';
import type { Role } from '../config.js';
import { AppError } from './errors.js';

/**
 * What a credential may do, one word per kind of operation (RFC 6749 §3.3 scope tokens). Agent
 * tokens carry a subset of the first four (`agents/tokens.ts` AGENT_SCOPES); API keys carry any
 * subset of all eight; a user's own access token carries every scope. Operations outside this
 * vocabulary (catalog, subscriptions, connections, deployments…) are not narrowed by scopes.
 */
export const CREDENTIAL_SCOPES = [
  'memory:read',
  'memory:write',
  'permissions:manage',
  'tools:execute',
  'agents:manage',
  'api_keys:manage',
  'approvals:decide',
  'policies:manage',
] as const;
export type Scope = (typeof CREDENTIAL_SCOPES)[number];

/**
 * Scopes an API key gets only when its creation names them (`POST /api-keys` `scopes`), never by
 * default: a key is what agent code and scripts hold, and with these the caller a policy binds
 * could approve its own held call (`approvals:decide`) or rewrite the policies (`policies:manage`)
 * (docs/adr/0973).
 */
export const OPT_IN_KEY_SCOPES: readonly Scope[] = ['approvals:decide', 'policies:manage'];

/** A signed-in user (by OAuth/OIDC access token or by API key). */
export interface UserPrincipal {
  kind: 'user';
  /** Platform user id (`usr_…`). */
  userId: string;
  /** Identity-provider subject `<provider>|<id>` (spec "user_id"). */
  subject: string;
  email: string | null;
  roles: Role[];
  via: 'token' | 'api_key';
  /** Access-token or API-key expiry (absent for a key that never expires). */
  expiresAt?: Date;
  /** The API key (`key_…`) when `via` is `api_key`. */
  keyId?: string;
  /** The key's scopes; absent = every scope (user access tokens, keys made before scopes existed). */
  scopes?: ReadonlySet<Scope>;
}

/** An agent authenticated with the client_credentials grant (RFC 6749 §4.4). */
export interface AgentPrincipal {
  kind: 'agent';
  /** `agt_…` */
  agentId: string;
  /** The owning user's id (`usr_…`); the account the agent acts for. */
  ownerId: string;
  /** The owner's roles (rate limits and quotas follow the account). */
  roles: Role[];
  clientId: string;
  /** The token's `scope` claim as granted (space-split). */
  scope: string[];
  /**
   * The same scopes as a set: what {@link requireScope} looks up (verified tokens always carry it);
   * absent on a principal the host builds itself, where `scope` decides.
   */
  scopes?: ReadonlySet<Scope>;
  expiresAt?: Date;
}

export type Principal = UserPrincipal | AgentPrincipal;

/** The account (user id) that owns whatever this principal creates or reads. */
export function accountOf(p: Principal): string {
  return p.kind === 'user' ? p.userId : p.ownerId;
}

/**
 * Who acts on account-owned data (sessions, executions, memories): a user acts for its own
 * account; an agent (client_credentials token) acts for its owner's account and sees only the
 * records that carry its own `agent_id`.
 */
export interface SessionActor {
  accountId: string;
  agentId: string | null;
}

/** The actor of a principal: users act for themselves, agents for their owner. */
export function actorOf(p: Principal): SessionActor {
  return { accountId: accountOf(p), agentId: p.kind === 'agent' ? p.agentId : null };
}

/**
 * Verifies one family of bearer JWTs. `accepts` looks at the *unverified* payload only to pick a
 * resolver; `resolve` must verify signature, issuer, audience and expiry.
 * `resolve` throws AppError `token_expired` or `invalid_token`.
 */
export interface JwtResolver {
  name: string;
  accepts(unverifiedPayload: Record<string, unknown>): boolean;
  resolve(token: string, unverifiedPayload: Record<string, unknown>, opts: AuthenticateOptions): Promise<Principal>;
  /**
   * Optional synchronous answer for a token `resolve` accepted before: the principal when every
   * check `resolve` makes (signature verified earlier, expiry, revocation, liveness) can be
   * answered from this process's memory now and passes; `undefined` otherwise — then `resolve`
   * runs and gives the answer (refusals included). Never throws.
   */
  resolveKnown?(token: string, payload: Record<string, unknown>, opts: AuthenticateOptions): Principal | undefined;
}

/** Where a credential is presented. */
export interface AuthenticateOptions {
  /**
   * A protected resource (RFC 8707/RFC 9728 resource URI, e.g. `<PUBLIC_URL>/mcp`) whose own
   * audience is accepted besides the API's (`AUTH_AUDIENCE`). Tokens issued for a resource are
   * accepted only there (MCP "Authorization" §Token Audience Binding).
   */
  resource?: string;
}

/** Resolves an API key (`apk_…`) to its user, or throws AppError `invalid_token`. */
export type ApiKeyResolver = (key: string) => Promise<UserPrincipal>;

/** A bearer JWT that verified once, and the resolver it goes to. */
interface Routed {
  token: string;
  payload: Record<string, unknown>;
  resolver: JwtResolver;
}

/**
 * Characters at the end of a JWT (its signature) that key the routing cache. Hashing a whole
 * ~800-character token for a map lookup cost ~2–4 µs per request (a fresh header string each
 * time); a hit is confirmed by comparing the whole token, so a shared tail only misses.
 */
const ROUTE_KEY_CHARS = 32;

/** The place modules register how their credentials are verified. */
export class AuthRegistry {
  private readonly jwtResolvers: JwtResolver[] = [];
  private apiKeyResolver?: ApiKeyResolver;
  /**
   * Bearer JWT → its decoded (unverified) payload and the resolver it goes to: decoding a token
   * (base64url + JSON) was ~3 % of an agent-memory GET. Only routing is cached here;
   * every use still goes through the resolver, which verifies (its own caches re-check expiry,
   * revocation and liveness). At most 10,000 tokens, least recently used first out (no time limit:
   * an expired token is refused by its resolver; lru-cache's per-get staleness check was ~1–2 % of
   * an agent-memory GET). Keyed by the token's last {@link ROUTE_KEY_CHARS} characters.
   */
  private readonly routed = new LRUCache<string, Routed>({ max: 10_000 });

  constructor(private readonly opts: { apiKeysEnabled: boolean }) {}

  addJwtResolver(r: JwtResolver): void {
    this.jwtResolvers.push(r);
    this.routed.clear();
  }

  setApiKeyResolver(r: ApiKeyResolver): void {
    this.apiKeyResolver = r;
  }

  /** The credential on a request, or null when none was sent. */
  static credentialOf(req: FastifyRequest): string | null {
    const key = req.headers['x-api-key'];
    if (typeof key === 'string' && key.length > 0) return key.trim();
    const h = req.headers.authorization;
    if (!h) return null;
    const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
    if (!m) throw new AppError('invalid_token', 'Authorization header must be "Bearer <token>"');
    return m[1];
  }

  /** The routing of `token` when it verified before. */
  private routeOf(token: string): Routed | undefined {
    const r = this.routed.get(token.slice(-ROUTE_KEY_CHARS));
    return r !== undefined && r.token === token ? r : undefined;
  }

  /**
   * The principal of a request whose credential is a known bearer JWT (`Authorization: Bearer
   * <token>` exactly, no `X-API-Key`) that its resolver can accept from memory now
   * ({@link JwtResolver.resolveKnown}); `undefined` in every other case (then
   * {@link credentialOf} + {@link authenticate} give the answer). Never throws.
   */
  knownPrincipal(req: FastifyRequest, opts: AuthenticateOptions = {}): Principal | undefined {
    const h = req.headers.authorization;
    if (h === undefined || req.headers['x-api-key'] !== undefined || !h.startsWith('Bearer ')) return undefined;
    const r = this.routed.get(h.slice(-ROUTE_KEY_CHARS));
    // "Bearer " + the token itself (a verified JWT holds no whitespace): what credentialOf would
    // return. Compared as a slice with `===` (V8 compares flat strings in bulk: ~60 ns for an
    // 800-character token against ~700 ns for `endsWith`, which walks it character by character).
    if (r === undefined || h.length !== r.token.length + 7 || h.slice(7) !== r.token) return undefined;
    return r.resolver.resolveKnown?.(r.token, r.payload, opts);
  }

  /** Verify a bearer credential. @throws AppError invalid_token | token_expired */
  async authenticate(credential: string, opts: AuthenticateOptions = {}): Promise<Principal> {
    if (credential.startsWith('apk_')) {
      if (!this.opts.apiKeysEnabled || !this.apiKeyResolver)
        throw new AppError('invalid_token', 'API-key authentication is disabled');
      return this.apiKeyResolver(credential);
    }
    const known = this.routeOf(credential);
    if (known) return known.resolver.resolve(known.token, known.payload, opts);
    let payload: Record<string, unknown>;
    try {
      payload = decodeJwt(credential) as Record<string, unknown>;
    } catch {
      throw new AppError('invalid_token', 'Token is not a well-formed JWT');
    }
    const resolver = this.jwtResolvers.find((r) => r.accepts(payload));
    if (!resolver) throw new AppError('invalid_token', 'Token was not issued for this API');
    const principal = await resolver.resolve(credential, payload, opts);
    // Routed again next time without decoding — only tokens that verified once are kept.
    this.routed.set(credential.slice(-ROUTE_KEY_CHARS), {
      token: credential,
      payload: Object.freeze(payload),
      resolver,
    });
    return principal;
  }
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by {@link requireAuth} (and by the rate limiter for optional auth). */
    principal: Principal | null;
  }
}

/** Options of {@link requireAuth}. */
export interface AuthOptions {
  /** Principal kinds admitted (default: users and agents). */
  principals?: Array<Principal['kind']>;
  /** Roles admitted (any of); default: all. Insufficient role → 403 `insufficient_role`. */
  roles?: Role[];
  /** The protected resource this scope is (see {@link AuthenticateOptions.resource}). */
  resource?: string;
}

/**
 * Who may call a route, as published in its OpenAPI operation under {@link AUTH_EXTENSION}:
 * `{ principals: ['user' | 'agent', …], roles?: Role[] }`. Stamped by {@link requireAuth} on every
 * route of its scope; the authorization matrix (test/security) reads it from `/openapi.json`.
 */
export interface AuthDeclaration {
  principals: Array<Principal['kind']>;
  roles?: Role[];
}

/** OpenAPI extension key carrying a route's {@link AuthDeclaration}. */
export const AUTH_EXTENSION = 'x-auth';

/**
 * Require a principal in this scope (adds an onRequest hook), and declare it on every route of the
 * scope (OpenAPI `x-auth`, see {@link AuthDeclaration}). Use inside `app.register(async (scope) => …)`.
 */
export function requireAuth(scope: FastifyInstance, registry: AuthRegistry, opts: AuthOptions = {}): void {
  const kinds = opts.principals ?? ['user', 'agent'];
  const declaration: AuthDeclaration = { principals: kinds, ...(opts.roles ? { roles: opts.roles } : {}) };
  scope.addHook('onRoute', (route) => {
    // The innermost scope's requirement is the one a request meets last, hence the effective one.
    route.schema = { ...route.schema, [AUTH_EXTENSION]: declaration } as typeof route.schema;
  });
  /** Admit `p` on `req`: the principal is set, then its kind and roles checked. Returns the refusal. */
  const admit = (req: FastifyRequest, p: Principal): AppError | undefined => {
    req.principal = p;
    if (!kinds.includes(p.kind)) {
      if (p.kind === 'user')
        return new AppError(
          'agent_token_required',
          'This endpoint needs an agent access token (POST /auth/agent/token)',
        );
      return new AppError('forbidden', 'This endpoint is for users, not agents');
    }
    return opts.roles ? roleRefusal(p, opts.roles) : undefined;
  };
  const authOpts: AuthenticateOptions = { resource: opts.resource };
  // A callback hook: a token answered from memory costs no promise; others verify async.
  scope.addHook('onRequest', (req: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
    const known = registry.knownPrincipal(req, authOpts);
    if (known !== undefined) return done(admit(req, known));
    let cred: string | null;
    try {
      cred = AuthRegistry.credentialOf(req);
    } catch (err) {
      return done(err as Error);
    }
    if (!cred) return done(new AppError('unauthenticated', 'This endpoint needs a bearer token or API key'));
    registry.authenticate(cred, authOpts).then((p) => done(admit(req, p)), done);
  });
}

/** The insufficient_role refusal unless `p` holds one of `roles`; undefined when it does. */
function roleRefusal(p: Principal, roles: Role[]): AppError | undefined {
  return p.roles.some((r) => roles.includes(r))
    ? undefined
    : new AppError('insufficient_role', `This endpoint needs one of the roles: ${roles.join(', ')}`);
}

/** True when `p` may do what `scope` names (a set lookup: this runs on every execution). */
export function hasScope(p: Principal, scope: Scope): boolean {
  if (p.scopes !== undefined) return p.scopes.has(scope);
  return p.kind === 'user' || p.scope.includes(scope);
}

/**
 * Require `scope` of the credential behind `p` (agent token or API key; a user's own access token
 * holds every scope). The one check every face reaches through the service it calls.
 * @throws AppError insufficient_scope (403, RFC 6750 §3.1), with `WWW-Authenticate` naming the scope
 */
export function requireScope(p: Principal, scope: Scope): void {
  if (hasScope(p, scope)) return;
  const how =
    p.kind === 'agent'
      ? 'request a token with it (POST /auth/agent/token)'
      : 'use a key that has it (POST /api-keys with "scopes")';
  throw new AppError('insufficient_scope', `This request needs the "${scope}" scope; ${how}`, {
    headers: { 'www-authenticate': `Bearer realm="agent-platform", error="insufficient_scope", scope="${scope}"` },
    extra: { required_scope: scope },
  });
}

/**
 * Refuse to mint, with `p`'s authority, a credential (an API key, an agent's client secret) that
 * could do more than `p`: every scope in `scopes` must be one `p` holds (a user's own token holds
 * every scope). `what` names the credential in the message.
 * @throws AppError exceeds_credential (403) naming the scopes `p` lacks
 */
export function requireWithin(p: Principal, scopes: Iterable<Scope>, what: string): void {
  const missing = [...scopes].filter((s) => !hasScope(p, s));
  if (missing.length === 0) return;
  throw new AppError(
    'exceeds_credential',
    `This credential cannot create ${what} with scopes it does not hold itself: ${missing.join(', ')}`,
    {
      extra: { missing_scopes: missing },
    },
  );
}

/** @throws AppError insufficient_role unless `p` holds one of `roles`. */
export function checkRole(p: Principal, roles: Role[]): void {
  const refusal = roleRefusal(p, roles);
  if (refusal) throw refusal;
}

/** The principal of a request inside a {@link requireAuth} scope. */
export function principalOf(req: FastifyRequest): Principal {
  if (!req.principal) throw new AppError('unauthenticated', 'Authentication required');
  return req.principal;
}

/** The user principal of a request inside a user-only scope. */
export function userOf(req: FastifyRequest): UserPrincipal {
  const p = principalOf(req);
  if (p.kind !== 'user') throw new AppError('forbidden', 'This endpoint is for users, not agents');
  return p;
}

/** The agent principal of a request inside an agent-only scope. */
export function agentOf(req: FastifyRequest): AgentPrincipal {
  const p = principalOf(req);
  if (p.kind !== 'agent') throw new AppError('agent_token_required', 'This endpoint needs an agent access token');
  return p;
}

export type { FastifyReply };
