/** HTTP routes of the registry: owner side (`/owner/services…`, users only) and marketplace (`/services…`, any principal). */
import type { FastifyInstance } from 'fastify';
import { Type, type Static } from 'typebox';
import type { AppContext } from '../../context.js';
import { accountOf, principalOf, userOf } from '../../http/auth.js';
import { authScope, created, noContent } from '../../http/operations.js';
import { IdParams, ListOf, PageQuery, USER_SECURITY, errorResponses } from '../../http/schemas.js';
import {
  CreatedServiceSchema,
  MarketplaceQuery,
  OwnerServiceListItem,
  OwnerServiceSchema,
  PublicManifestSchema,
  PublicServiceSchema,
  RegisterServiceBody,
  SigningSecretSchema,
  UpdateServiceBody,
} from './schemas.js';
import { registerService } from './register.js';
import {
  deleteService,
  getPublicManifest,
  listMarketplace,
  listOwnerServices,
  rotateSigningSecret,
  syncService,
  updateService,
} from './service.js';

/**
 * The owner's view of one service (`GET`/`PATCH /owner/services/:id`): registry fields plus what the
 * publishing module adds (checklist, report counts). Injected by `app.ts` so that registry does not
 * import publishing (which builds on registry).
 */
export type OwnerServiceDetail = (
  ctx: AppContext,
  ownerId: string,
  ref: string,
) => Promise<Static<typeof OwnerServiceSchema>>;

export async function registryRoutes(
  app: FastifyInstance,
  { ctx, ownerServiceDetail }: { ctx: AppContext; ownerServiceDetail: OwnerServiceDetail },
): Promise<void> {
  // Owner side: users manage their own services; another account's service is 404.
  await app.register(async (owner) => {
    const { r, op } = authScope(owner, ctx.auth, { principals: ['user'], tags: ['registry'], security: USER_SECURITY });

    r.post(
      '/owner/services',
      op(
        'registry.register',
        'Register an API service (native manifest, OpenAPI document or MCP server); the signing secret is shown once',
        {
          body: RegisterServiceBody,
          response: { 201: CreatedServiceSchema, ...errorResponses(403, 409, 502, 504) },
        },
      ),
      async (req, reply) => created(reply, registerService(ctx, userOf(req).userId, req.body), { noStore: true }),
    );
    r.get(
      '/owner/services',
      op('registry.listOwn', "List the caller's services", {
        querystring: PageQuery,
        response: { 200: ListOf(OwnerServiceListItem), ...errorResponses(403) },
      }),
      async (req) => listOwnerServices(ctx, userOf(req).userId, req.query),
    );
    r.get(
      '/owner/services/:id',
      op('registry.getOwn', 'Service details: tools, status, checklist summary, report counts', {
        params: IdParams,
        response: { 200: OwnerServiceSchema, ...errorResponses(403, 404) },
      }),
      async (req) => ownerServiceDetail(ctx, userOf(req).userId, req.params.id),
    );
    r.patch(
      '/owner/services/:id',
      op('registry.update', 'Update a service (top-level fields; tools of a manifest-sourced service)', {
        params: IdParams,
        body: UpdateServiceBody,
        response: { 200: OwnerServiceSchema, ...errorResponses(403, 404) },
      }),
      async (req) => {
        const userId = userOf(req).userId;
        await updateService(ctx, userId, req.params.id, req.body);
        return ownerServiceDetail(ctx, userId, req.params.id);
      },
    );
    r.delete(
      '/owner/services/:id',
      op('registry.delete', 'Delete a service (a published one leaves the marketplace)', {
        params: IdParams,
        response: { 204: Type.Null(), ...errorResponses(403, 404) },
      }),
      async (req, reply) => noContent(reply, deleteService(ctx, userOf(req).userId, req.params.id)),
    );
    r.post(
      '/owner/services/:id/sync',
      op('registry.sync', 'Re-read the tools from the MCP server or OpenAPI URL', {
        params: IdParams,
        response: { 200: OwnerServiceSchema, ...errorResponses(403, 404, 409, 502, 504) },
      }),
      async (req) => {
        const userId = userOf(req).userId;
        await syncService(ctx, userId, req.params.id);
        return ownerServiceDetail(ctx, userId, req.params.id);
      },
    );
    r.post(
      '/owner/services/:id/signing-secret',
      op('registry.rotateSigningSecret', 'Rotate the HMAC signing secret (the new one is shown once)', {
        params: IdParams,
        response: { 200: SigningSecretSchema, ...errorResponses(403, 404) },
      }),
      async (req, reply) => {
        reply.header('cache-control', 'no-store');
        return rotateSigningSecret(ctx, userOf(req).userId, req.params.id);
      },
    );
  });

  // Marketplace: any authenticated principal.
  await app.register(async (market) => {
    const { r, op } = authScope(market, ctx.auth, { tags: ['marketplace'], security: USER_SECURITY });
    r.get(
      '/services',
      op('marketplace.list', 'List published services (filters: category, tag, q)', {
        querystring: MarketplaceQuery,
        response: { 200: ListOf(PublicServiceSchema), ...errorResponses() },
      }),
      async (req) => listMarketplace(ctx, req.query),
    );
    r.get(
      '/services/:id/manifest',
      op('marketplace.manifest', "Public manifest of a published service (or of the caller's own)", {
        params: IdParams,
        response: { 200: PublicManifestSchema, ...errorResponses(404) },
      }),
      async (req) => getPublicManifest(ctx, accountOf(principalOf(req)), req.params.id),
    );
  });
}
