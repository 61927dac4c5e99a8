/** Tables of the registry module: registered services, their tools and tool-name aliases (DESIGN.md §7). */
import { sql } from 'drizzle-orm';
import { index, jsonb, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { userFk } from './identity.js';
import { tz, createdAt, updatedAt } from './columns.js';

/**
 * The OAuth 2.0 client configuration of an `oauth2` service as stored (snake_case, as in the
 * manifest, docs/manifest.md): either `issuer` alone (OpenID Connect / RFC 8414 discovery) or
 * `authorization_url` + `token_url` (then `issuer`, when given, is the expected RFC 9207 `iss`).
 */
export interface OAuth2Settings {
  issuer?: string;
  authorization_url?: string;
  token_url?: string;
  /** RFC 7009 revocation endpoint with `authorization_url` + `token_url` (discovered with `issuer`). */
  revocation_url?: string;
  scopes: string[];
  client_id: string;
  /** Client authentication at the token endpoint (RFC 6749 §2.3.1); `none` when there is no secret. */
  token_endpoint_auth_method: 'client_secret_basic' | 'client_secret_post' | 'none';
  /** PKCE S256 (RFC 7636); default true. */
  pkce: boolean;
  /** Where the access token goes upstream: `Authorization: Bearer` or `?access_token=` (RFC 6750 §2.1/§2.3). */
  token_placement: 'header' | 'query';
  /** Auth0-style `audience` authorization parameter. */
  audience?: string;
  /** RFC 8707 resource indicator sent on authorization and token requests. */
  resource?: string;
}

export const services = pgTable(
  'services',
  {
    id: text('id').primaryKey(),
    ownerId: userFk('owner_id'),
    /** Unique slug `^[a-z0-9][a-z0-9-]{1,62}$`. */
    name: text('name').notNull(),
    displayName: text('display_name').notNull(),
    description: text('description').notNull().default(''),
    baseUrl: text('base_url').notNull(),
    category: text('category'),
    tags: text('tags').array().notNull().default(sql`'{}'::text[]`),
    version: text('version'),
    /** `manifest` | `openapi` | `mcp` */
    source: text('source').notNull(),
    /** `openapi_url` or `mcp_url` the tools were read from; null for an inline document. */
    sourceUrl: text('source_url'),
    /** `draft` | `pending_verification` | `published` | `rejected` | `unpublished` */
    status: text('status').notNull().default('draft'),
    /** Upstream auth: `none` | `bearer` | `header` | `query`, header/query name, AES-GCM blob of the secret. */
    authType: text('auth_type').notNull().default('none'),
    authName: text('auth_name'),
    authSecret: text('auth_secret'),
    /** `oauth2` services: the OAuth 2.0 client configuration without its secret (`auth_secret` holds that). */
    authOauth2: jsonb('auth_oauth2').$type<OAuth2Settings | null>(),
    /** AES-GCM blob of the per-service HMAC signing secret. */
    signingSecret: text('signing_secret').notNull(),
    /** Validation warnings of the last registration/sync (`{pointer, message}`). */
    warnings: jsonb('warnings').$type<Array<{ pointer: string; message: string }>>().notNull().default([]),
    publishedAt: tz('published_at'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex('services_name_key').on(t.name),
    index('services_owner_idx').on(t.ownerId, t.id),
    index('services_status_idx').on(t.status, t.id),
  ],
);

export const tools = pgTable(
  'tools',
  {
    id: text('id').primaryKey(),
    serviceId: text('service_id')
      .notNull()
      .references(() => services.id, { onDelete: 'cascade' }),
    /** Unique within its service: `^[a-zA-Z0-9_-]{1,64}$`. */
    name: text('name').notNull(),
    description: text('description').notNull().default(''),
    /** HTTP method (upper case); `MCP` for tools of an MCP server. */
    method: text('method').notNull(),
    /** Path template with `{param}` placeholders; the MCP tool name for MCP tools. */
    path: text('path').notNull(),
    inputSchema: jsonb('input_schema').$type<Record<string, unknown>>().notNull(),
    outputSchema: jsonb('output_schema').$type<Record<string, unknown> | null>(),
    /**
     * OpenAPI tools: where each top-level argument goes (`path` | `query` | `header` | `body` = a field of the
     * JSON body) and `bodyArgument`, the argument whose value is the whole JSON body; null → default placement.
     */
    argLocations: jsonb('arg_locations').$type<{
      locations: Record<string, 'path' | 'query' | 'header' | 'body'>;
      bodyArgument?: string;
    } | null>(),
    /** `active` | `degraded` */
    status: text('status').notNull().default('active'),
    /** MCP tool annotations as the server listed them (`readOnlyHint`, `destructiveHint`…); null for HTTP tools. */
    annotations: jsonb('annotations').$type<Record<string, unknown> | null>(),
    /**
     * Hex SHA-256 of the RFC 8785 canonical JSON of the tool's definition (name, description,
     * input/output schema, annotations; `registry/definitions.ts`), recomputed on every (re-)import;
     * null only for rows written before migration 0050 (computed on read then).
     */
    definitionHash: text('definition_hash'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [uniqueIndex('tools_service_name_key').on(t.serviceId, t.name)],
);

/** Former names of renamed tools; still accepted for execution. */
export const toolAliases = pgTable(
  'tool_aliases',
  {
    serviceId: text('service_id')
      .notNull()
      .references(() => services.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    toolId: text('tool_id')
      .notNull()
      .references(() => tools.id, { onDelete: 'cascade' }),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex('tool_aliases_service_name_key').on(t.serviceId, t.name),
    index('tool_aliases_tool_idx').on(t.toolId),
  ],
);
