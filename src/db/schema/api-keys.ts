/** Tables of the api-keys module. */
import { index, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { userFk } from './identity.js';
import { tz, createdAt } from './columns.js';

export const apiKeys = pgTable(
  'api_keys',
  {
    id: text('id').primaryKey(),
    userId: userFk(),
    name: text('name').notNull(),
    /** First characters of the key, shown in lists so users can tell keys apart. */
    prefix: text('prefix').notNull(),
    /** SHA-256 of the full key (keys are 256-bit random, so a fast hash is sufficient). */
    keyHash: text('key_hash').notNull(),
    lastUsedAt: tz('last_used_at'),
    expiresAt: tz('expires_at'),
    /** What the key may do (credential scope vocabulary, `http/auth.ts`); null = every scope (keys made before scopes existed). */
    scopes: text('scopes').array(),
    revokedAt: tz('revoked_at'),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex('api_keys_hash_key').on(t.keyHash), index('api_keys_user_idx').on(t.userId, t.id)],
);
