/**
 * A second, separately started OpenID Provider (oidc-provider on a free loopback port) playing
 * the external identity provider of `AUTH_ISSUER` mode. Sign-in is automatic: the interaction
 * logs in the account chosen with `signInAs` and grants what the client asked for.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWTPayload } from 'jose';
import Provider from 'oidc-provider';

export interface ExternalAccount {
  sub: string;
  email: string;
  name: string;
  roles: string[];
}

export interface ExternalIdp {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The account the next interaction signs in. */
  signInAs(account: ExternalAccount): void;
  /** Sign an arbitrary access-token-shaped JWT with the provider's key (for negative tests). */
  sign(claims: JWTPayload, opts?: { expiresIn?: number; issuer?: string; audience?: string }): Promise<string>;
  close(): Promise<void>;
}

/** Finish a consent interaction of `provider` granting every scope the client asked for. */
export async function grantConsent(
  provider: Provider,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  details: Awaited<ReturnType<Provider['interactionDetails']>>,
): Promise<void> {
  const d = details.prompt.details as { missingOIDCScope?: string[]; missingResourceScopes?: Record<string, string[]> };
  const grant = details.grantId
    ? (await provider.Grant.find(details.grantId))!
    : new provider.Grant({ accountId: details.session!.accountId, clientId: String(details.params.client_id) });
  if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
  for (const [ind, s] of Object.entries(d.missingResourceScopes ?? {})) grant.addResourceScope(ind, s.join(' '));
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

export async function startExternalIdp(opts: {
  audience: string;
  rolesClaim: string;
  redirectUris: string[];
}): Promise<ExternalIdp> {
  const clientId = 'external-client';
  const clientSecret = randomBytes(24).toString('base64url');
  const accounts = new Map<string, ExternalAccount>();
  let current: ExternalAccount | undefined;
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const kid = `ext-${randomBytes(4).toString('hex')}`;
  const jwk = { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' };

  let handler: http.RequestListener = (_req, res) => res.end();
  const server = http.createServer((req, res) => handler(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: opts.redirectUris,
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
    jwks: { keys: [jwk as never] },
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    routes: { authorization: '/authorize' },
    scopes: ['openid', 'offline_access', 'profile', 'email'],
    claims: { openid: ['sub'], email: ['email'], profile: ['name'] },
    conformIdTokenClaims: false,
    features: {
      devInteractions: { enabled: false },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => opts.audience,
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({
          scope: 'openid profile email offline_access',
          audience: opts.audience,
          accessTokenFormat: 'jwt',
          accessTokenTTL: 3600,
        }),
      },
    },
    issueRefreshToken: () => true,
    rotateRefreshToken: () => true,
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    findAccount: (_ctx, sub) => {
      const a = accounts.get(sub);
      return a ? { accountId: sub, claims: () => ({ sub, email: a.email, name: a.name }) } : undefined;
    },
    extraTokenClaims: (_ctx, token) => {
      const a = 'accountId' in token && typeof token.accountId === 'string' ? accounts.get(token.accountId) : undefined;
      return a ? { [opts.rolesClaim]: a.roles, email: a.email } : undefined;
    },
  });
  const callback = provider.callback();

  handler = async (req, res) => {
    const m = /^\/interaction\/([^/?]+)/.exec(req.url ?? '');
    if (!m) return callback(req, res);
    try {
      const details = await provider.interactionDetails(req, res);
      if (details.prompt.name === 'login') {
        if (!current) throw new Error('signInAs() was not called');
        return await provider.interactionFinished(
          req,
          res,
          { login: { accountId: current.sub } },
          { mergeWithLastSubmission: false },
        );
      }
      await grantConsent(provider, req, res, details);
    } catch (err) {
      res.statusCode = 500;
      res.end(String((err as Error).message));
    }
  };

  return {
    issuer,
    clientId,
    clientSecret,
    signInAs(account) {
      accounts.set(account.sub, account);
      current = account;
    },
    async sign(claims, o = {}) {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', kid, typ: 'at+jwt' })
        .setIssuer(o.issuer ?? issuer)
        .setAudience(o.audience ?? opts.audience)
        .setIssuedAt(now - 10)
        .setExpirationTime(now + (o.expiresIn ?? 3600))
        .sign(privateKey as CryptoKey);
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
