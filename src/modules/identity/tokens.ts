/**
 * Platform-signed tokens: issuing a token set (RFC 9068 access token plus OIDC `id_token` and a
 * rotating refresh token), refresh-token rotation and revocation, and mapping jose verification
 * failures to the platform's 401 codes.
 */
import { randomBytes } from 'node:crypto';
import { and, eq, isNull } from 'drizzle-orm';
import { SignJWT, errors as joseErrors, type JWTPayload } from 'jose';
import type { Role } from '../../config.js';
import type { AppContext } from '../../context.js';
import type { Db } from '../../db/client.js';
import { refreshTokens, type users } from '../../db/schema/index.js';
import { AppError } from '../../http/errors.js';
import { hashSecret, newId, newSecret } from '../../http/ids.js';
import type { KeySet } from './keys.js';
import { webPicture } from './picture.js';

/** OAuth 2.0 token response (RFC 6749 §5.1) plus OIDC `id_token`. */
export interface TokenSet {
  access_token: string;
  token_type: 'Bearer';
  /** Seconds until the access token expires. */
  expires_in: number;
  refresh_token: string;
  id_token: string;
  scope: string;
}

/**
 * Verifies access tokens of one issuer whose `aud` is one of `audiences`.
 * @throws AppError token_expired | invalid_token
 */
export type AccessTokenVerifier = (token: string, audiences: string[]) => Promise<JWTPayload>;

/** Whether a token's `aud` (string or array, RFC 7519 §4.1.3) names one of `accepted`. */
export function audienceMatches(aud: unknown, accepted: string[]): boolean {
  const list = Array.isArray(aud) ? aud : [aud];
  return list.some((a) => typeof a === 'string' && accepted.includes(a));
}

/** Map a jose verification failure to the platform's 401 codes. */
export function tokenError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof joseErrors.JWTExpired)
    return new AppError('token_expired', 'The access token has expired; refresh it');
  if (err instanceof joseErrors.JWTClaimValidationFailed)
    return new AppError('invalid_token', `Token claim "${err.claim}" is invalid`);
  if (err instanceof joseErrors.JWSSignatureVerificationFailed)
    return new AppError('invalid_token', 'Token signature is invalid');
  if (err instanceof joseErrors.JOSEError) return new AppError('invalid_token', 'Token is invalid');
  return new AppError('invalid_token', 'Token is invalid');
}

/**
 * Sign a token set for `user` with the platform key `keys.signingKid` (RS256), issuer `issuer`,
 * and store the hash of its new refresh token (in rotation family `opts.familyId`, or a new one).
 * `opts.expiresIn`: access/id token lifetime in seconds (default `AUTH_ACCESS_TOKEN_TTL`);
 * `opts.roles`: the `roles` claim (default the user's stored roles).
 */
export async function signTokenSet(
  ctx: AppContext,
  keys: KeySet,
  issuer: string,
  user: typeof users.$inferSelect,
  opts: { expiresIn?: number; roles?: Role[]; familyId?: string } = {},
): Promise<TokenSet> {
  const cfg = ctx.config.auth;
  const expiresIn = opts.expiresIn ?? cfg.accessTokenTtlSeconds;
  const roles = opts.roles ?? (user.roles as Role[]);
  const now = Math.floor(Date.now() / 1000);
  const access = await new SignJWT({ scope: cfg.scope, roles, email: user.email ?? undefined, client_id: cfg.clientId })
    .setProtectedHeader({ alg: 'RS256', kid: keys.signingKid, typ: 'at+jwt' })
    .setIssuer(issuer)
    .setAudience(cfg.audience)
    .setSubject(user.id)
    .setIssuedAt(now)
    .setExpirationTime(now + expiresIn)
    .setJti(randomBytes(12).toString('base64url'))
    .sign(keys.signingKey);
  const idToken = await new SignJWT({
    email: user.email ?? undefined,
    name: user.name ?? undefined,
    picture: webPicture(user.picture),
  })
    .setProtectedHeader({ alg: 'RS256', kid: keys.signingKid, typ: 'JWT' })
    .setIssuer(issuer)
    .setAudience(cfg.clientId)
    .setSubject(user.id)
    .setIssuedAt(now)
    .setExpirationTime(now + expiresIn)
    .sign(keys.signingKey);
  const refresh = newSecret('rt');
  await ctx.db.insert(refreshTokens).values({
    id: newId('rt'),
    userId: user.id,
    tokenHash: hashSecret(refresh),
    familyId: opts.familyId ?? newId('rt'),
    expiresAt: new Date(Date.now() + cfg.refreshTokenTtlSeconds * 1000),
  });
  return {
    access_token: access,
    token_type: 'Bearer',
    expires_in: expiresIn,
    refresh_token: refresh,
    id_token: idToken,
    scope: cfg.scope,
  };
}

/**
 * Consume a platform refresh token (`rt_…`): single use; presenting a used one revokes its whole
 * family (OAuth 2.0 Security BCP §4.14.2).
 * @returns the user id and rotation family the next token set belongs to
 * @throws AppError invalid_token for unknown, used or expired tokens.
 */
export async function consumeRefreshToken(db: Db, refreshToken: string): Promise<{ userId: string; familyId: string }> {
  const hash = hashSecret(refreshToken);
  const [row] = await db
    .update(refreshTokens)
    .set({ consumedAt: new Date() })
    .where(and(eq(refreshTokens.tokenHash, hash), isNull(refreshTokens.consumedAt)))
    .returning();
  if (!row) {
    const [used] = await db.select().from(refreshTokens).where(eq(refreshTokens.tokenHash, hash));
    if (used)
      await db.update(refreshTokens).set({ consumedAt: new Date() }).where(eq(refreshTokens.familyId, used.familyId));
    throw new AppError('invalid_token', 'Refresh token is unknown or was already used');
  }
  if (row.expiresAt.getTime() < Date.now()) throw new AppError('invalid_token', 'Refresh token has expired');
  return { userId: row.userId, familyId: row.familyId };
}

/**
 * Revoke a platform refresh token (`rt_…`) and its whole rotation family (sign-out, RFC 7009 §2.1
 * semantics: unknown tokens are not an error).
 */
export async function revokeRefreshFamily(db: Db, refreshToken: string): Promise<void> {
  const [row] = await db
    .select({ familyId: refreshTokens.familyId })
    .from(refreshTokens)
    .where(eq(refreshTokens.tokenHash, hashSecret(refreshToken)));
  if (row)
    await db
      .update(refreshTokens)
      .set({ consumedAt: new Date() })
      .where(and(eq(refreshTokens.familyId, row.familyId), isNull(refreshTokens.consumedAt)));
}
