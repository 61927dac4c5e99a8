/**
 * The UserInfo endpoint of the embedded tenant (OpenID Connect Core 1.0 §5.3), `GET|POST
 * /idp/userinfo`, advertised as `userinfo_endpoint` in the tenant's discovery document.
 *
 * Served here rather than by `oidc-provider`: the provider's own endpoint only takes its opaque
 * tokens, while every access token of this tenant is a JWT for the API resource (RFC 8707/9068,
 * see idp.ts). The token is verified exactly as the API verifies it (issuer, audience
 * `AUTH_AUDIENCE`, RS256 platform keys); it must carry the `openid` scope (§5.3.1).
 *
 * - Token: `Authorization: Bearer` (RFC 6750 §2.1), or `access_token` in a form-encoded POST body
 *   (§2.2); not both.
 * - Answer: `application/json` with `sub` (the same as the ID token's) and the claims the token's
 *   scopes ask for (§5.4: `email` → email, email_verified; `profile` → name, picture, updated_at);
 *   claims without a value are left out (§5.3.2). `Cache-Control: no-store`.
 * - Errors (RFC 6750 §3): 401 with `WWW-Authenticate: Bearer error="invalid_token"` (missing,
 *   malformed, expired or foreign token; user gone), 403 `insufficient_scope` without `openid`,
 *   400 when the token is sent twice; bodies are problem+json like the rest of the API.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import formbody from '@fastify/formbody';
import { AppError } from '../../http/errors.js';
import { webPicture } from './picture.js';
import type { IdentityService, UserRow } from './service.js';

/** Claims of each OIDC scope this tenant releases (OIDC Core §5.4, the subset the users table holds). */
export const SCOPE_CLAIMS: Readonly<Record<string, readonly string[]>> = {
  email: ['email', 'email_verified'],
  profile: ['name', 'picture', 'updated_at'],
};

/**
 * The UserInfo answer for `user` under the space-separated `scope` (OIDC Core §5.3.2): `sub`
 * always, then each released claim that has a value. `email_verified` is false (the platform does
 * not verify addresses); `updated_at` is seconds since the epoch (§5.1).
 */
export function userinfoClaims(
  user: Pick<UserRow, 'id' | 'email' | 'name' | 'picture' | 'updatedAt'>,
  scope: string,
): Record<string, string | number | boolean> {
  const values: Record<string, string | number | boolean | null> = {
    email: user.email,
    email_verified: user.email ? false : null,
    name: user.name,
    picture: webPicture(user.picture) ?? null,
    updated_at: Math.floor(user.updatedAt.getTime() / 1000),
  };
  const out: Record<string, string | number | boolean> = { sub: user.id };
  for (const s of scope.split(' ')) {
    for (const claim of SCOPE_CLAIMS[s] ?? []) {
      const v = values[claim];
      if (v !== null && v !== undefined) out[claim] = v;
    }
  }
  return out;
}

/** The bearer token of a UserInfo request (header or form body, RFC 6750 §2.1–2.2). */
function tokenOf(req: FastifyRequest): string {
  const header = req.headers.authorization;
  const body =
    req.body && typeof req.body === 'object' ? (req.body as Record<string, unknown>).access_token : undefined;
  if (header !== undefined && body !== undefined)
    throw new AppError(
      'bad_request',
      'Send the access token in the Authorization header or in the body, not both (RFC 6750 §2)',
    );
  if (typeof body === 'string' && body) return body;
  const m = /^Bearer ([\w.~+/-]+=*)$/i.exec(header ?? '');
  if (!m)
    throw new AppError(
      header ? 'invalid_token' : 'unauthenticated',
      header
        ? 'Authorization header must be "Bearer <token>"'
        : 'Send an access token of this tenant: Authorization: Bearer <token>',
    );
  return m[1];
}

/** Mount `GET|POST /idp/userinfo` (inside the `/idp` routes; see the module comment). */
export async function userinfoRoutes(
  app: FastifyInstance,
  { identity, path }: { identity: IdentityService; path: string },
): Promise<void> {
  await app.register(formbody, { bodyLimit: 16 * 1024 });
  app.route({
    method: ['GET', 'POST'],
    url: path,
    schema: { hide: true },
    handler: async (req, reply) => {
      const claims = await identity.verifyPlatformToken(tokenOf(req));
      if (typeof claims.sub !== 'string' || !claims.sub.startsWith('usr_'))
        throw new AppError('invalid_token', 'Token subject is not a user');
      const scope = typeof claims.scope === 'string' ? claims.scope : '';
      if (!scope.split(' ').includes('openid')) {
        throw new AppError(
          'insufficient_scope',
          'The access token was not issued with the openid scope (OIDC Core §5.3.1)',
          {
            headers: {
              'www-authenticate': 'Bearer realm="agent-platform", error="insufficient_scope", scope="openid"',
            },
          },
        );
      }
      const user = await identity.findUser(claims.sub);
      if (!user) throw new AppError('invalid_token', 'The user of this token no longer exists');
      return reply
        .header('cache-control', 'no-store')
        .type('application/json; charset=utf-8')
        .send(userinfoClaims(user, scope));
    },
  });
}
