/**
 * The platform's JWS signing keys (RS256), stored in the database so every instance signs and
 * verifies with the same keys. The embedded OpenID Provider publishes the same keys at its JWKS.
 */
import { randomBytes } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { exportJWK, generateKeyPair, importJWK, type JWK, type CryptoKey } from 'jose';
import { asc } from 'drizzle-orm';
import type { Db } from '../../db/client.js';
import { identitySecrets, signingKeys } from '../../db/schema/index.js';
import { newId } from '../../http/ids.js';

export const SIGNING_ALG = 'RS256';

/**
 * A loaded key set: the oldest key signs and all verify. Choosing the oldest makes instances that
 * raced to create the first key agree on one signing key.
 */
export interface KeySet {
  /** Private JWKs (with `kid`, `alg`, `use`), oldest first — the format oidc-provider's `jwks` takes. */
  privateJwks: JWK[];
  /** Public JWK Set (RFC 7517 §5) for verification and publication. */
  publicJwks: { keys: JWK[] };
  signingKey: CryptoKey;
  signingKid: string;
}

function publicPart(jwk: JWK): JWK {
  const { kty, n, e, kid, alg, use } = jwk;
  return { kty, n, e, kid, alg, use };
}

/** Load the signing keys, creating the first one if none exists (race-safe across instances). */
export async function loadKeySet(db: Db): Promise<KeySet> {
  let rows = await db.select().from(signingKeys).orderBy(asc(signingKeys.createdAt), asc(signingKeys.kid));
  if (rows.length === 0) {
    const { privateKey } = await generateKeyPair(SIGNING_ALG, { extractable: true, modulusLength: 2048 });
    const kid = newId('key').slice(4);
    const jwk = { ...(await exportJWK(privateKey)), kid, alg: SIGNING_ALG, use: 'sig' };
    await db
      .insert(signingKeys)
      .values({ kid, alg: SIGNING_ALG, privateJwk: jwk as Record<string, unknown> })
      .onConflictDoNothing();
    rows = await db.select().from(signingKeys).orderBy(asc(signingKeys.createdAt), asc(signingKeys.kid));
  }
  const privateJwks = rows.map((r) => r.privateJwk as JWK);
  const signingKey = (await importJWK(privateJwks[0], SIGNING_ALG)) as CryptoKey;
  return {
    privateJwks,
    publicJwks: { keys: privateJwks.map(publicPart) },
    signingKey,
    signingKid: privateJwks[0].kid!,
  };
}

/**
 * A random 256-bit secret named `name`, generated on first use and stored in the database so
 * every instance (and every restart) uses the same value. Race-safe: the first insert wins.
 * @returns the secret as bytes.
 */
export async function loadOrCreateSecret(db: Db, name: string): Promise<Buffer> {
  await db
    .insert(identitySecrets)
    .values({ name, value: randomBytes(32).toString('base64url') })
    .onConflictDoNothing();
  const [row] = await db.select().from(identitySecrets).where(eq(identitySecrets.name, name));
  return Buffer.from(row.value, 'base64url');
}
