/**
 * Encryption of stored secrets (upstream credentials, per-service signing secrets): AES-256-GCM
 * (NIST SP 800-38D) with a 96-bit random IV and a 128-bit tag.
 *
 * Key: `SECRETS_KEY` (base64, 32 bytes). When unset, the key is read from / generated into
 * `DATA_DIR/secrets.key` (mode 0600) — except with an in-memory database (tests), where an
 * ephemeral key is generated (nothing encrypted with it outlives the process) and a warning logged.
 *
 * Blob format: `v1.<iv>.<tag>.<ciphertext>` (base64url parts).
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { AppContext } from '../context.js';

const keys = new WeakMap<object, Buffer>();

function keyFor(ctx: AppContext): Buffer {
  const cached = keys.get(ctx.config);
  if (cached) return cached;
  let key: Buffer;
  if (ctx.config.secretsKey) {
    key = Buffer.from(ctx.config.secretsKey, 'base64');
  } else if (ctx.config.databaseInMemory && !ctx.config.databaseUrl) {
    key = randomBytes(32);
    ctx.log.warn('SECRETS_KEY is unset and the database is in memory: using an ephemeral secrets key');
  } else {
    const file = path.join(ctx.config.dataDir, 'secrets.key');
    try {
      key = Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      fs.mkdirSync(ctx.config.dataDir, { recursive: true });
      key = randomBytes(32);
      try {
        // `wx`: never overwrite a key another process wrote meanwhile.
        fs.writeFileSync(file, key.toString('base64'), { mode: 0o600, flag: 'wx' });
        ctx.log.warn(
          { file },
          'SECRETS_KEY is unset: generated a secrets key (back it up; losing it loses stored credentials)',
        );
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
        key = Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64');
      }
    }
    if (key.length !== 32) throw new Error(`${file} must hold a base64-encoded 32-byte key`);
  }
  keys.set(ctx.config, key);
  return key;
}

/** Encrypt `plaintext` (UTF-8) → opaque blob string safe to store in a text column. */
export function encryptSecret(ctx: AppContext, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyFor(ctx), iv);
  const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ct.toString('base64url')].join(
    '.',
  );
}

/**
 * Decrypt a blob made by {@link encryptSecret}.
 * @throws Error when the blob is malformed or the key is wrong (tag mismatch); the error handler
 *   answers it as 500 `internal_error` and logs it (lib/ stays below http/).
 */
export function decryptSecret(ctx: AppContext, blob: string): string {
  const parts = blob.split('.');
  if (parts.length !== 4 || parts[0] !== 'v1') throw new Error('Stored secret is malformed');
  try {
    const decipher = createDecipheriv('aes-256-gcm', keyFor(ctx), Buffer.from(parts[1], 'base64url'));
    decipher.setAuthTag(Buffer.from(parts[2], 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(parts[3], 'base64url')), decipher.final()]).toString('utf8');
  } catch {
    throw new Error('Stored secret cannot be decrypted (was SECRETS_KEY changed?)');
  }
}
