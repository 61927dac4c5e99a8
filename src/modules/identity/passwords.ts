/**
 * Password hashing with scrypt (node:crypto), PHC-like string `scrypt$N$r$p$salt$hash`
 * (base64url), and the check of new passwords against common and context-specific ones
 * (NIST SP 800-63B §5.1.1.2).
 */
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { AppError } from '../../http/errors.js';

const N = 16384;
const R = 8;
const P = 1;
const KEYLEN = 32;

function derive(password: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFKC'), salt, KEYLEN, { N: n, r, p, maxmem: 64 * 1024 * 1024 }, (err, key) =>
      err ? reject(err) : resolve(key),
    ),
  );
}

/** Hash a password for storage. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, N, R, P);
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

/** A valid hash of a random password: verifying against it costs the same as a real check. */
export const DUMMY_HASH = `scrypt$${N}$${R}$${P}$${randomBytes(16).toString('base64url')}$${randomBytes(KEYLEN).toString('base64url')}`;

/** Constant-time check of `password` against a stored hash; false for malformed hashes. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [, n, r, p, salt, hash] = parts;
  const expected = Buffer.from(hash, 'base64url');
  const key = await derive(password, Buffer.from(salt, 'base64url'), Number(n), Number(r), Number(p));
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/** Lower-cased NFKC form: how candidate passwords are compared with the lists. */
const fold = (s: string) => s.normalize('NFKC').toLowerCase();

let common: Set<string> | undefined;

/**
 * Refuse a new password that is commonly used or derived from the account (NIST SP 800-63B
 * §5.1.1.2: "passwords obtained from previous breach corpuses", "dictionary words",
 * "context-specific words, such as the name of the service, the username"). The list is
 * zxcvbn-ts's `passwords-common` (49,233 passwords from breach corpora, shipped in
 * `@zxcvbn-ts/language-common`, offline); comparison ignores case and Unicode compatibility forms.
 * Length (8..256) is checked by the request schema. The list (~0.4 MB of JavaScript) is imported
 * on the first call, not at start-up.
 * @throws AppError validation_failed (400) with `errors[0].pointer` `/password`.
 */
export async function assertAcceptablePassword(password: string, account: { email: string }): Promise<void> {
  common ??= new Set((await import('@zxcvbn-ts/language-common')).dictionary['passwords-common'].map(fold));
  const p = fold(password);
  const email = fold(account.email);
  const reason = common.has(p)
    ? 'is one of the most common passwords (found in breach corpora); choose another'
    : p === email || p === email.split('@')[0] || /^agent[-_ ]?platform\d*$/.test(p)
      ? 'must not be your email address, its name part or the name of the service'
      : null;
  if (reason)
    throw new AppError('validation_failed', `The password ${reason}`, {
      errors: [{ in: 'body', pointer: '/password', message: reason }],
    });
}
