/** Tables of the identity module: users, refresh tokens, login states, signing keys. */
import { sql } from 'drizzle-orm';
import { index, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';

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
    preferences: jsonb('preferences').$type<Record<string, unknown>>().notNull().default({}),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex('users_subject_key').on(t.subject), uniqueIndex('users_email_key').on(sql`lower(${t.email})`)],
);

/** Refresh tokens issued by the platform itself (simplified login, test tokens). Stored hashed. */
export const refreshTokens = pgTable(
  'refresh_tokens',
  {
    id: text('id').primaryKey(),
    userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
    tokenHash: text('token_hash').notNull(),
    /** Rotation family: reuse of a consumed token revokes the whole family (OAuth 2.0 BCP §4.14). */
    familyId: text('family_id').notNull(),
    consumedAt: timestamp('consumed_at', { withTimezone: true }),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex('refresh_tokens_hash_key').on(t.tokenHash), index('refresh_tokens_family_idx').on(t.familyId)],
);

/** JWS signing keys of the platform (private JWK). The newest active key signs. */
export const signingKeys = pgTable('signing_keys', {
  kid: text('kid').primaryKey(),
  alg: text('alg').notNull(),
  privateJwk: jsonb('private_jwk').$type<Record<string, unknown>>().notNull(),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
});
