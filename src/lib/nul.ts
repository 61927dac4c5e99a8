/**
 * U+0000 (NUL) and PostgreSQL: `text` and `jsonb` cannot hold it ("invalid byte sequence" /
 * "unsupported Unicode escape sequence"). Request input holding it is refused at the HTTP edge
 * ({@link findNul}); data the platform did not choose (upstream answers) is stored with U+FFFD
 * instead ({@link withoutNul}).
 */

/**
 * Objects that are walked: arrays and objects of parsed data (JSON bodies, query strings — whose
 * parser gives objects a prototype-less prototype), not binary data or dates.
 */
function isWalkable(v: unknown): v is Record<string, unknown> | unknown[] {
  if (v === null || typeof v !== 'object') return false;
  return !(ArrayBuffer.isView(v) || v instanceof ArrayBuffer || v instanceof Date);
}

/** RFC 6901 escaping of one reference token. */
function token(key: string): string {
  return key.replaceAll('~', '~0').replaceAll('/', '~1');
}

/**
 * JSON pointer (RFC 6901) of the first string or object key holding U+0000 in `value`, relative
 * to `base`; null when there is none.
 */
export function findNul(value: unknown, base = ''): string | null {
  if (typeof value === 'string') return value.includes('\0') ? base : null;
  if (!isWalkable(value)) return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const hit = findNul(value[i], `${base}/${i}`);
      if (hit !== null) return hit;
    }
    return null;
  }
  for (const [k, v] of Object.entries(value)) {
    if (k.includes('\0')) return `${base}/${token(k)}`;
    const hit = findNul(v, `${base}/${token(k)}`);
    if (hit !== null) return hit;
  }
  return null;
}

/** `value` with every U+0000 in strings and object keys replaced by U+FFFD (a copy when anything changes). */
export function withoutNul<T>(value: T): T {
  if (findNul(value) === null) return value;
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return v.replaceAll('\0', '\uFFFD');
    if (!isWalkable(v)) return v;
    if (Array.isArray(v)) return v.map(walk);
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k.replaceAll('\0', '\uFFFD'), walk(x)]));
  };
  return walk(value) as T;
}
