/**
 * Binding a connection's authorization to the browser of the user who started it (RFC 6749
 * §10.12: "bind the state to the user-agent's authenticated state"; docs/adr/0911).
 *
 * `POST /connections` (any face: console, SDK, CLI, an agent's `connection_required`) answers a
 * platform URL, not the upstream's. The user opens it in a browser signed in to the platform; the
 * console there calls {@link takeAuthorization} with that user's credential. Only the user who
 * started the flow gets the upstream's consent URL, with a fresh random value set as an HttpOnly,
 * Secure, SameSite=Lax cookie on the platform's callback path (one cookie per flow, named after the
 * state's hash). The callback ({@link checkBinding}) then requires that cookie: a flow started by
 * Mallory and finished in Alice's browser (Mallory sent her the link or the upstream URL) has no
 * such cookie there and is refused before anything is exchanged or stored.
 */
import { randomBytes } from 'node:crypto';
import { and, eq, isNull } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { connectionStates } from '../../db/schema/index.js';
import { AppError, notFound } from '../../http/errors.js';
import { hashSecret } from '../../http/ids.js';
import { decryptSecret } from '../../lib/secrets.js';

/** Path of the binding cookies: only the callback reads them. */
export const BINDING_COOKIE_PATH = '/connections/callback';

/** A cookie to set on the answer (HttpOnly, Secure, SameSite=Lax, {@link BINDING_COOKIE_PATH}). */
export interface BindingCookie {
  name: string;
  value: string;
  /** Seconds: until the state expires. */
  maxAge: number;
}

/**
 * Name of the binding cookie of the flow whose state hashes to `stateHash` (one per flow, so that
 * several flows can run in one browser, and a value is never taken from the browser and reused).
 */
export function bindingCookieName(stateHash: string): string {
  return `ap_connect_${stateHash.slice(0, 16)}`;
}

/**
 * `POST /connections/authorize`: the signed-in user takes the flow of `state` in this browser.
 * Refused unless `userId` started it; rebinding (the user opened the link again, maybe in another
 * browser) replaces the previous binding.
 * @returns the upstream's consent URL to send the browser to, and the binding cookie to set.
 * @throws AppError not_found (unknown state, or another user's: nothing is revealed or changed),
 *   invalid_connection_state (already used, expired, or created before browser binding existed)
 */
export async function takeAuthorization(ctx: AppContext, userId: string, state: string) {
  const stateHash = hashSecret(state);
  const [row] = await ctx.db.select().from(connectionStates).where(eq(connectionStates.stateHash, stateHash)).limit(1);
  if (!row || row.userId !== userId) throw notFound('Connection authorization');
  const restart = 'start again with POST /connections';
  if (row.consumedAt) throw new AppError('invalid_connection_state', `this authorization was already used; ${restart}`);
  const left = row.expiresAt.getTime() - Date.now();
  if (left <= 0)
    throw new AppError('invalid_connection_state', `this authorization has expired (10 minutes); ${restart}`);
  if (!row.authorizationUrl)
    throw new AppError('invalid_connection_state', `this authorization predates browser binding; ${restart}`);
  const value = randomBytes(32).toString('base64url');
  const [bound] = await ctx.db
    .update(connectionStates)
    .set({ bindingHash: hashSecret(value) })
    .where(
      and(
        eq(connectionStates.stateHash, stateHash),
        eq(connectionStates.userId, userId),
        isNull(connectionStates.consumedAt),
      ),
    )
    .returning({ connectionId: connectionStates.connectionId });
  if (!bound) throw new AppError('invalid_connection_state', `this authorization was already used; ${restart}`);
  ctx.log.info({ connection_id: row.connectionId }, 'connection authorization taken by the browser');
  const cookie: BindingCookie = { name: bindingCookieName(stateHash), value, maxAge: Math.ceil(left / 1000) };
  return {
    answer: {
      connection_id: row.connectionId,
      authorization_url: decryptSecret(ctx, row.authorizationUrl),
      expires_at: row.expiresAt.toISOString(),
    },
    cookie,
  };
}

/**
 * At the callback, before the state is consumed: an unused state must carry the binding cookie of
 * the browser that took it. An unknown, used or expired state is left to `consumeState`'s refusal.
 * @param cookies the request's cookies
 * @returns the name of the cookie to clear once the flow is finished (null: none)
 * @throws AppError connection_not_bound (403): the flow was not taken in this browser — nothing is
 *   exchanged or stored, and the state is spent
 */
export async function checkBinding(
  ctx: AppContext,
  state: string,
  cookies: Record<string, string | undefined>,
): Promise<string | null> {
  const stateHash = hashSecret(state);
  const [row] = await ctx.db
    .select({
      bindingHash: connectionStates.bindingHash,
      consumedAt: connectionStates.consumedAt,
      expiresAt: connectionStates.expiresAt,
      connectionId: connectionStates.connectionId,
    })
    .from(connectionStates)
    .where(eq(connectionStates.stateHash, stateHash))
    .limit(1);
  // Unknown, used or expired: refused by consumeState whoever sends it.
  if (!row || row.consumedAt || row.expiresAt.getTime() <= Date.now()) return null;
  const name = bindingCookieName(stateHash);
  const value = cookies[name];
  // Both sides are SHA-256 hex digests of a 256-bit random value: comparing them leaks nothing useful.
  if (row.bindingHash && value && hashSecret(value) === row.bindingHash) return name;
  // Burn the state: the code this browser brought must not be usable later with this state (say,
  // replayed from the browser that holds the cookie). The connection itself is left as it was.
  await ctx.db
    .update(connectionStates)
    .set({ consumedAt: new Date() })
    .where(and(eq(connectionStates.stateHash, stateHash), isNull(connectionStates.consumedAt)));
  ctx.log.warn(
    { connection_id: row.connectionId, bound: row.bindingHash !== null, cookie: value !== undefined },
    'connection callback refused: not the browser that took the flow',
  );
  throw new AppError(
    'connection_not_bound',
    'This authorization was not started in this browser by the signed-in owner of the connection, so nothing was connected. ' +
      'The user who started it must open its authorization_url (from POST /connections) in a browser signed in to the platform as themselves.',
  );
}
