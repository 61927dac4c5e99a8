/** TypeBox schemas of the registry routes (owner side and marketplace). */
import { Type } from 'typebox';
import { Nullable, PageQuery, Timestamp } from '../../http/schemas.js';

const JsonSchemaObject = Type.Record(Type.String(), Type.Unknown(), { description: 'JSON Schema (2020-12) object' });

const EndpointUrl = (description: string) => Type.Optional(Type.String({ minLength: 1, maxLength: 2000, description }));

/** Upstream auth of a service (docs/manifest.md "auth"): a shared credential, or `oauth2` (each user's own grant, docs/connections.md). */
export const AuthInput = Type.Object(
  {
    type: Type.Union([
      Type.Literal('none'),
      Type.Literal('bearer'),
      Type.Literal('header'),
      Type.Literal('query'),
      Type.Literal('oauth2'),
    ]),
    name: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: 'header or query parameter name (header, query)' }),
    ),
    secret: Type.Optional(
      Type.String({ minLength: 1, maxLength: 8192, description: 'stored encrypted, never returned' }),
    ),
    issuer: EndpointUrl(
      'oauth2: issuer for OpenID Connect / RFC 8414 discovery (instead of the endpoint URLs), or the expected RFC 9207 iss',
    ),
    authorization_url: EndpointUrl('oauth2: authorization endpoint'),
    token_url: EndpointUrl('oauth2: token endpoint'),
    revocation_url: EndpointUrl('oauth2: RFC 7009 revocation endpoint'),
    scopes: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 200, pattern: '^[\\x21\\x23-\\x5B\\x5D-\\x7E]+$' }), {
        maxItems: 100,
      }),
    ),
    client_id: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
    client_secret: Type.Optional(
      Type.String({ minLength: 1, maxLength: 8192, description: 'oauth2: stored encrypted, never returned' }),
    ),
    token_endpoint_auth_method: Type.Optional(
      Type.Union([Type.Literal('client_secret_basic'), Type.Literal('client_secret_post'), Type.Literal('none')]),
    ),
    pkce: Type.Optional(Type.Boolean({ description: 'oauth2: PKCE S256 (default true)' })),
    token_placement: Type.Optional(
      Type.Union([Type.Literal('header'), Type.Literal('query')], {
        description: 'oauth2: Authorization header (default) or access_token query parameter',
      }),
    ),
    audience: Type.Optional(Type.String({ minLength: 1, maxLength: 2000 })),
    resource: EndpointUrl('oauth2: RFC 8707 resource indicator'),
  },
  { additionalProperties: false },
);

export const ToolInput = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 64 }),
    description: Type.String({ maxLength: 4000 }),
    method: Type.String({ pattern: '^(GET|POST|PUT|PATCH|DELETE|get|post|put|patch|delete)$' }),
    path: Type.String({ minLength: 1, maxLength: 2000 }),
    input_schema: JsonSchemaObject,
    output_schema: Type.Optional(JsonSchemaObject),
  },
  { additionalProperties: false },
);

const TopLevel = {
  name: Type.Optional(
    Type.String({ minLength: 1, maxLength: 63, description: 'unique slug ^[a-z0-9][a-z0-9-]{1,62}$' }),
  ),
  display_name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  description: Type.Optional(Type.String({ maxLength: 4000 })),
  base_url: Type.Optional(Type.String({ minLength: 1, maxLength: 2000 })),
  category: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  tags: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 50 }), { maxItems: 20 })),
  version: Type.Optional(Type.String({ minLength: 1, maxLength: 50 })),
  auth: Type.Optional(AuthInput),
};

/** `POST /owner/services`: the native manifest, or `openapi`/`openapi_url`, or `mcp_url`, plus top-level overrides. */
export const RegisterServiceBody = Type.Object(
  {
    ...TopLevel,
    tools: Type.Optional(Type.Array(ToolInput, { maxItems: 500 })),
    openapi: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'OpenAPI 3.0/3.1 document' })),
    openapi_url: Type.Optional(Type.String({ minLength: 1, maxLength: 2000 })),
    mcp_url: Type.Optional(Type.String({ minLength: 1, maxLength: 2000 })),
  },
  { additionalProperties: false },
);

/** `PATCH /owner/services/:id`: top-level fields; `tools` replaces the tool list of a manifest-sourced service. */
export const UpdateServiceBody = Type.Object(
  {
    display_name: TopLevel.display_name,
    description: TopLevel.description,
    base_url: TopLevel.base_url,
    category: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 100 }))),
    tags: TopLevel.tags,
    version: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 50 }))),
    auth: TopLevel.auth,
    tools: Type.Optional(Type.Array(ToolInput, { maxItems: 500 })),
  },
  { additionalProperties: false },
);

