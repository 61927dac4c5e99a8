/** HTTP routes of the identity module: the spec's detailed `/v1/auth/*` and simplified `/auth/*` groups. */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AppContext } from '../../context.js';
import { AppError } from '../../http/errors.js';
import { AuthRegistry, userOf } from '../../http/auth.js';
import { authScope, operations } from '../../http/operations.js';
import { BEARER_SECURITY, PUBLIC_SECURITY, USER_SECURITY, errorResponses } from '../../http/schemas.js';
import type { LoginFlow } from './login-flow.js';
import type { IdentityService } from './service.js';
import { toProfile } from './profile.js';
import {
  AuthConfig,
  CallbackBody,
  LoginBody,
  LoginQuery,
  LoginStart,
  ProviderTokenSetSchema,
  ProfileSchema,
  ProfileUpdateBody,
  RefreshBody,
  RegisterBody,
  TestTokenBody,
  TokenSetSchema,
  ValidateResult,
} from './schemas.js';

export interface IdentityRouteDeps {
  ctx: AppContext;
  identity: IdentityService;
  /** Authorization-code flow against the embedded tenant or the external provider. */
  login: LoginFlow;
}

export async function identityRoutes(app: FastifyInstance, deps: IdentityRouteDeps): Promise<void> {
  const { ctx, identity, login } = deps;
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['auth'];
  const a = ctx.config.auth;
  // Unauthenticated credential routes: a budget per client IP, shared by these routes, in the
  // rate-limit store (Redis when set), on top of the global anonymous limit.
  const perIp = app.rateLimit({
    max: a.attemptsPerIp,
    timeWindow: a.attemptWindowMs,
    keyGenerator: (req) => `auth-ip:${req.ip}`,
  });
  // (createRateLimit, not a second rateLimit() hook: the plugin runs one such hook per request.)
  const accountLimit = app.createRateLimit({
    max: a.attemptsPerAccount,
    timeWindow: a.attemptWindowMs,
    keyGenerator: (req) =>
      `login:${String((req.body as { email?: unknown } | undefined)?.email ?? '')
        .trim()
        .toLowerCase()}`,
  });
  const perAccount = async (req: FastifyRequest) => {
    const r = await accountLimit(req);
    if (!r.isAllowed && r.isExceeded) {
      throw new AppError('rate_limited', 'Too many sign-in attempts for this account; retry later', {
        headers: { 'retry-after': String(Math.max(1, r.ttlInSeconds)) },
      });
    }
  };
  if (ctx.config.auth.testTokensWarning) app.log.warn(ctx.config.auth.testTokensWarning);

  const pub = operations(tags, PUBLIC_SECURITY);
  for (const url of ['/v1/auth/config', '/auth/info']) {
    r.get(
      url,
      pub(url === '/auth/info' ? 'auth.info' : 'auth.config', 'Identity provider configuration', {
        response: { 200: AuthConfig, ...errorResponses() },
      }),
      async () => login.describe(),
    );
  }

  r.get(
    '/v1/auth/login',
    {
      preHandler: perIp,
      ...pub(
        'auth.startLogin',
        'Start the OAuth 2.0 login (authorization code + PKCE): the URL to send the user to, and the state',
        {
          querystring: LoginQuery,
          response: { 200: LoginStart, ...errorResponses(502) },
        },
      ),
    },
    async (req, reply) => {
      reply.header('cache-control', 'no-store');
      return login.start(req.query.redirect_uri);
    },
  );

  r.post(
    '/v1/auth/callback',
    {
      preHandler: perIp,
      ...pub('auth.callback', 'Exchange the authorization code for tokens; creates or fetches the user profile', {
        body: CallbackBody,
        response: { 200: ProviderTokenSetSchema, ...errorResponses(502, 503) },
      }),
    },
    async (req, reply) => {
      reply.header('cache-control', 'no-store');
      return login.complete(req.body);
    },
  );

  r.post(
    '/auth/register',
    {
      preHandler: perIp,
      ...pub('auth.register', 'Register a user of the pre-configured tenant', {
        body: RegisterBody,
        response: { 201: ProfileSchema, ...errorResponses(409) },
      }),
    },
    async (req, reply) => reply.code(201).send(toProfile(await identity.register(req.body))),
  );

  r.post(
    '/auth/login',
    {
      preHandler: [perIp, perAccount],
      ...pub('auth.login', 'Log in with email and password', {
        body: LoginBody,
        response: { 200: TokenSetSchema, ...errorResponses() },
      }),
    },
    async (req, reply) => {
      const user = await identity.checkPassword(req.body.email, req.body.password);
      reply.header('cache-control', 'no-store');
      return identity.issueTokenSet(user);
    },
  );

  r.post(
    '/auth/test',
    {
      preHandler: perIp,
      ...pub(
        'auth.test',
        'Get a token for a test account this route creates (on in NODE_ENV=test or on a loopback-only listener; else AUTH_TEST_TOKENS=on)',
        {
          body: Type.Optional(TestTokenBody),
          response: { 200: TokenSetSchema, ...errorResponses(403, 404, 409) },
        },
      ),
    },
    async (req, reply) => {
      if (!ctx.config.auth.testTokens) throw new AppError('not_found', `No route for POST /auth/test`);
      reply.header('cache-control', 'no-store');
      return identity.testToken(req.body ?? {});
    },
  );

  r.post(
    '/v1/auth/refresh',
    {
      preHandler: perIp,
      ...pub(
        'auth.refresh',
        'Exchange a refresh token for new tokens (single use: the answer carries a new refresh token)',
        {
          body: RefreshBody,
          response: { 200: ProviderTokenSetSchema, ...errorResponses(502, 503) },
        },
      ),
    },
    async (req, reply) => {
      reply.header('cache-control', 'no-store');
      const token = req.body.refresh_token;
      // `rt_…` tokens come from the simplified login; the rest from the identity provider.
      if (token.startsWith('rt_')) return identity.refreshPlatformToken(token);
      return login.refresh(token);
    },
  );

  r.post(
    '/v1/auth/validate',
    operations(tags, BEARER_SECURITY)(
      'auth.validate',
      'Report whether the bearer token is valid, with identity, roles and expiry',
      { response: { 200: ValidateResult, ...errorResponses() } },
    ),
    async (req) => {
      const cred = AuthRegistry.credentialOf(req);
      if (!cred) throw new AppError('unauthenticated', 'Send the token to validate as "Authorization: Bearer <token>"');
      try {
        const p = await ctx.auth.authenticate(cred);
        const exp = p.expiresAt?.toISOString();
        if (p.kind === 'agent')
          return { valid: true, user_id: `agent|${p.agentId}`, email: null, roles: p.roles, expires_at: exp };
        return { valid: true, user_id: p.subject, email: p.email, roles: p.roles, expires_at: exp };
      } catch (err) {
        if (err instanceof AppError && err.status === 401) return { valid: false, code: err.code };
        throw err;
      }
    },
  );

  // Signed-in users only.
  await app.register(async (scope) => {
    const { r: s, op } = authScope(scope, ctx.auth, { principals: ['user'], tags: tags, security: USER_SECURITY });
    for (const url of ['/v1/auth/me', '/auth/profile']) {
      s.get(
        url,
        op(url === '/v1/auth/me' ? 'auth.me' : 'auth.profile', 'Current user', {
          response: { 200: ProfileSchema, ...errorResponses(403) },
        }),
        async (req) => {
          const p = userOf(req);
          return identity.profile(p.userId, p.roles);
        },
      );
    }
    s.put(
      '/v1/auth/profile',
      op('auth.updateProfile', 'Update name and preferences (unknown preference keys are kept)', {
        body: ProfileUpdateBody,
        response: { 200: ProfileSchema, ...errorResponses(403) },
      }),
      async (req) => identity.updateProfile(userOf(req).userId, req.body),
    );
  });
}
