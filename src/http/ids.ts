/**
 * Prefixed, time-sortable identifiers (`usr_01j…`), Stripe/Unkey style.
 * Body: 48-bit millisecond timestamp + 80 random bits in Crockford base32 (ULID layout), lowercase.
 */
import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

/** Known id prefixes (DESIGN.md §5). */
export type IdPrefix =
  | 'usr' | 'svc' | 'tool' | 'ses' | 'exe' | 'mem' | 'sub' | 'key' | 'agt' | 'dep' | 'inv' | 'prm' | 'rep'
  | 'rt' | 'sec' | 'aud' | 'job' | 'evt' | 'sum';

/** A new id `<prefix>_<26 chars>`; ids made later sort after ids made earlier (ms resolution). */
export function newId(prefix: IdPrefix): string {
  let ts = Date.now();
  let time = '';
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[ts % 32] + time;
    ts = Math.floor(ts / 32);
  }
  const rnd = randomBytes(10);
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of rnd) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    value &= (1 << bits) - 1;
  }
  return `${prefix}_${time}${out}`;
}

/** True when `id` looks like an id with `prefix` (cheap check before a lookup). */
export function isId(id: string, prefix: IdPrefix): boolean {
  return id.startsWith(`${prefix}_`) && /^[a-z]+_[0-9a-z]{26}$/.test(id);
}

/**
 * The smallest id with `prefix` that {@link newId} can produce at or after instant `at` (time part
 * of `at`, random part all zeros). `id >= idFloor('exe', since)` selects rows created since `since`
 * through the primary-key index, without an index on `created_at`.
 */
export function idFloor(prefix: IdPrefix, at: Date): string {
  let ts = Math.max(0, Math.floor(at.getTime()));
  let time = '';
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[ts % 32] + time;
    ts = Math.floor(ts / 32);
  }
  return `${prefix}_${time}${'0'.repeat(16)}`;
}