export const ToolSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  aliases: Type.Array(Type.String(), { description: 'former names, still accepted for execution' }),
  description: Type.String(),
  method: Type.String({ description: 'HTTP method, or MCP for tools of an MCP server' }),
  path: Type.String(),
  input_schema: JsonSchemaObject,
  output_schema: Nullable(JsonSchemaObject),
  status: Type.Union([Type.Literal('active'), Type.Literal('degraded')]),
});

export const OwnerToolSchema = Type.Object({ ...ToolSchema.properties, open_reports: Type.Integer() });

const Problem = Type.Object({ pointer: Type.String(), message: Type.String() });

/** Fields every service view starts with (id, names, description); shared with the search schemas. */
export const ServiceIdentityFields = {
  id: Type.String(),
  name: Type.String(),
  display_name: Type.String(),
  description: Type.String(),
};

/** Classification fields of a service (category, tags); shared with the search schemas. */
export const ServiceClassFields = {
  category: Nullable(Type.String()),
  tags: Type.Array(Type.String()),
};

/** The native manifest fields, in manifest order. */
const ManifestFields = {
  ...ServiceIdentityFields,
  base_url: Type.String(),
  ...ServiceClassFields,
  version: Nullable(Type.String()),
};

/** `oauth2` settings as shown: everything but the client secret. */
const OAuth2ViewSchema = Type.Object({
  issuer: Type.Optional(Type.String()),
  authorization_url: Type.Optional(Type.String()),
  token_url: Type.Optional(Type.String()),
  revocation_url: Type.Optional(Type.String()),
  scopes: Type.Array(Type.String()),
  client_id: Type.String(),
  token_endpoint_auth_method: Type.String(),
  pkce: Type.Boolean(),
  token_placement: Type.String(),
  audience: Type.Optional(Type.String()),
  resource: Type.Optional(Type.String()),
  has_client_secret: Type.Boolean(),
});

const AuthViewSchema = Type.Object({
  type: Type.String(),
  name: Nullable(Type.String()),
  oauth2: Type.Optional(OAuth2ViewSchema),
});

const ServiceFields = {
  ...ManifestFields,
  source: Type.Union([Type.Literal('manifest'), Type.Literal('openapi'), Type.Literal('mcp')]),
  source_url: Nullable(Type.String()),
  status: Type.String({ description: 'draft | pending_verification | published | rejected | unpublished' }),
  auth: AuthViewSchema,
  published_at: Nullable(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp,
};

const ChecklistItemSchema = Type.Object({
  status: Type.Union([Type.Literal('passed'), Type.Literal('failed'), Type.Literal('pending')]),
  detail: Type.String(),
  checked_at: Nullable(Timestamp),
});

/** The publish checklist (items in order). */
export const ChecklistSchema = Type.Object({
  manifest_valid: ChecklistItemSchema,
  domain_verified: ChecklistItemSchema,
  functional_verification: ChecklistItemSchema,
});

/** Owner view: everything but secrets. */
export const OwnerServiceSchema = Type.Object({
  ...ServiceFields,
  tools: Type.Array(OwnerToolSchema),
  warnings: Type.Array(Problem),
  checklist: ChecklistSchema,
  reports: Type.Object({ open: Type.Integer(), degraded_tools: Type.Integer() }),
});

export const CreatedServiceSchema = Type.Object({
  ...ServiceFields,
  tools: Type.Array(ToolSchema),
  warnings: Type.Array(Problem),
  signing_secret: Type.String({
    description: 'HMAC secret the platform signs upstream calls with; shown only in this answer',
  }),
});

export const OwnerServiceListItem = Type.Object({ ...ServiceFields, tool_count: Type.Integer() });

export const SigningSecretSchema = Type.Object({
  signing_secret: Type.String({ description: 'shown only in this answer' }),
});

/** Marketplace list item. */
export const PublicServiceSchema = Type.Object({
  ...ServiceIdentityFields,
  ...ServiceClassFields,
  version: Nullable(Type.String()),
  source: Type.String(),
  tool_count: Type.Integer(),
  published_at: Nullable(Timestamp),
});

/** Public manifest: the native manifest format plus ids and statuses, no secrets. */
export const PublicManifestSchema = Type.Object({
  ...ManifestFields,
  status: Type.String(),
  auth: AuthViewSchema,
  tools: Type.Array(ToolSchema),
});

export const MarketplaceQuery = Type.Object({
  ...PageQuery.properties,
  category: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  tag: Type.Optional(Type.String({ minLength: 1, maxLength: 50 })),
  q: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
});
