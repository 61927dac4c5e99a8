/**
 * Prefixed, time-sortable identifiers (`usr_01j…`), Stripe/Unkey style.
 * Body: 48-bit millisecond timestamp + 80 random bits in Crockford base32 (ULID layout), lowercase.
 */
import { createHash, randomBytes, randomFillSync } from 'node:crypto';
import { monotonicFactory } from 'ulid';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

/** Known id prefixes (DESIGN.md §5). */
export type IdPrefix =
  | 'usr'
  | 'svc'
  | 'tool'
  | 'ses'
  | 'exe'
  | 'mem'
  | 'sub'
  | 'key'
  | 'agt'
  | 'dep'
  | 'inv'
  | 'prm'
  | 'rep'
  | 'rt'
  | 'sec'
  | 'aud'
  | 'job'
  | 'evt'
  | 'sum'
  | 'con'
  | 'sch'
  | 'trg'
  | 'whk'
  | 'msg'
  | 'apr'
  | 'pol'
  | 'pdc';

/**
 * ULIDs that grow monotonically within this process: a second id in the same millisecond is the
 * previous one + 1 in its random part (ULID spec, "Monotonicity"), so newest-first lists keyed by
 * id keep creation order even for objects made in the same millisecond.
 */
const nextUlid = monotonicFactory(pooledRandom());

/**
 * The ULID generator's PRNG: a fraction in [0, 1) from one CSPRNG byte (byte / 256; 256 is a
 * multiple of the 32-letter alphabet, so each letter stays equally likely). The bytes come from a
 * 4 KiB pool refilled with `randomFillSync`: the library's default asks the OS for one byte per
 * letter (16 calls per id, ~5 % of an execution's CPU in the issue-18 profile).
 */
function pooledRandom(): () => number {
  const pool = Buffer.allocUnsafe(4096);
  let at = pool.length;
  return () => {
    if (at === pool.length) {
      randomFillSync(pool);
      at = 0;
    }
    return pool[at++] / 256;
  };
}

/**
 * A new id `<prefix>_<26 chars>`: a lowercase ULID (48-bit ms timestamp + 80 random bits, Crockford
 * base32). Ids made later in a process sort after ids made earlier; across processes, at ms resolution.
 * Ids identify objects; they are never secrets.
 */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${nextUlid().toLowerCase()}`;
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

/** Prefixes of secret tokens (shown once, stored hashed or encrypted; DESIGN.md §5). */
export type SecretPrefix = 'apk' | 'rt' | 'whsec' | 'mcs' | 'ags';

/**
 * A new bearer secret `<prefix>_<base64url of 32 CSPRNG bytes>` (256 bits; 43 characters after the
 * prefix), as API keys, refresh tokens, webhook signing secrets and MCP session ids are minted.
 * Unlike {@link newId} nothing in it is guessable or time-ordered. `infix` goes between the prefix
 * and the random part (e.g. the agent's short id in an agent secret).
 */
export function newSecret(prefix: SecretPrefix, infix = ''): string {
  return `${prefix}_${infix}${randomBytes(32).toString('base64url')}`;
}

/**
 * The stored form of a high-entropy secret (API key, refresh token, single-use `state`): its SHA-256
 * as 64 hex characters. Lookups hash the presented value and compare; the secret itself is never stored.
 */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/** PostgreSQL's text form of a `timestamptz` in a UTC session (`2026-11-26 10:01:02.123456+00`, fraction optional). */
const PG_UTC_TEXT = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?\+00$/;

/**
 * `d` as an RFC 3339 timestamp string (`Date.toISOString`: UTC, milliseconds), or null for a
 * missing date. A string is parsed first (raw SQL rows carry timestamps as text); PostgreSQL's UTC
 * text form is rewritten directly (the same string `Date` gives, fraction cut to milliseconds —
 * parsing it into a `Date` cost ~1–3 µs per timestamp).
 */
export function iso(d: Date | string): string;
export function iso(d: Date | string | null | undefined): string | null;
export function iso(d: Date | string | null | undefined): string | null {
  if (d === null || d === undefined) return null;
  if (typeof d !== 'string') return d.toISOString();
  const m = PG_UTC_TEXT.exec(d);
  if (m === null) return new Date(d).toISOString();
  const f = m[3];
  return `${m[1]}T${m[2]}.${f === undefined ? '000' : f.length >= 3 ? f.slice(0, 3) : f.padEnd(3, '0')}Z`;
}
