/**
 * API keys (development/testing method per spec "Authentication" 1): `apk_` + 256 random bits,
 * shown once, stored as SHA-256, `last_used_at` tracked, revocable, optional expiry.
 */
import { and, eq, isNull } from 'drizzle-orm';
import type { Static } from 'typebox';
import type { Role } from '../../config.js';
import type { AppContext } from '../../context.js';
import { apiKeys, users } from '../../db/schema/index.js';
import { revokeLive } from '../../db/revoke.js';
import { AppError, notFound } from '../../http/errors.js';
import type { UserPrincipal } from '../../http/auth.js';
import { hashSecret, newId, newSecret, iso } from '../../http/ids.js';
import { mapPage, selectPage, type Page } from '../../http/pagination.js';
import type { ApiKeySchema } from './schemas.js';

type ApiKeyRow = typeof apiKeys.$inferSelect;

/** The API-key record as listed (never the key itself). */
export type ApiKeyView = Static<typeof ApiKeySchema>;

const view = (k: ApiKeyRow): ApiKeyView => ({ id: k.id, name: k.name, prefix: k.prefix, last_used_at: iso(k.lastUsedAt), expires_at: iso(k.expiresAt), created_at: iso(k.createdAt) });

/** Create a key; the answer is the only time `key` is shown. @throws AppError validation_failed for a past expiry */
export async function createApiKey(ctx: AppContext, userId: string, input: { name: string; expires_at?: string }): Promise<ApiKeyView & { key: string }> {
  const expiresAt = input.expires_at ? new Date(input.expires_at) : null;
  if (expiresAt && expiresAt.getTime() <= Date.now()) {
    throw new AppError('validation_failed', 'expires_at must be in the future', { errors: [{ in: 'body', pointer: '/expires_at', message: 'must be in the future' }] });
  }
  const key = newSecret('apk');
  const [row] = await ctx.db
    .insert(apiKeys)
    .values({ id: newId('key'), userId, name: input.name, prefix: key.slice(0, 12), keyHash: hashSecret(key), expiresAt })
    .returning();
  return { ...view(row), key };
}

/** The user's live (not revoked) keys, newest first. */
export async function listApiKeys(ctx: AppContext, userId: string, q: { limit?: number; cursor?: string }): Promise<Page<ApiKeyView>> {
  return mapPage(await selectPage(ctx.db, apiKeys, q, [eq(apiKeys.userId, userId), isNull(apiKeys.revokedAt)]), view);
}

/** Revoke a key of `userId`. Another user's key, or an already revoked one → 404. */
export async function revokeApiKey(ctx: AppContext, userId: string, id: string): Promise<void> {
  if (!(await revokeLive(ctx.db, apiKeys, and(eq(apiKeys.id, id), eq(apiKeys.userId, userId))))) throw notFound('API key');
}

/** Minimum interval between `last_used_at` writes for one key (avoids a write per request). */
const LAST_USED_RESOLUTION_MS = 60_000;

/**
 * Resolve a presented key to its user. Revoked, expired or unknown → AppError invalid_token.
 * Registered with the auth registry by `app.ts`.
 */
export async function resolveApiKey(ctx: AppContext, key: string): Promise<UserPrincipal> {
  const [row] = await ctx.db
    .select({ key: apiKeys, user: { id: users.id, subject: users.subject, email: users.email, roles: users.roles } })
    .from(apiKeys)
    .innerJoin(users, eq(users.id, apiKeys.userId))
    .where(eq(apiKeys.keyHash, hashSecret(key)));
  if (!row || row.key.revokedAt) throw new AppError('invalid_token', 'API key is unknown or revoked');
  if (row.key.expiresAt && row.key.expiresAt.getTime() <= Date.now()) throw new AppError('invalid_token', 'API key has expired');
  const now = Date.now();
  if (!row.key.lastUsedAt || now - row.key.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
    await ctx.db.update(apiKeys).set({ lastUsedAt: new Date(now) }).where(eq(apiKeys.id, row.key.id));
  }
  return { kind: 'user', userId: row.user.id, subject: row.user.subject, email: row.user.email, roles: row.user.roles as Role[], via: 'api_key' };
}
