/**
 * Input that PostgreSQL cannot store, or that would exhaust the stack of code walking it.
 *
 * - U+0000 (NUL): `text` and `jsonb` cannot hold it ("invalid byte sequence" / "unsupported
 *   Unicode escape sequence").
 * - Lone UTF-16 surrogates (U+D800–U+DFFF not in a pair): not Unicode scalar values; `JSON.stringify`
 *   writes them as `\ud800`, which `jsonb` refuses (RFC 8259 §8.2 calls such strings unpredictable).
 * - Non-finite numbers (`1e400` parses to Infinity): JSON has no Infinity and bigint columns refuse it.
 * - Nesting deeper than {@link MAX_JSON_DEPTH}: no field of this API needs it, and recursive code
 *   (serialisers, schema walkers) would overflow the stack on 5,000 levels.
 *
 * Request input holding any of these is refused at the HTTP edge ({@link findUnstorable}); data the
 * platform did not choose (upstream answers) is stored with U+FFFD for NUL and lone surrogates instead ({@link storable}).
 * Every walk here is iterative, so any depth is safe to inspect.
 */

/** Deepest nesting of arrays/objects accepted in request input (the root value is depth 0). */
export const MAX_JSON_DEPTH = 64;

/** Why a value cannot be accepted; see the module comment. */
export type UnstorableReason = 'nul' | 'lone_surrogate' | 'non_finite' | 'too_deep';

/** A hit of {@link findUnstorable}: RFC 6901 pointer (relative to the walk's base) and reason. */
export interface Unstorable {
  pointer: string;
  reason: UnstorableReason;
}

/** Human-readable message per reason (for problem `errors[].message`). */
export const UNSTORABLE_MESSAGE: Record<UnstorableReason, string> = {
  nul: 'must not contain U+0000',
  lone_surrogate: 'must not contain an unpaired UTF-16 surrogate (U+D800–U+DFFF)',
  non_finite: 'must be a finite number',
  too_deep: `must not nest arrays or objects more than ${MAX_JSON_DEPTH} levels deep`,
};

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

/** A high surrogate not followed by a low one, or a low one not preceded by a high one (UTF-16 code units). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function stringProblem(s: string, checkSurrogates: boolean): UnstorableReason | null {
  if (s.includes('\0')) return 'nul';
  if (checkSurrogates && LONE_SURROGATE.test(s)) return 'lone_surrogate';
  return null;
}

interface WalkOptions {
  /** Report lone surrogates (default true). */
  surrogates?: boolean;
  /** Report non-finite numbers (default true). */
  numbers?: boolean;
  /** Deepest nesting allowed (default {@link MAX_JSON_DEPTH}; Infinity for none). */
  maxDepth?: number;
}

/**
 * The first string, object key or number in `value` (depth-first, document order) that cannot be
 * accepted, as a JSON pointer relative to `base` with its reason; null when there is none.
 * Iterative: safe on any depth.
 */
export function findUnstorable(value: unknown, base = '', opts: WalkOptions = {}): Unstorable | null {
  const surrogates = opts.surrogates ?? true;
  const numbers = opts.numbers ?? true;
  const maxDepth = opts.maxDepth ?? MAX_JSON_DEPTH;
  // The pointer of a node is built only when it is reported (its parent chain + key): walking a
  // clean value allocates no strings (this walk runs on every request's body, query,
  // params and headers).
  const stack: Node[] = [{ v: value, parent: null, key: '', depth: 0 }];
  while (stack.length > 0) {
    const node = stack.pop()!;
    const { v, depth } = node;
    if (typeof v === 'string') {
      const reason = stringProblem(v, surrogates);
      if (reason) return { pointer: pointerOf(node, base), reason };
      continue;
    }
    if (typeof v === 'number') {
      if (numbers && !Number.isFinite(v)) return { pointer: pointerOf(node, base), reason: 'non_finite' };
      continue;
    }
    if (!isWalkable(v)) continue;
    if (depth >= maxDepth) return { pointer: pointerOf(node, base), reason: 'too_deep' };
    // Push in reverse so the first child is examined first.
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ v: v[i], parent: node, key: i, depth: depth + 1 });
      continue;
    }
    const keys = Object.keys(v);
    for (const k of keys) {
      const reason = stringProblem(k, surrogates);
      if (reason) return { pointer: `${pointerOf(node, base)}/${token(k)}`, reason };
    }
    for (let i = keys.length - 1; i >= 0; i--)
      stack.push({ v: (v as Record<string, unknown>)[keys[i]], parent: node, key: keys[i], depth: depth + 1 });
  }
  return null;
}

/** A value met by {@link findUnstorable}'s walk: its parent and its key there (the root has none). */
interface Node {
  v: unknown;
  parent: Node | null;
  key: string | number;
  depth: number;
}

/** The JSON pointer of `node`, relative to `base`. */
function pointerOf(node: Node, base: string): string {
  const tokens: string[] = [];
  for (let n: Node | null = node; n?.parent; n = n.parent)
    tokens.push(typeof n.key === 'number' ? String(n.key) : token(n.key));
  return tokens.length ? `${base}/${tokens.reverse().join('/')}` : base;
}

/**
 * JSON pointer (RFC 6901) of the first string or object key holding U+0000 in `value`, relative
 * to `base`; null when there is none. Any depth.
 */
export function findNul(value: unknown, base = ''): string | null {
  return findUnstorable(value, base, { surrogates: false, numbers: false, maxDepth: Infinity })?.pointer ?? null;
}

/** A string as PostgreSQL `text`/`jsonb` can hold it: U+0000 and lone surrogates replaced by U+FFFD. */
const storableString = (s: string): string => s.replaceAll('\0', '\uFFFD').replace(LONE_SURROGATES, '\uFFFD');

/** {@link LONE_SURROGATE}, every occurrence (`replace` with a global pattern keeps no state). */
const LONE_SURROGATES = new RegExp(LONE_SURROGATE, 'g');

/**
 * `value` with every U+0000 and every lone UTF-16 surrogate in strings and object keys replaced by
 * U+FFFD (a copy when anything changes), so that it can be stored as `jsonb`: for data the platform
 * did not choose (upstream answers, a deployed handler's output and logs). Any depth.
 */
export function storable<T>(value: T): T {
  if (findUnstorable(value, '', { numbers: false, maxDepth: Infinity }) === null) return value;
  const fix = (v: unknown): unknown => (typeof v === 'string' ? storableString(v) : v);
  if (!isWalkable(value)) return fix(value) as T;
  const root: unknown = Array.isArray(value) ? [] : {};
  const stack: Array<{ from: Record<string, unknown> | unknown[]; to: Record<string, unknown> | unknown[] }> = [
    { from: value, to: root as never },
  ];
  while (stack.length > 0) {
    const { from, to } = stack.pop()!;
    const pairs: Array<[string | number, unknown]> = Array.isArray(from)
      ? from.map((x, i) => [i, x])
      : Object.entries(from);
    for (const [k, x] of pairs) {
      const key = typeof k === 'string' ? storableString(k) : k;
      let out: unknown = fix(x);
      if (isWalkable(x)) {
        out = Array.isArray(x) ? [] : {};
        stack.push({ from: x, to: out as never });
      }
      // defineProperty, not assignment: a parsed "__proto__" key stays an own property.
      Object.defineProperty(to, key, { value: out, enumerable: true, writable: true, configurable: true });
    }
  }
  return root as T;
}
