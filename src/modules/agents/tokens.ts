/**
 * Agent access tokens: the OAuth 2.0 client credentials grant (RFC 6749 §4.4) and the verifier
 * registered on `ctx.auth` for tokens whose `sub` is an agent id.
 *
 * Tokens are JWTs (RFC 9068 profile, `typ` "at+jwt") signed RS256 with the platform keys (the
 * identity module's key set), issuer `<PUBLIC_URL>/idp`, audience `AUTH_AUDIENCE`, with claims
 * `sub` (`agt_…`), `client_id`, `scope` (space-delimited), `sid` (the client secret it was issued
 * with) and `roles` (the owner's roles at issuance). Lifetime `AGENT_TOKEN_TTL` seconds, never
 * beyond the end of the secret's rotation grace period.
 *
 * Verification checks signature, issuer, audience and expiry (the verified claims are cached by
 * token string, expiry re-checked on every use), then that the agent is `active` and the secret
 * `sid` is still live: one indexed query, cached in-process per agent for `AGENT_AUTH_CACHE_MS`. Rotation, disabling and deletion evict the cache entry in this process
 * and, when Redis is configured, publish the eviction to every instance (pub/sub, at most once:
 * a lost message leaves another instance stale for at most `AGENT_AUTH_CACHE_MS`).
 */
import { randomBytes } from 'node:crypto';
import { and, eq, gt, isNull, or } from 'drizzle-orm';
import { SignJWT } from 'jose';
import type { Static } from 'typebox';
import type { Role } from '../../config.js';
import { ROLES } from '../../config.js';
import type { AppContext } from '../../context.js';
import { agentSecrets, agents } from '../../db/schema/index.js';
import type { AgentPrincipal, Scope } from '../../http/auth.js';
import { AppError } from '../../http/errors.js';
import { SharedCache } from '../../lib/shared-cache.js';
import { DUMMY_HASH, verifyPassword } from '../identity/passwords.js';
import type { AgentAuthState, Liveness, PlatformSigner } from './auth-state.js';
import type { TokenResponseSchema } from './schemas.js';

export type { PlatformSigner } from './auth-state.js';

/** Scopes an agent token can carry (a subset of `CREDENTIAL_SCOPES`). The default (no `scope` parameter) is all of them. */
export const AGENT_SCOPES = [
  'memory:read',
  'memory:write',
  'permissions:manage',
  'tools:execute',
] as const satisfies readonly Scope[];
export type AgentScope = (typeof AGENT_SCOPES)[number];

/**
 * The agent scopes among `granted` as the set an {@link AgentPrincipal} carries (words outside
 * {@link AGENT_SCOPES} are dropped: a token never holds key or agent management).
 */
export function agentScopeSet(granted: Iterable<string>): ReadonlySet<Scope> {
  const set = new Set<Scope>();
  for (const s of granted) if ((AGENT_SCOPES as readonly string[]).includes(s)) set.add(s as Scope);
  return set;
}

/** RFC 6749 §5.2 error codes used by the token endpoint. */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  | 'rate_limited';

/** A token-endpoint failure, rendered as the RFC 6749 §5.2 body (not problem+json). */
export class OAuthError extends Error {
  constructor(
    readonly error: OAuthErrorCode,
    description: string,
    /** 401 for `invalid_client` (with `WWW-Authenticate: Basic`), 429 when rate limited, else 400. */
    readonly status = error === 'invalid_client' ? 401 : error === 'rate_limited' ? 429 : 400,
  ) {
    super(description);
  }
}

/** RFC 6749 §5.1 successful token response. */
export type AgentTokenResponse = Static<typeof TokenResponseSchema>;

function stateOf(ctx: AppContext): AgentAuthState {
  const s = ctx.agentAuth;
  if (!s) throw new Error('agent auth is not installed (installAgentAuth)');
  return s;
}

/**
 * Install agent-token verification on `ctx.auth` (a JwtResolver accepting `sub` = `agt_…`) and
 * the liveness cache (`AGENT_AUTH_CACHE_MS`, 0 = none). Called once per app by the agents routes plugin.
 */
