/**
 * The embedded tenant as the authorization server of MCP clients (MCP spec "Authorization"):
 *
 * - RFC 8707 resource indicator `<PUBLIC_URL>/mcp`: access tokens for it are JWTs with that
 *   audience (accepted only by `/mcp`);
 * - RFC 7591 dynamic client registration at `POST /idp/reg`, limited to public clients (PKCE,
 *   `token_endpoint_auth_method: none`, code flow) that state their `application_type` and whose
 *   redirect URIs are https or loopback (RFC 8252 §7.3), rate limited per IP
 *   (`MCP_REGISTRATIONS_PER_HOUR`), without registration management (no registration access token);
 * - beside it, Client ID Metadata Documents: a `client_id` that is an https URL (idp-cimd.ts);
 * - RFC 9207: the `iss` parameter in every authorization response, advertised as
 *   `authorization_response_iss_parameter_supported`;
 * - RFC 8414 metadata at `/.well-known/oauth-authorization-server/idp` (the same document as
 *   OIDC discovery at `/idp/.well-known/openid-configuration`);
 * - a consent page: a registered (third-party) client gets a grant only when the signed-in user
 *   allows it, naming the client and where it sends the user back.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import formbody from '@fastify/formbody';
import type Provider from 'oidc-provider';
import type { Configuration, KoaContextWithOIDC, ResourceServer, errors as OidcErrors } from 'oidc-provider';
import type { Config } from '../../config.js';
import { MCP_SCOPE, mcpResourceUrl } from '../../http/resources.js';
import { PAGE_HEADERS, escapeHtml, page } from './idp-pages.js';
import { redirectUriProblem } from './redirect-uris.js';

export { MCP_SCOPE };

/** The resource server info of `<PUBLIC_URL>/mcp`, or null for another indicator. */
export function mcpResourceServerInfo(config: Config, indicator: string): ResourceServer | null {
  if (indicator !== mcpResourceUrl(config)) return null;
  return {
    scope: MCP_SCOPE,
    audience: indicator,
    accessTokenTTL: config.auth.accessTokenTtlSeconds,
    accessTokenFormat: 'jwt',
    jwt: { sign: { alg: 'RS256' } },
  };
}

/** Why a registered client's redirect URI is refused (https, or http on loopback only), or null. */
export function registeredRedirectUriProblem(uri: string): string | null {
  const basic = redirectUriProblem(uri, [uri]);
  if (basic) return basic;
  return new URL(uri).protocol === 'https:' ? null : redirectUriProblem(uri, []);
}

/** `application_type` values of OpenID Connect Dynamic Client Registration 1.0 §2. */
const APPLICATION_TYPES = new Set(['web', 'native']);

/**
 * The registration policy: throws `invalid_client_metadata` / `invalid_redirect_uri` (RFC 7591
 * §3.2.2). `sent`: the request body as the client sent it — `application_type` must be in it
 * (`web` or `native`, OIDC Dynamic Client Registration §2), not left to the provider's default
 * (`web`), because it decides which redirect URIs are valid (MCP SEP-837).
 */
function checkRegistration(
  oidcErrors: typeof OidcErrors,
  metadata: Record<string, unknown>,
  sent: Record<string, unknown> | undefined,
): void {
  if (!APPLICATION_TYPES.has(sent?.application_type as string)) {
    throw new oidcErrors.InvalidClientMetadata(
      'application_type is required: "native" for a client on the user\'s device (loopback redirect URIs), "web" for one on a server',
    );
  }
  if (metadata.token_endpoint_auth_method !== 'none') {
    throw new oidcErrors.InvalidClientMetadata(
      'only public clients may register: token_endpoint_auth_method must be "none" (PKCE S256 is required)',
    );
  }
  const grants = (metadata.grant_types as string[] | undefined) ?? ['authorization_code'];
  if (!grants.every((g) => g === 'authorization_code' || g === 'refresh_token'))
    throw new oidcErrors.InvalidClientMetadata('grant_types may only hold authorization_code and refresh_token');
  const responses = (metadata.response_types as string[] | undefined) ?? ['code'];
  if (!responses.every((r) => r === 'code'))
    throw new oidcErrors.InvalidClientMetadata('response_types may only hold "code"');
  const uris = (metadata.redirect_uris as string[] | undefined) ?? [];
  for (const uri of uris) {
    const problem = registeredRedirectUriProblem(uri);
    if (problem) throw new oidcErrors.InvalidRedirectUri(problem);
  }
}

