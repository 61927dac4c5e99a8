/**
 * API keys (development/testing method per spec "Authentication" 1): `apk_` + 256 random bits,
 * shown once, stored as SHA-256, `last_used_at` tracked, revocable, optional expiry, and scopes
 * (the agent-token vocabulary plus `agents:manage` and `api_keys:manage`; `http/auth.ts`
 * CREDENTIAL_SCOPES). A key created without scopes has its creator's, except the opt-in ones
 * (`approvals:decide`, `policies:manage`: OPT_IN_KEY_SCOPES, ADR 0973); a key made before scopes existed has every scope. A key never mints a key broader than itself: scopes it holds, and an
 * expiry no later than its own (docs/adr/0922-api-key-scopes-and-expiry.md).
 */
import { and, eq, isNull } from 'drizzle-orm';
import type { Static } from 'typebox';
import type { Role } from '../../config.js';
import type { AppContext } from '../../context.js';
import { apiKeys, users } from '../../db/schema/index.js';
import { revokeLive } from '../../db/revoke.js';
import { AppError, notFound } from '../../http/errors.js';
import {
  CREDENTIAL_SCOPES,
  hasScope,
  OPT_IN_KEY_SCOPES,
  requireScope,
  requireWithin,
  type Scope,
  type UserPrincipal,
} from '../../http/auth.js';
import { hashSecret, newId, newSecret, iso } from '../../http/ids.js';
import { mapPage, selectPage, type Page } from '../../http/pagination.js';
import type { ApiKeySchema, CreateApiKeyBody } from './schemas.js';

type ApiKeyRow = typeof apiKeys.$inferSelect;

/** The API-key record as listed (never the key itself). */
export type ApiKeyView = Static<typeof ApiKeySchema>;

/** The scopes of a stored key, in vocabulary order (null column = every scope). */
function scopesOf(stored: string[] | null): Scope[] {
  return stored === null ? [...CREDENTIAL_SCOPES] : CREDENTIAL_SCOPES.filter((s) => stored.includes(s));
}

const view = (k: ApiKeyRow): ApiKeyView => ({
  id: k.id,
  name: k.name,
  prefix: k.prefix,
  scopes: scopesOf(k.scopes),
  last_used_at: iso(k.lastUsedAt),
  expires_at: iso(k.expiresAt),
  created_at: iso(k.createdAt),
});

/**
 * Create a key of `creator`'s account; the answer is the only time `key` is shown. Needs
 * `api_keys:manage`. `scopes` defaults to the creator's but for OPT_IN_KEY_SCOPES (`approvals:decide`
 * and `policies:manage` are given only when named); a creator that is itself an expiring key
 * gives the new key its own expiry by default and refuses a later one.
 * @throws AppError insufficient_scope | exceeds_credential (scopes, or an expiry later than the
 *   creating key's) | validation_failed (expiry in the past)
 */
export async function createApiKey(
  ctx: AppContext,
  creator: UserPrincipal,
  input: Static<typeof CreateApiKeyBody>,
): Promise<ApiKeyView & { key: string }> {
  requireScope(creator, 'api_keys:manage');
  const scopes = input.scopes
    ? CREDENTIAL_SCOPES.filter((s) => input.scopes!.includes(s))
    : CREDENTIAL_SCOPES.filter((s) => hasScope(creator, s) && !OPT_IN_KEY_SCOPES.includes(s));
  requireWithin(creator, scopes, 'an API key');
  let expiresAt = input.expires_at ? new Date(input.expires_at) : null;
  if (expiresAt && expiresAt.getTime() <= Date.now()) {
    throw new AppError('validation_failed', 'expires_at must be in the future', {
      errors: [{ in: 'body', pointer: '/expires_at', message: 'must be in the future' }],
    });
  }
  const ceiling = creator.via === 'api_key' ? creator.expiresAt : undefined;
  if (ceiling) {
    if (expiresAt && expiresAt > ceiling) {
      throw new AppError(
        'exceeds_credential',
        `This key expires at ${ceiling.toISOString()}; a key it creates cannot outlive it (expires_at at most that)`,
        {
          extra: { max_expires_at: ceiling.toISOString() },
        },
      );
    }
    expiresAt ??= ceiling;
  }
  const key = newSecret('apk');
  const [row] = await ctx.db
    .insert(apiKeys)
    .values({
      id: newId('key'),
      userId: creator.userId,
      name: input.name,
      prefix: key.slice(0, 12),
      keyHash: hashSecret(key),
      expiresAt,
      scopes,
    })
    .returning();
  return { ...view(row), key };
}

/** The account's live (not revoked) keys, newest first. Needs `api_keys:manage`. @throws AppError insufficient_scope */
export async function listApiKeys(
  ctx: AppContext,
  principal: UserPrincipal,
  q: { limit?: number; cursor?: string },
): Promise<Page<ApiKeyView>> {
  requireScope(principal, 'api_keys:manage');
  return mapPage(
    await selectPage(ctx.db, apiKeys, q, [eq(apiKeys.userId, principal.userId), isNull(apiKeys.revokedAt)]),
    view,
  );
}

/**
 * Revoke a key of the account (needs `api_keys:manage`). Another user's key, or an already revoked
 * one → 404. @throws AppError insufficient_scope | not_found
 */
export async function revokeApiKey(ctx: AppContext, principal: UserPrincipal, id: string): Promise<void> {
  requireScope(principal, 'api_keys:manage');
  if (!(await revokeLive(ctx.db, apiKeys, and(eq(apiKeys.id, id), eq(apiKeys.userId, principal.userId)))))
    throw notFound('API key');
}

/** Minimum interval between `last_used_at` writes for one key (avoids a write per request). */
const LAST_USED_RESOLUTION_MS = 60_000;

/**
 * Resolve a presented key to its user, with the key's id, scopes and expiry on the principal.
 * Registered with the auth registry by `app.ts`.
 * @throws AppError invalid_token (unknown or revoked) | token_expired (past `expires_at`)
 */
export async function resolveApiKey(ctx: AppContext, key: string): Promise<UserPrincipal> {
  const [row] = await ctx.db
    .select({ key: apiKeys, user: { id: users.id, subject: users.subject, email: users.email, roles: users.roles } })
    .from(apiKeys)
    .innerJoin(users, eq(users.id, apiKeys.userId))
    .where(eq(apiKeys.keyHash, hashSecret(key)));
  if (!row || row.key.revokedAt) throw new AppError('invalid_token', 'API key is unknown or revoked');
  if (row.key.expiresAt && row.key.expiresAt.getTime() <= Date.now())
    throw new AppError('token_expired', 'API key has expired');
  const now = Date.now();
  if (!row.key.lastUsedAt || now - row.key.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
    await ctx.db
      .update(apiKeys)
      .set({ lastUsedAt: new Date(now) })
      .where(eq(apiKeys.id, row.key.id));
  }
  return {
    kind: 'user',
    userId: row.user.id,
    subject: row.user.subject,
    email: row.user.email,
    roles: row.user.roles as Role[],
    via: 'api_key',
    keyId: row.key.id,
    ...(row.key.expiresAt ? { expiresAt: row.key.expiresAt } : {}),
    ...(row.key.scopes !== null ? { scopes: new Set(scopesOf(row.key.scopes)) } : {}),
  };
}