export async function installAgentAuth(ctx: AppContext, signer: PlatformSigner): Promise<void> {
  if (ctx.agentAuth) return;
  const cache = SharedCache.of<Liveness>(ctx, {
    name: 'agents.liveness',
    max: 50_000,
    ttlMs: ctx.config.agents.authCacheMs,
  });
  const load = async (agentId: string): Promise<Liveness> => {
    const loaded = await loadLiveness(ctx, agentId);
    if (!loaded) throw new AppError('invalid_token', 'The agent of this token does not exist');
    return loaded;
  };
  ctx.agentAuth = { signer, cache, load, principals: new WeakMap() };
  await cache.ready();
  ctx.auth.addJwtResolver({
    name: 'agent',
    accepts: (p) => typeof p.sub === 'string' && p.sub.startsWith('agt_'),
    resolve: (token) => resolveAgentToken(ctx, token),
    resolveKnown: (token) => knownAgentToken(ctx, token),
  });
}

/** Forget cached liveness of `agentId` here and (with Redis) on every instance. Never throws. */
export async function invalidateAgentAuth(ctx: AppContext, agentId: string): Promise<void> {
  await ctx.agentAuth?.cache.invalidate(agentId);
}

/** The agent's owner, status and live secrets, fresh from the database; null when there is no such agent. */
export async function loadLiveness(ctx: AppContext, agentId: string): Promise<Liveness | null> {
  const rows = await ctx.db
    .select({ ownerId: agents.ownerId, status: agents.status, sid: agentSecrets.id, expiresAt: agentSecrets.expiresAt })
    .from(agents)
    .leftJoin(agentSecrets, eq(agentSecrets.agentId, agents.id))
    .where(eq(agents.id, agentId));
  if (rows.length === 0) return null;
  const secrets = new Map<string, number | null>();
  for (const r of rows) if (r.sid) secrets.set(r.sid, r.expiresAt ? r.expiresAt.getTime() : null);
  return { ownerId: rows[0].ownerId, status: rows[0].status, secrets };
}

/** Why a token with secret `sid` is refused for this agent, or null when it is accepted. */
function refusal(live: Liveness, sid: string): string | null {
  if (live.status !== 'active') return `The agent is ${live.status}`;
  const exp = live.secrets.get(sid);
  if (exp === undefined || (exp !== null && exp <= Date.now()))
    return 'The client secret this token was issued with has been rotated; request a new token';
  return null;
}

/** The known roles in `v` (a roles column or claim); `['user']` when none. */
export function rolesOf(v: unknown): Role[] {
  const list = Array.isArray(v) ? v.filter((r): r is Role => (ROLES as readonly string[]).includes(r as string)) : [];
  return list.length ? list : ['user'];
}

/**
 * Verify an agent access token. @throws AppError token_expired | invalid_token (agent disabled
 * or deleted, or the secret the token was issued with was rotated away).
 */
export async function resolveAgentToken(ctx: AppContext, token: string): Promise<AgentPrincipal> {
  const state = stateOf(ctx);
  // The signer keeps recently verified tokens (expiry re-checked on every use).
  const p = await state.signer.verifyPlatformToken(token);
  const agentId = p.sub;
  const sid = p.sid;
  if (
    typeof agentId !== 'string' ||
    !agentId.startsWith('agt_') ||
    typeof sid !== 'string' ||
    typeof p.client_id !== 'string'
  ) {
    throw new AppError('invalid_token', 'Token is not an agent access token');
  }
  let live = await state.cache.get(agentId, state.load);
  // A cached entry may only make an acceptance stale, never a refusal: a refusal from the cache
  // (e.g. a secret created or an agent re-enabled on another instance) is re-checked fresh.
  if (refusal(live, sid)) {
    state.cache.evictLocal(agentId);
    live = await state.cache.get(agentId, state.load);
  }
  const why = refusal(live, sid);
  if (why) throw new AppError('invalid_token', why);
  const known = state.principals.get(p);
  if (known && known.principal.ownerId === live.ownerId) return known.principal;
  const granted = typeof p.scope === 'string' ? p.scope.split(' ').filter(Boolean) : [];
  // Frozen: later requests with the same token get this very object.
  const principal: AgentPrincipal = Object.freeze({
    kind: 'agent',
    agentId,
    ownerId: live.ownerId,
    roles: Object.freeze(rolesOf(p.roles)) as Role[],
    clientId: p.client_id,
    scope: Object.freeze(granted) as string[],
    scopes: agentScopeSet(granted),
    expiresAt: new Date((p.exp ?? 0) * 1000),
  });
  state.principals.set(p, { principal, sid });
  return principal;
}

/**
 * {@link resolveAgentToken} answered from memory: the principal of a token the signer verified
 * recently and still accepts, whose agent's cached liveness accepts it now; `undefined` when any
 * of these is not in memory or refuses (then {@link resolveAgentToken} decides). Never throws.
 */