/**
 * The provider settings for dynamic registration (merged into the tenant's configuration);
 * `oidcErrors`: the provider's error classes (oidc-provider is loaded only with the provider).
 */
export function registrationSettings(oidcErrors: typeof OidcErrors): Pick<Configuration, 'extraClientMetadata'> & {
  registration: NonNullable<Configuration['features']>['registration'];
} {
  return {
    registration: { enabled: true, initialAccessToken: false, issueRegistrationAccessToken: false },
    extraClientMetadata: {
      // RFC 7591 §2 `software_id`: kept as metadata; its validator runs the policy on registration.
      properties: ['software_id'],
      validator(kctx, key, _value, metadata) {
        const oidc = (kctx as KoaContextWithOIDC | undefined)?.oidc;
        if (key === 'software_id' && oidc?.route === 'registration')
          checkRegistration(oidcErrors, metadata as Record<string, unknown>, oidc.body as Record<string, unknown>);
      },
    },
  };
}

/** Forwards a request to the provider (the `/idp/*` mount of idp.ts). */
export type ProviderForward = (req: FastifyRequest, reply: FastifyReply) => Promise<void>;

/**
 * Routes of the MCP authorization server: RFC 8414 metadata, the rate-limited registration
 * endpoint (forwarded to the provider) and the consent form's answer.
 */
export async function mcpAuthorizationRoutes(
  app: FastifyInstance,
  { config, provider, forward }: { config: Config; provider: () => Promise<Provider>; forward: ProviderForward },
): Promise<void> {
  const limit = app.rateLimit({
    max: config.mcp.registrationsPerHour,
    timeWindow: 3_600_000,
    keyGenerator: (req) => `idp-reg:${req.ip}`,
  });
  app.route({
    method: 'POST',
    url: '/idp/reg',
    schema: { hide: true },
    config: { rateLimit: false },
    onRequest: [limit, async (req, reply) => forward(req, reply)],
    handler: async () => undefined,
  });

  // RFC 8414 §3: the issuer's path after the well-known prefix.
  app.get('/.well-known/oauth-authorization-server/idp', { schema: { hide: true } }, async (_req, reply) => {
    const res = await app.inject({ method: 'GET', url: '/idp/.well-known/openid-configuration' });
    return reply
      .code(res.statusCode)
      .header('content-type', 'application/json; charset=utf-8')
      .header('cache-control', 'public, max-age=300')
      .send(res.body);
  });

  // The consent form posts an empty urlencoded body.
  await app.register(formbody);
  app.post<{ Params: { uid: string } }>(
    '/idp/interaction/:uid/confirm',
    {
      schema: {
        hide: true,
        params: {
          type: 'object',
          properties: { uid: { type: 'string', minLength: 1, maxLength: 100 } },
          required: ['uid'],
        },
      },
    },
    async (req, reply) => {
      const p = await provider();
      const details = await interactionOf(p, req.raw, reply.raw, req.params.uid);
      if (details?.prompt.name !== 'consent')
        return reply
          .code(400)
          .headers(PAGE_HEADERS)
          .send(page('Error', '<h1>This request has expired</h1><p>Start again from your MCP client.</p>'));
      return grantAndContinue(p, req.raw, reply, details);
    },
  );
}

type Interaction = Awaited<ReturnType<Provider['interactionDetails']>>;

