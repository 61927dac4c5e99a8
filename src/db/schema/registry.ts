/** Tables of the registry module: registered services, their tools and tool-name aliases (DESIGN.md §7). */
import { sql } from 'drizzle-orm';
import { index, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { users } from './identity.js';

export const services = pgTable(
  'services',
  {
    id: text('id').primaryKey(),
    ownerId: text('owner_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
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
    /** AES-GCM blob of the per-service HMAC signing secret. */
    signingSecret: text('signing_secret').notNull(),
    /** Validation warnings of the last registration/sync (`{pointer, message}`). */
    warnings: jsonb('warnings').$type<Array<{ pointer: string; message: string }>>().notNull().default([]),
    publishedAt: timestamp('published_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
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
    serviceId: text('service_id').notNull().references(() => services.id, { onDelete: 'cascade' }),
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
    argLocations: jsonb('arg_locations').$type<{ locations: Record<string, 'path' | 'query' | 'header' | 'body'>; bodyArgument?: string } | null>(),
    /** `active` | `degraded` */
    status: text('status').notNull().default('active'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex('tools_service_name_key').on(t.serviceId, t.name)],
);

/** Former names of renamed tools; still accepted for execution. */
export const toolAliases = pgTable(
  'tool_aliases',
  {
    serviceId: text('service_id').notNull().references(() => services.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    toolId: text('tool_id').notNull().references(() => tools.id, { onDelete: 'cascade' }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex('tool_aliases_service_name_key').on(t.serviceId, t.name), index('tool_aliases_tool_idx').on(t.toolId)],
);