export function knownAgentToken(ctx: AppContext, token: string): AgentPrincipal | undefined {
  const state = ctx.agentAuth;
  const p = state?.signer.knownPlatformToken(token);
  const known = p && state!.principals.get(p);
  if (!known) return undefined;
  const live = state!.cache.peek(known.principal.agentId);
  if (live === undefined || live.ownerId !== known.principal.ownerId || refusal(live, known.sid) !== null)
    return undefined;
  return known.principal;
}

/**
 * Parse a requested `scope` (RFC 6749 §3.3: space-delimited, case-sensitive). Absent or empty →
 * every scope. @throws OAuthError invalid_scope for unknown scopes
 */
export function parseScope(scope: string | undefined): AgentScope[] {
  if (scope === undefined || scope.trim() === '') return [...AGENT_SCOPES];
  const asked = [...new Set(scope.split(' ').filter(Boolean))];
  const unknown = asked.filter((s) => !(AGENT_SCOPES as readonly string[]).includes(s));
  if (unknown.length)
    throw new OAuthError('invalid_scope', `Unknown scope: ${unknown.join(' ')}; allowed: ${AGENT_SCOPES.join(' ')}`);
  return AGENT_SCOPES.filter((s) => asked.includes(s));
}

/**
 * The client credentials grant (RFC 6749 §4.4.2–4.4.3) after the request has been parsed:
 * authenticate the client (exactly one scrypt check, also for unknown clients, so timing does
 * not reveal which client ids exist), then issue a token.
 * @throws OAuthError invalid_client (unknown client, wrong/expired secret, agent disabled or deleted) | invalid_scope
 */
export async function issueAgentToken(
  ctx: AppContext,
  input: { clientId: string; clientSecret: string; scope?: string },
): Promise<AgentTokenResponse> {
  const state = stateOf(ctx);
  const scopes = parseScope(input.scope);
  const sid = secretIdOf(input.clientSecret);
  const [row] = await ctx.db
    .select({
      id: agents.id,
      ownerId: agents.ownerId,
      status: agents.status,
      secretHash: agentSecrets.secretHash,
      expiresAt: agentSecrets.expiresAt,
    })
    .from(agents)
    .leftJoin(
      agentSecrets,
      and(
        eq(agentSecrets.agentId, agents.id),
        eq(agentSecrets.id, sid ?? ''),
        or(isNull(agentSecrets.expiresAt), gt(agentSecrets.expiresAt, new Date())),
      ),
    )
    .where(eq(agents.clientId, input.clientId));
  const ok = await verifyPassword(input.clientSecret, row?.secretHash ?? DUMMY_HASH);
  if (!row || !row.secretHash || !ok) throw new OAuthError('invalid_client', 'Client authentication failed');
  if (row.status !== 'active')
    throw new OAuthError('invalid_client', `Client authentication failed: the agent is ${row.status}`);
  const owner = await state.signer.getUser(row.ownerId);
  const now = Date.now();
  await ctx.db
    .update(agentSecrets)
    .set({ lastUsedAt: new Date(now) })
    .where(eq(agentSecrets.id, sid!));
  const nowS = Math.floor(now / 1000);
  let exp = nowS + ctx.config.agents.tokenTtlSeconds;
  if (row.expiresAt) exp = Math.min(exp, Math.floor(row.expiresAt.getTime() / 1000));
  const scope = scopes.join(' ');
  const accessToken = await new SignJWT({ client_id: input.clientId, scope, sid, roles: rolesOf(owner.roles) })
    .setProtectedHeader({ alg: 'RS256', kid: state.signer.keys.signingKid, typ: 'at+jwt' })
    .setIssuer(state.signer.platformIssuer)
    .setAudience(ctx.config.auth.audience)
    .setSubject(row.id)
    .setIssuedAt(nowS)
    .setExpirationTime(exp)
    .setJti(randomBytes(12).toString('base64url'))
    .sign(state.signer.keys.signingKey);
  return { access_token: accessToken, token_type: 'Bearer', expires_in: Math.max(0, exp - nowS), scope };
}

/** The secret id embedded in a client secret (`ags_<26-char id><43 random>`), or null. */
export function secretIdOf(secret: string): string | null {
  const m = /^ags_([0-9a-z]{26})[A-Za-z0-9_-]{43}$/.exec(secret);
  return m ? `sec_${m[1]}` : null;
}
