/**
 * The pre-configured identity-provider tenant (DESIGN.md §6): a real OpenID Provider
 * (`oidc-provider`) served by this process under `/idp`, issuer `<PUBLIC_URL>/idp`.
 *
 * - Authorization code flow with PKCE S256 required (RFC 7636), refresh tokens with
 *   `offline_access` (rotated, single use), RFC 9207 `iss` in authorization responses.
 * - Access tokens are JWTs (RFC 9068, `typ: at+jwt`) for the API resource (RFC 8707 resource
 *   indicator), audience `AUTH_AUDIENCE`, lifetime `AUTH_ACCESS_TOKEN_TTL`, signed RS256 with the
 *   platform keys, `sub` = the platform user id and claims `roles`, `email`. They verify exactly
 *   like the platform's own tokens ({@link IdentityService.verifyPlatformToken}).
 * - Users are the platform's user table; the sign-in page checks passwords with
 *   {@link IdentityService.checkPassword}. Consent is implicit for the first-party client.
 * - Storage: the database ({@link DbAdapter}); cookie keys derive from a secret stored there.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import formbody from '@fastify/formbody';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type Provider from 'oidc-provider';
import { Type } from 'typebox';
import type { AppContext } from '../../context.js';
import { AppError } from '../../http/errors.js';
import type { Config } from '../../config.js';
import { purgeExpiredPayloads } from './idp-adapter.js';
import { IDP_PREFIX, IDP_ROUTES } from './idp-endpoints.js';
import { clientNameOf, consentPage, grantAndContinue, mcpAuthorizationRoutes } from './idp-mcp.js';
import { PAGE_HEADERS, errorPage, loginPage } from './idp-pages.js';
import type { IdentityService } from './service.js';
import { userinfoRoutes } from './userinfo.js';

/**
 * `fetch` that answers requests for this service's own URLs in-process (`app.inject`), so the
 * server-side code exchange with the embedded provider needs no network round trip and works
 * even where `PUBLIC_URL` does not resolve from the server itself.
 */
export function inProcessFetch(app: FastifyInstance) {
  return async (
    url: string,
    options: { method: string; headers: Record<string, string>; body?: unknown },
  ): Promise<Response> => {
    const u = new URL(url);
    const body = options.body === undefined || options.body === null ? undefined : String(options.body);
    const res = await app.inject({
      method: options.method as 'GET',
      url: u.pathname + u.search,
      headers: { ...options.headers, host: u.host },
      ...(body !== undefined ? { payload: body } : {}),
    });
    const headers = new Headers();
    for (const [k, v] of Object.entries(res.headers)) {
      if (Array.isArray(v)) for (const x of v) headers.append(k, String(x));
      else if (v !== undefined) headers.set(k, String(v));
    }
    const noBody = res.statusCode === 204 || res.statusCode === 304 || res.rawPayload.length === 0;
    return new Response(noBody ? null : new Uint8Array(res.rawPayload), { status: res.statusCode, headers });
  };
}

const InteractionParams = Type.Object({ uid: Type.String({ minLength: 1, maxLength: 100 }) });
const LoginForm = Type.Object({ email: Type.String({ maxLength: 254 }), password: Type.String({ maxLength: 256 }) });

/**
 * Mount the provider under `/idp` and serve its sign-in pages. The provider is built after start-up
 * (pushed onto `deferred`, run by the app's `warm` once listening) or by the first request that
 * needs it, whichever comes first (idp-provider.ts; a failed build is retried by the next request).
 * Expired provider rows and login states are purged every 10 minutes from start-up on.
 */