async function interactionOf(
  provider: Provider,
  req: IncomingMessage,
  res: ServerResponse,
  uid: string,
): Promise<Interaction | null> {
  try {
    const details = await provider.interactionDetails(req, res);
    return details.uid === uid ? details : null;
  } catch {
    return null;
  }
}

/** Grant what the interaction asks for (missing OIDC scopes/claims, resource scopes) and resume the authorization. */
export async function grantAndContinue(
  provider: Provider,
  req: IncomingMessage,
  reply: FastifyReply,
  details: Interaction,
): Promise<FastifyReply> {
  const { missingOIDCScope, missingOIDCClaims, missingResourceScopes } = details.prompt.details as {
    missingOIDCScope?: string[];
    missingOIDCClaims?: string[];
    missingResourceScopes?: Record<string, string[]>;
  };
  let grant = details.grantId ? await provider.Grant.find(details.grantId) : undefined;
  grant ??= new provider.Grant({ accountId: details.session!.accountId, clientId: String(details.params.client_id) });
  if (missingOIDCScope) grant.addOIDCScope(missingOIDCScope.join(' '));
  if (missingOIDCClaims) grant.addOIDCClaims(missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(missingResourceScopes ?? {}))
    grant.addResourceScope(indicator, scopes.join(' '));
  const grantId = await grant.save();
  const to = await provider.interactionResult(
    req,
    reply.raw,
    { consent: { grantId } },
    { mergeWithLastSubmission: true },
  );
  return reply.code(303).header('location', to).header('cache-control', 'no-store').send();
}

/** The display name of a client (its registered `client_name`, else its id). */
export async function clientNameOf(provider: Provider, clientId: string): Promise<string> {
  const client = await provider.Client.find(clientId).catch(() => undefined);
  return client?.clientName ?? clientId;
}

/**
 * The consent page of a registered client: Allow posts to `/confirm`, Deny to `/abort`. A client
 * known by its metadata document is named with the host that publishes the document; when such a
 * client sends the user back to a loopback address, the page warns that any program on the
 * device could be listening there (draft-ietf-oauth-client-id-metadata-document, security
 * considerations: impersonation through localhost redirect URIs).
 */
export async function consentPage(provider: Provider, details: Interaction): Promise<string> {
  const clientId = String(details.params.client_id);
  const client = await provider.Client.find(clientId).catch(() => undefined);
  const name = client?.clientName ?? clientId;
  const byDocument = (client as { clientIdMetadataDocument?: boolean } | undefined)?.clientIdMetadataDocument === true;
  let redirect = '';
  let loopback = false;
  try {
    const u = new URL(String(details.params.redirect_uri));
    redirect = u.host;
    loopback = registeredRedirectUriProblem(u.href) === null && u.protocol === 'http:';
  } catch {}
  const who = byDocument
    ? `(described by <strong>${escapeHtml(new URL(clientId).host)}</strong>, not verified by Agent Platform)`
    : '(registered by itself, not verified by Agent Platform)';
  const warning =
    byDocument && loopback
      ? '<p class="error">This application receives your sign-in on this computer. Continue only if you started the sign-in from it yourself.</p>'
      : '';
  const action = `/idp/interaction/${encodeURIComponent(details.uid)}`;
  return page(
    'Allow access — Agent Platform',
    `<h1>Allow ${escapeHtml(name)}?</h1>
<p><strong>${escapeHtml(name)}</strong> ${who} wants to use your Agent Platform account through MCP:
search and run tools on your subscriptions, and read and write your memory. You will be sent back to <strong>${escapeHtml(redirect)}</strong>.</p>${warning}
<form method="post" action="${escapeHtml(action)}/confirm"><button type="submit">Allow</button></form>
<form method="post" action="${escapeHtml(action)}/abort"><button class="cancel" type="submit" style="background:none;color:#57606a;margin-top:6px">Deny</button></form>`,
  );
}
