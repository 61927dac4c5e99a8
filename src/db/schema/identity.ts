/**
 * Tables of the identity module: users, refresh tokens, signing keys, login states of the
 * authorization-code flow, the embedded OpenID Provider's storage and the module's own secrets.
 */
import { sql } from 'drizzle-orm';
import { boolean, index, jsonb, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { tz, createdAt, updatedAt } from './columns.js';

export const users = pgTable(
  'users',
  {
    id: text('id').primaryKey(),
    /** Identity-provider subject `<provider>|<id>` (spec "user_id"). */
    subject: text('subject').notNull(),
    email: text('email'),
    name: text('name'),
    picture: text('picture'),
    /** scrypt hash for users of the embedded tenant; null for external-provider users. */
    passwordHash: text('password_hash'),
    roles: text('roles').array().notNull().default(sql`'{user}'::text[]`),
    /** Created by `POST /auth/test`: the only accounts a test token may be issued for. */
    test: boolean('test').notNull().default(false),
    preferences: jsonb('preferences').$type<Record<string, unknown>>().notNull().default({}),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [uniqueIndex('users_subject_key').on(t.subject), uniqueIndex('users_email_key').on(sql`lower(${t.email})`)],
);

/** `<column> text NOT NULL REFERENCES users(id) ON DELETE CASCADE`: the owning account of a row. */
export const userFk = <N extends string = 'user_id'>(column: N = 'user_id' as N) =>
  text(column)
    .notNull()
    .references(() => users.id, { onDelete: 'cascade' });

/** Refresh tokens issued by the platform itself (simplified login, test tokens). Stored hashed. */
export const refreshTokens = pgTable(
  'refresh_tokens',
  {
    id: text('id').primaryKey(),
    userId: userFk(),
    tokenHash: text('token_hash').notNull(),
    /** Rotation family: reuse of a consumed token revokes the whole family (OAuth 2.0 BCP §4.14). */
    familyId: text('family_id').notNull(),
    consumedAt: tz('consumed_at'),
    expiresAt: tz('expires_at').notNull(),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex('refresh_tokens_hash_key').on(t.tokenHash), index('refresh_tokens_family_idx').on(t.familyId)],
);

/** JWS signing keys of the platform (private JWK). The newest active key signs. */
export const signingKeys = pgTable('signing_keys', {
  kid: text('kid').primaryKey(),
  alg: text('alg').notNull(),
  privateJwk: jsonb('private_jwk').$type<Record<string, unknown>>().notNull(),
  createdAt: createdAt(),
});

/**
 * `state` of `GET /v1/auth/login`, bound to the PKCE verifier and the redirect URI
 * (RFC 6749 §10.12, RFC 7636). Single use (`consumed_at`), 10-minute expiry.
 */
export const loginStates = pgTable(
  'login_states',
  {
    /** SHA-256 of the opaque state value (the value itself is never stored). */
    stateHash: text('state_hash').primaryKey(),
    codeVerifier: text('code_verifier').notNull(),
    redirectUri: text('redirect_uri').notNull(),
    consumedAt: tz('consumed_at'),
    expiresAt: tz('expires_at').notNull(),
    createdAt: createdAt(),
  },
  (t) => [index('login_states_expires_idx').on(t.expiresAt)],
);

/**
 * Storage of the embedded OpenID Provider (oidc-provider Adapter): sessions, interactions,
 * grants, authorization codes, refresh tokens… one row per (model, id).
 */
export const oidcPayloads = pgTable(
  'oidc_payloads',
  {
    model: text('model').notNull(),
    id: text('id').notNull(),
    payload: jsonb('payload').$type<Record<string, unknown>>().notNull(),
    grantId: text('grant_id'),
    userCode: text('user_code'),
    uid: text('uid'),
    expiresAt: tz('expires_at'),
    consumedAt: tz('consumed_at'),
  },
  (t) => [
    primaryKey({ columns: [t.model, t.id] }),
    index('oidc_payloads_grant_idx').on(t.grantId),
    index('oidc_payloads_uid_idx').on(t.uid),
    index('oidc_payloads_user_code_idx').on(t.userCode),
    index('oidc_payloads_expires_idx').on(t.expiresAt),
  ],
);

/** Random secrets generated once and shared by every instance (e.g. the IdP cookie-signing secret). */
export const identitySecrets = pgTable('identity_secrets', {
  name: text('name').primaryKey(),
  value: text('value').notNull(),
  createdAt: createdAt(),
});
