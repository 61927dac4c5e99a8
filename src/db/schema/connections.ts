/**
 * Tables of the connections module (docs/connections.md): each user's OAuth 2.0 grant to
 * an upstream service, optionally for one of the user's agents, and the single-use states of the
 * authorization-code flow that creates or renews it.
 */
import { sql } from 'drizzle-orm';
import { index, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { agents } from './agents.js';
import { userFk } from './identity.js';
import { services } from './registry.js';
import { tz, createdAt, updatedAt } from './columns.js';

export const connections = pgTable(
  'connections',
  {
    /** `con_…` */
    id: text('id').primaryKey(),
    userId: userFk(),
    /** Set when the owner made this connection for one of its agents; null = the owner's own. */
    agentId: text('agent_id').references(() => agents.id, { onDelete: 'cascade' }),
    serviceId: text('service_id')
      .notNull()
      .references(() => services.id, { onDelete: 'cascade' }),
    /** `pending` (authorization not finished) | `active` | `expired` | `revoked` | `error` */
    status: text('status').notNull().default('pending'),
    /** Scopes granted (token response `scope`, else the scopes requested). */
    scopes: text('scopes').array().notNull().default(sql`'{}'::text[]`),
    /** AES-GCM blobs (`src/lib/secrets.ts`) of the upstream's tokens; never returned. */
    accessToken: text('access_token'),
    refreshToken: text('refresh_token'),
    /** Access-token expiry (`expires_in` of the token response); null = not told. */
    expiresAt: tz('expires_at'),
    lastUsedAt: tz('last_used_at'),
    lastRefreshedAt: tz('last_refreshed_at'),
    /** Why the connection is `expired` or `error` (OAuth error code and description). */
    lastError: text('last_error'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex('connections_owner_service_key').on(t.userId, t.serviceId, sql`coalesce(${t.agentId}, '')`),
    index('connections_user_idx').on(t.userId, t.id),
    index('connections_service_idx').on(t.serviceId),
  ],
);

export const connectionStates = pgTable(
  'connection_states',
  {
    /** SHA-256 of the opaque `state` (the value itself is never stored). */
    stateHash: text('state_hash').primaryKey(),
    connectionId: text('connection_id')
      .notNull()
      .references(() => connections.id, { onDelete: 'cascade' }),
    /** The user who started the flow: the state is bound to that user's connection. */
    userId: text('user_id').notNull(),
    /** AES-GCM blob of the PKCE code verifier (RFC 7636); null when the service disables PKCE. */
    codeVerifier: text('code_verifier'),
    returnTo: text('return_to'),
    /** AES-GCM blob of the upstream's authorization URL (it carries the state), handed only to the browser that binds the flow. */
    authorizationUrl: text('authorization_url'),
    /** SHA-256 of the browser-binding cookie set when the user's signed-in browser took the flow; null = not bound yet (RFC 6749 §10.12). */
    bindingHash: text('binding_hash'),
    consumedAt: tz('consumed_at'),
    expiresAt: tz('expires_at').notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    index('connection_states_expires_idx').on(t.expiresAt),
    index('connection_states_connection_idx').on(t.connectionId),
  ],
);