export async function idpRoutes(
  app: FastifyInstance,
  {
    ctx,
    identity,
    config,
    deferred,
  }: { ctx: AppContext; identity: IdentityService; config: Config; deferred?: Array<() => Promise<unknown>> },
): Promise<void> {
  let building:
    | Promise<{ provider: Provider; handle: (req: IncomingMessage, res: ServerResponse) => void }>
    | undefined;
  const built = () =>
    (building ??= import('./idp-provider.js')
      .then((m) => m.createEmbeddedIdp(ctx, identity))
      .then((provider) => ({
        provider,
        handle: provider.callback() as (req: IncomingMessage, res: ServerResponse) => void,
      }))
      .catch((err: unknown) => {
        building = undefined;
        throw err;
      }));
  const providerOf = async () => (await built()).provider;
  deferred?.push(built);
  const publicUrl = new URL(identity.platformIssuer);
  const timer = setInterval(() => {
    purgeExpiredPayloads(ctx.db).catch((err: Error) => ctx.log.warn({ err: err.message }, 'idp purge failed'));
  }, 10 * 60_000);
  timer.unref();
  ctx.onClose.push(() => clearInterval(timer));

  // Everything under /idp that is not a sign-in page goes to the provider, before Fastify reads
  // the body (the provider parses its own form bodies).
  const forward = async (req: FastifyRequest, reply: FastifyReply) => {
    const { handle } = await built();
    reply.hijack();
    const raw = req.raw as IncomingMessage & { originalUrl?: string };
    raw.originalUrl = raw.url;
    raw.url = raw.url!.slice(IDP_PREFIX.length) || '/';
    // The provider presents itself at PUBLIC_URL whatever Host/X-Forwarded-* the client sent
    // (endpoint URLs, cookie `secure` flag), and sees the client address Fastify settled on
    // (TRUST_PROXY rules), never a client-supplied X-Forwarded-For chain: the provider's `ctx.ip`
    // keys the metadata-document fetch budget (idp-cimd.ts).
    raw.headers['x-forwarded-host'] = publicUrl.host;
    raw.headers['x-forwarded-proto'] = publicUrl.protocol.slice(0, -1);
    raw.headers['x-forwarded-for'] = req.ip;
    reply.raw.setHeader('x-request-id', String(req.id));
    handle(raw, reply.raw);
  };
  app.route({
    method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    url: `${IDP_PREFIX}/*`,
    schema: { hide: true },
    // The provider answers CORS itself (discovery and JWKS to any origin; clientBasedCORS below).
    config: { rateLimit: false, cors: false },
    onRequest: async (req, reply) => forward(req, reply),
    handler: async () => undefined,
  });
  await app.register(mcpAuthorizationRoutes, { config, provider: providerOf, forward });
  await app.register(userinfoRoutes, { identity, path: `${IDP_PREFIX}${IDP_ROUTES.userinfo}` });

  await app.register(async (pages) => {
    await pages.register(formbody);
    const r = pages.withTypeProvider<TypeBoxTypeProvider>();
    const hide = true;

    /** The interaction of this request, checked against the `uid` in the URL (CSRF). */
    const interaction = async (
      provider: Provider,
      req: { raw: IncomingMessage; params: { uid: string } },
      res: ServerResponse,
    ) => {
      let details;
      try {
        details = await provider.interactionDetails(req.raw, res);
      } catch {
        throw new PageError(400, {
          error: 'invalid_request',
          error_description: 'This sign-in request has expired or was already completed.',
        });
      }
      if (details.uid !== req.params.uid)
        throw new PageError(400, {
          error: 'invalid_request',
          error_description: 'This sign-in request does not belong to this browser.',
        });
      return details;
    };

    pages.setErrorHandler((err, _req, reply) => {
      if (err instanceof PageError) return reply.code(err.status).headers(PAGE_HEADERS).send(errorPage(err.out));
      throw err;
    });

    r.get(`${IDP_PREFIX}/interaction/:uid`, { schema: { hide, params: InteractionParams } }, async (req, reply) => {
      const provider = await providerOf();
      const details = await interaction(provider, req, reply.raw);
      const firstParty = details.params.client_id === config.auth.clientId;
      if (details.prompt.name === 'login') {
        const clientName = firstParty
          ? 'Agent Platform'
          : await clientNameOf(provider, String(details.params.client_id));
        return reply
          .headers(PAGE_HEADERS)
          .send(loginPage({ uid: details.uid, clientName, email: String(details.params.login_hint ?? '') }));
      }
      // Consent: implicit for the first-party client; a registered client needs the user's Allow.
      if (!firstParty) return reply.headers(PAGE_HEADERS).send(await consentPage(provider, details));
      return grantAndContinue(provider, req.raw, reply, details);
    });

    r.post(
      `${IDP_PREFIX}/interaction/:uid/login`,
      { schema: { hide, params: InteractionParams, body: LoginForm } },
      async (req, reply) => {
        const provider = await providerOf();
        const details = await interaction(provider, req, reply.raw);
        if (details.prompt.name !== 'login')
          throw new PageError(400, {
            error: 'invalid_request',
            error_description: 'This sign-in request is not waiting for a password.',
          });
        let user;
        try {
          user = await identity.checkPassword(req.body.email, req.body.password);
        } catch (err) {
          if (err instanceof AppError && err.code === 'invalid_credentials') {
            return reply
              .code(401)
              .headers(PAGE_HEADERS)
              .send(
                loginPage({
                  uid: details.uid,
                  clientName: 'Agent Platform',
                  email: req.body.email,
                  error: 'Email or password is wrong.',
                }),
              );
          }
          throw err;
        }
        const to = await provider.interactionResult(
          req.raw,
          reply.raw,
          { login: { accountId: user.id } },
          { mergeWithLastSubmission: false },
        );
        return reply.code(303).header('location', to).header('cache-control', 'no-store').send();
      },
    );

    r.post(
      `${IDP_PREFIX}/interaction/:uid/abort`,
      { schema: { hide, params: InteractionParams } },
      async (req, reply) => {
        const provider = await providerOf();
        await interaction(provider, req, reply.raw);
        const to = await provider.interactionResult(
          req.raw,
          reply.raw,
          { error: 'access_denied', error_description: 'The user cancelled the sign-in' },
          { mergeWithLastSubmission: false },
        );
        return reply.code(303).header('location', to).header('cache-control', 'no-store').send();
      },
    );
  });
}

/** An error shown as an HTML page (the sign-in pages are for browsers, not API clients). */
class PageError extends Error {
  constructor(
    readonly status: number,
    readonly out: { error: string; error_description?: string },
  ) {
    super(out.error_description ?? out.error);
  }
}
