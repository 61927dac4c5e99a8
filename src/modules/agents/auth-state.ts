/**
 * Types of the agent-token verifier's per-app state (`AppContext.agentAuth`, set by
 * `installAgentAuth` in `tokens.ts`), in their own file so that `context.ts` can name them
 * without an import loop.
 */
import type { CryptoKey, JWTPayload } from 'jose';
import type { AgentPrincipal } from '../../http/auth.js';
import type { SharedCache } from '../../lib/shared-cache.js';

/**
 * What the agents module needs from the identity module: the platform signing key and issuer,
 * the platform-token verifier and the owner's roles. `IdentityService` satisfies it.
 */
export interface PlatformSigner {
  readonly keys: { signingKey: CryptoKey; signingKid: string };
  readonly platformIssuer: string;
  /** @throws AppError token_expired | invalid_token */
  verifyPlatformToken(token: string): Promise<JWTPayload>;
  /** The claims of a token {@link verifyPlatformToken} accepted recently and would accept now, from memory; `undefined` otherwise. */
  knownPlatformToken(token: string): JWTPayload | undefined;
  getUser(userId: string): Promise<{ roles: string[] }>;
}

/** Liveness facts of an agent, cached per agent id. */
export interface Liveness {
  ownerId: string;
  status: string;
  /** Live secret id → expiry (epoch ms) or null. */
  secrets: Map<string, number | null>;
}

/** The verifier's state: the platform signer and the liveness cache. */
export interface AgentAuthState {
  signer: PlatformSigner;
  /** Liveness by agent id; evicted on every instance by `invalidateAgentAuth`. */
  cache: SharedCache<Liveness>;
  /** Loads an agent's liveness fresh. @throws AppError invalid_token when the agent does not exist */
  load: (agentId: string) => Promise<Liveness>;
  /**
   * The principal built from a token's verified claims (keyed by the signer's claims object, so
   * it lives as long as the signer keeps the token verified), with the secret id it was issued
   * with: requests with that token reuse it after the liveness check, instead of building one.
   */
  principals: WeakMap<JWTPayload, { principal: AgentPrincipal; sid: string }>;
}
