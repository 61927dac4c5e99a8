/**
 * Identity: users, the platform's own token issuance (simplified login, test tokens, refresh)
 * and verification of user access tokens (embedded tenant or external OIDC provider).
 *
 * Access tokens are JWTs (RFC 9068 profile: `typ` "at+jwt") signed RS256 with the platform keys,
 * issuer `<PUBLIC_URL>/idp` (the embedded OpenID Provider) and audience `AUTH_AUDIENCE`.
 */
import { randomBytes } from 'node:crypto';
import { eq, sql, type SQL } from 'drizzle-orm';
import { createLocalJWKSet, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { LRUCache } from 'lru-cache';
import type { Role } from '../../config.js';
import type { AppContext } from '../../context.js';
import { users } from '../../db/schema/index.js';
import { AppError, notFound } from '../../http/errors.js';
import type { UserPrincipal } from '../../http/auth.js';
import { newId } from '../../http/ids.js';
import { loadKeySet, type KeySet } from './keys.js';
import { assertAcceptablePassword, DUMMY_HASH, hashPassword, verifyPassword } from './passwords.js';
import { provisionTestUser, releaseSquattedEmail } from './test-accounts.js';
import { assertWebPicture, webPicture } from './picture.js';
import { cleanRoles, rolesClaim, toProfile, type Profile } from './profile.js';
import {
  audienceMatches,
  consumeRefreshToken,
  revokeRefreshFamily,
  signTokenSet,
  tokenError,
  type AccessTokenVerifier,
  type TokenSet,
} from './tokens.js';

/** Provider part of `user_id` for users of the embedded tenant. */
export const EMBEDDED_PROVIDER = 'agent-platform';

export type UserRow = typeof users.$inferSelect;

/**
 * How long a user's roles are cached per instance, ms. A role change made on this instance applies
 * at once; on other instances within this time.
 */
const USER_CACHE_MS = 30_000;

/** Identity service: created once per app (it holds the key set and a small user cache). */
export class IdentityService {
  readonly keys: KeySet;
  /** Issuer of user access tokens: the external provider, or `<PUBLIC_URL>/idp`. */
  readonly issuer: string;
  private readonly localJwks: JWTVerifyGetKey;
  /** External-provider verifier; set by the OIDC module when `AUTH_ISSUER` is configured. */
  externalVerifier?: AccessTokenVerifier;
  /** Provider name for external subjects without `|` (the issuer's host). */
  externalProvider?: string;
  private readonly subjectCache = new LRUCache<string, UserRow>({ max: 10_000, ttl: USER_CACHE_MS });
  /** Current roles/email/subject by user id, so role changes apply without waiting for token expiry. */
  /**
   * Token string → verified claims: a token seen before skips the RS256 signature check (its
   * expiry is checked on every use). Entries live 5 min, so a retired signing key stops being
   * honoured within that time.
   */
  private readonly verifiedTokens = new LRUCache<string, JWTPayload>({ max: 10_000, ttl: 5 * 60_000 });
  private readonly userCache = new LRUCache<string, Pick<UserRow, 'id' | 'subject' | 'email' | 'roles'>>({
    max: 10_000,
    ttl: USER_CACHE_MS,
  });

  private constructor(
    private readonly ctx: AppContext,
    keys: KeySet,
  ) {
    this.keys = keys;
    this.issuer = ctx.config.auth.issuer ?? `${ctx.config.publicUrl}/idp`;
    this.localJwks = createLocalJWKSet(keys.publicJwks);
  }

  static async create(ctx: AppContext): Promise<IdentityService> {
    return new IdentityService(ctx, await loadKeySet(ctx.db));
  }

  /** Issuer of tokens signed by the platform itself (always the embedded tenant). */
  get platformIssuer(): string {
    return `${this.ctx.config.publicUrl}/idp`;
  }

  // ---------------------------------------------------------------- users

  /** `user_id` of the spec for a platform user. */
  static subjectFor(userId: string): string {
    return `${EMBEDDED_PROVIDER}|${userId}`;
  }

  async getUser(userId: string): Promise<UserRow> {
    const [u] = await this.ctx.db.select().from(users).where(eq(users.id, userId));
    if (!u) throw notFound('User');
    return u;
  }

  /** The user `userId`, or undefined. */
  async findUser(userId: string): Promise<UserRow | undefined> {
    const [u] = await this.ctx.db.select().from(users).where(eq(users.id, userId));
    return u;
  }

  async findUserByEmail(email: string): Promise<UserRow | undefined> {
    const [u] = await this.ctx.db.select().from(users).where(sql`lower(${users.email}) = ${email.toLowerCase()}`);
    return u;
  }

  /** Register a user of the embedded tenant (taking the address back from a test account squatting it). @throws AppError conflict when the email is taken. */
  async register(input: { email: string; password: string; name?: string }): Promise<UserRow> {
    const email = input.email.trim().toLowerCase();
    await assertAcceptablePassword(input.password, { email });
    const squatter = await releaseSquattedEmail(this.ctx.db, email);
    if (squatter) this.userCache.delete(squatter);
    else if (await this.findUserByEmail(email)) throw new AppError('conflict', 'A user with this email already exists');
    const id = newId('usr');
    const roles: Role[] = this.ctx.config.auth.adminEmails.includes(email) ? ['user', 'admin'] : ['user'];
    const [u] = await this.ctx.db
      .insert(users)
      .values({
        id,
        subject: IdentityService.subjectFor(id),
        email,
        name: input.name ?? email.split('@')[0],
        passwordHash: await hashPassword(input.password),
        roles,
      })
      .onConflictDoNothing()
      .returning();
    if (!u) throw new AppError('conflict', 'A user with this email already exists');
    return u;
  }

  /**
   * Check email + password. Unknown emails cost one scrypt too, so timing does not reveal
   * which emails exist. @throws AppError invalid_credentials
   */
  async checkPassword(email: string, password: string): Promise<UserRow> {
    const u = await this.findUserByEmail(email.trim());
    const ok = await verifyPassword(password, u?.passwordHash ?? DUMMY_HASH);
    if (!u || !u.passwordHash || !ok) throw new AppError('invalid_credentials', 'Email or password is wrong');
    return u;
  }

  /** Get or create the user of an external-provider subject (just-in-time provisioning; a `picture` claim that is not an http/https URL is dropped). */
  async upsertExternalUser(
    subject: string,
    claims: { email?: string; name?: string; picture?: string },
  ): Promise<UserRow> {
    const cached = this.subjectCache.get(subject);
    if (cached) return cached;
    let [u] = await this.ctx.db.select().from(users).where(eq(users.subject, subject));
    if (!u) {
      [u] = await this.ctx.db
        .insert(users)
        .values({
          id: newId('usr'),
          subject,
          email: claims.email?.toLowerCase() ?? null,
          name: claims.name ?? null,
          picture: webPicture(claims.picture) ?? null,
          roles: ['user'],
        })
        .onConflictDoNothing()
        .returning();
      if (!u) [u] = await this.ctx.db.select().from(users).where(eq(users.subject, subject));
    }
    if (!u) throw new AppError('conflict', 'Could not provision the user (email already used by another account)');
    this.subjectCache.set(subject, u);
    return u;
  }

  /** Replace the roles of the user with this email (CLI `users set-role`). @throws AppError not_found | last_admin */
  async setRoles(email: string, roles: Role[]): Promise<UserRow> {
    return this.replaceRoles(sql`lower(${users.email}) = ${email.trim().toLowerCase()}`, roles);
  }

  /**
   * Replace the roles of a user (`PUT /admin/users/:id/roles`), named by the `user_id` the API shows
   * (`<provider>|<id>`, e.g. `agent-platform|usr_…`) or by the bare platform id (`usr_…`). @throws AppError not_found | last_admin
   */
  async setRolesById(userRef: string, roles: Role[]): Promise<UserRow> {
    return this.replaceRoles(userRef.includes('|') ? eq(users.subject, userRef) : eq(users.id, userRef), roles);
  }

  /**
   * Replace the roles of the user `which` selects. Taking `admin` away from the only user who holds
   * it is refused: nobody could change roles through the API afterwards. The admin rows are locked
   * (`FOR UPDATE`) before they are counted, so two admins demoting each other at once cannot both
   * succeed: the second waits for the first and then counts what is left.
   * @throws AppError not_found | last_admin (409)
   */
  private async replaceRoles(which: SQL, roles: Role[]): Promise<UserRow> {
    const next = [...new Set(roles)];
    const u = await this.ctx.db.transaction(async (tx) => {
      const [target] = await tx.select({ id: users.id, roles: users.roles }).from(users).where(which).limit(1);
      if (!target) throw notFound('User');
      if (target.roles.includes('admin') && !next.includes('admin')) {
        const admins = await tx
          .select({ id: users.id })
          .from(users)
          .where(sql`'admin' = any(${users.roles})`)
          .for('update');
        if (!admins.some((a) => a.id !== target.id)) {
          throw new AppError(
            'last_admin',
            'This user is the only admin: make another user admin first (PUT /admin/users/{id}/roles), then change these roles',
          );
        }
      }
      const [row] = await tx
        .update(users)
        .set({ roles: next, updatedAt: new Date() })
        .where(eq(users.id, target.id))
        .returning();
      return row;
    });
    if (!u) throw notFound('User');
    this.forget(u);
    return u;
  }

  /** After a change of `u`'s roles: forget the cached user and tell the other modules. */
  private forget(u: UserRow): void {
    this.subjectCache.delete(u.subject);
    this.userCache.delete(u.id);
    this.ctx.events.emit('account.roles_changed', { userId: u.id });
  }

  /**
   * Current roles, email and subject of `userId` (cached {@link USER_CACHE_MS}).
   * @throws AppError invalid_token when the user no longer exists.
   */
  async currentUser(userId: string): Promise<Pick<UserRow, 'id' | 'subject' | 'email' | 'roles'>> {
    const hit = this.userCache.get(userId);
    if (hit) return hit;
    const [u] = await this.ctx.db
      .select({ id: users.id, subject: users.subject, email: users.email, roles: users.roles })
      .from(users)
      .where(eq(users.id, userId));
    if (!u) throw new AppError('invalid_token', 'The user of this token no longer exists');
    this.userCache.set(userId, u);
    return u;
  }

  /**
   * The profile of `userId` (`GET /v1/auth/me`). `effectiveRoles`: the roles of the request's
   * principal (for external-provider users they include the provider's roles claim).
   */
  async profile(userId: string, effectiveRoles?: Role[]): Promise<Profile> {
    const u = await this.getUser(userId);
    return toProfile(effectiveRoles ? { ...u, roles: effectiveRoles } : u);
  }

  /**
   * Update name and picture, and merge preferences (unknown keys kept).
   * @throws AppError validation_failed (picture not an http/https URL), not_found
   */
  async updateProfile(
    userId: string,
    input: { name?: string; picture?: string; preferences?: Record<string, unknown> },
  ): Promise<Profile> {
    const [u] = await this.ctx.db
      .update(users)
      .set({
        ...(input.name !== undefined ? { name: input.name } : {}),
        ...(input.picture !== undefined ? { picture: assertWebPicture(input.picture) } : {}),
        ...(input.preferences
          ? { preferences: sql`${users.preferences} || ${JSON.stringify(input.preferences)}::jsonb` }
          : {}),
        updatedAt: new Date(),
      })
      .where(eq(users.id, userId))
      .returning();
    if (!u) throw notFound('User');
    return toProfile(u);
  }

  // ---------------------------------------------------------------- tokens

  /** Issue a token set signed by the platform for `user`. Roles default to the user's stored roles. */
  async issueTokenSet(
    user: UserRow,
    opts: { expiresIn?: number; roles?: Role[]; familyId?: string } = {},
  ): Promise<TokenSet> {
    return signTokenSet(this.ctx, this.keys, this.platformIssuer, user, opts);
  }

  /**
   * Exchange a platform refresh token (`rt_…`) for a new token set. Refresh tokens rotate and are
   * single use; presenting a used one revokes its whole family (OAuth 2.0 Security BCP §4.14.2).
   * @throws AppError invalid_token for unknown, used or expired tokens.
   */
  async refreshPlatformToken(refreshToken: string): Promise<TokenSet> {
    const { userId, familyId } = await consumeRefreshToken(this.ctx.db, refreshToken);
    return this.issueTokenSet(await this.getUser(userId), { familyId });
  }

  /**
   * Revoke a platform refresh token (`rt_…`) and its whole rotation family (sign-out, RFC 7009 §2.1
   * semantics: unknown tokens are not an error).
   */
  async revokePlatformRefreshToken(refreshToken: string): Promise<void> {
    await revokeRefreshFamily(this.ctx.db, refreshToken);
  }

  /**
   * The claims of a platform token that verified within the last 5 minutes, is not expired and was
   * issued for the API's audience (`AUTH_AUDIENCE`) — what {@link verifyPlatformToken} would accept
   * without a resource, from memory; `undefined` otherwise (then call {@link verifyPlatformToken},
   * which also gives the refusal). Never throws.
   */
  knownPlatformToken(token: string): JWTPayload | undefined {
    const known = this.verifiedTokens.get(token);
    if (known === undefined || !((known.exp ?? 0) * 1000 > Date.now())) return undefined;
    return audienceMatches(known.aud, this.audiencesFor(undefined)) ? known : undefined;
  }

  /**
   * Verify an access token signed by the platform, for `AUTH_AUDIENCE` or, when given, the
   * protected resource `resource` (RFC 8707 audience, e.g. `<PUBLIC_URL>/mcp`).
   * @throws AppError token_expired | invalid_token
   */
  async verifyPlatformToken(token: string, resource?: string): Promise<JWTPayload> {
    const audiences = this.audiencesFor(resource);
    const known = this.verifiedTokens.get(token);
    if (known) {
      if (!audienceMatches(known.aud, audiences)) throw new AppError('invalid_token', 'Token claim "aud" is invalid');
      if ((known.exp ?? 0) * 1000 > Date.now()) return known;
      this.verifiedTokens.delete(token);
      throw new AppError('token_expired', 'The access token has expired; refresh it');
    }
    try {
      const { payload } = await jwtVerify(token, this.localJwks, {
        issuer: this.platformIssuer,
        audience: audiences,
        algorithms: ['RS256'],
      });
      this.verifiedTokens.set(token, payload);
      return payload;
    } catch (err) {
      throw tokenError(err);
    }
  }

  /** Audiences accepted where `resource` is presented: the API's, plus the resource's own. */
  private audiencesFor(resource: string | undefined): string[] {
    const api = this.ctx.config.auth.audience;
    return resource && resource !== api ? [api, resource] : [api];
  }

  /**
   * Resolve a user access token to a principal: platform-signed tokens directly (no database
   * round trip), external-provider tokens through the provider's JWKS plus JIT provisioning.
   * `resource`: the protected resource the token is presented to ({@link verifyPlatformToken}).
   */
  async resolveAccessToken(token: string, unverifiedIssuer: unknown, resource?: string): Promise<UserPrincipal> {
    if (unverifiedIssuer === this.platformIssuer || !this.externalVerifier) {
      const p = await this.verifyPlatformToken(token, resource);
      if (typeof p.sub !== 'string' || !p.sub.startsWith('usr_'))
        throw new AppError('invalid_token', 'Token subject is not a user');
      // Roles are the stored ones (not the token's claim), so a role change or a deleted user
      // takes effect without waiting up to 24 h for the token to expire.
      const u = await this.currentUser(p.sub);
      return {
        kind: 'user',
        userId: u.id,
        subject: u.subject,
        email: u.email,
        roles: cleanRoles(u.roles),
        via: 'token',
        expiresAt: new Date((p.exp ?? 0) * 1000),
      };
    }
    const p = await this.externalVerifier(token, this.audiencesFor(resource));
    if (typeof p.sub !== 'string' || !p.sub) throw new AppError('invalid_token', 'Token has no subject');
    const subject = this.externalSubject(p.sub);
    const user = await this.upsertExternalUser(subject, {
      email: typeof p.email === 'string' ? p.email : undefined,
      name: typeof p.name === 'string' ? p.name : undefined,
      picture: typeof p.picture === 'string' ? p.picture : undefined,
    });
    const current = await this.currentUser(user.id);
    // Roles: those the provider asserts in AUTH_ROLES_CLAIM plus those granted on the platform.
    const roles = cleanRoles([...rolesClaim(p[this.ctx.config.auth.rolesClaim]), ...current.roles]);
    return {
      kind: 'user',
      userId: user.id,
      subject,
      email: current.email,
      roles,
      via: 'token',
      expiresAt: new Date((p.exp ?? 0) * 1000),
    };
  }

  /** `<provider>|<id>` for a subject of the external provider (kept as is when it already has a `|`). */
  externalSubject(sub: string): string {
    return sub.includes('|') ? sub : `${this.externalProvider}|${sub}`;
  }

  /**
   * Create (or reuse) a test user and issue a token set (`POST /auth/test`). Only
   * accounts this endpoint created (`users.test`) are ever reused: the email of any other account
   * — registered, external-provider or listed in `ADMIN_EMAILS` — answers 409, so a test token can
   * never act as a real user; and only addresses in reserved test domains (`test-accounts.ts`), so
   * a test account never squats an address a person may register later. Roles other than `user`
   * need `AUTH_TEST_ROLES=on`.
   * @throws AppError forbidden (elevated roles not enabled), validation_failed (email outside the
   *   reserved domains), conflict (email of a non-test account)
   */
  async testToken(input: {
    email?: string;
    name?: string;
    roles?: Role[];
    expires_in?: number;
  }): Promise<TokenSet & { user_id: string }> {
    const cfg = this.ctx.config.auth;
    const roles = input.roles ? cleanRoles(input.roles) : undefined;
    if (roles?.some((r) => r !== 'user') && !cfg.testRoles) {
      throw new AppError(
        'forbidden',
        'Test tokens carry the role "user" only; elevated roles need AUTH_TEST_TOKENS=on and AUTH_TEST_ROLES=on',
      );
    }
    const email = (input.email ?? `test-${randomBytes(6).toString('hex')}@example.test`).trim().toLowerCase();
    const user = await provisionTestUser(
      this.ctx.db,
      { email, name: input.name, roles },
      cfg.adminEmails,
      IdentityService.subjectFor,
    );
    if (roles) this.forget(user);
    const set = await this.issueTokenSet(user, { expiresIn: input.expires_in });
    return { ...set, user_id: user.subject };
  }
}
