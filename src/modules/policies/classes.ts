/**
 * Value classes: the coarse memo key of the policy engine (`engine.ts`; ADR 0996).
 *
 * The values that change call by call — an argument read as a tag (`context.arguments.getTag("k")`,
 * `context.numbers.getTag("k")`), a field of a context record (`context.calls.last_day`,
 * `context.time.hour`, `context.time.epoch_ms`) — are in most policies only compared with a
 * constant: `getTag("amount") > 10000`, `like "secret-*"`, `context.time.hour < 9`. Cedar then
 * observes such a value only through the outcomes of those comparisons, so two calls whose values
 * give the same outcomes (and are both present or both absent) get the same decision, the same
 * deciding policies and the same errors. A value's class is that vector of outcomes; the memo key
 * holds the class instead of the value, and Cedar runs once per class instead of once per value.
 *
 * A source is coarsened only when EVERY use of it in the policies is a comparison with a literal
 * (`<`, `<=`, `>`, `>=`, `==`, `!=` with a Long or String literal on either side, or `like`);
 * any other use (arithmetic, `.contains(…)`, an extension call, `if`, a comparison with another
 * expression, a tag key computed at run time) leaves the value itself in the key. Presence tests
 * (`hasTag`, `has`) need nothing: absence is a class of its own. Policies are validated against the
 * schema in strict mode, so a source has one type; a comparison with a literal of another type gets
 * a fixed mark, which only makes the classes finer (never coarser) than Cedar's. The outcomes are
 * computed here, but the decision never is: it is always Cedar's, on the first call of a class
 * (test/modules/policies/policies.trim.test.ts compares the engine with plain Cedar on generated
 * policies and calls).
 */
import type { CedarValueJson, EntityJson, PolicyJson } from '@cedar-policy/cedar-wasm/nodejs';
import type { Reads } from './reads.js';

/** A `like` pattern as Cedar's JSON form gives it: literal characters and wildcards. */
type PatternElem = { Literal: string } | 'Wildcard';

/** One comparison of a source with a constant. */
type Use = { op: '<' | '<=' | '>' | '>=' | '==' | '!='; value: number | string } | { op: 'like'; segments: string[] };

/** How the memo key sees the sources of a set of policies. */
export interface Coarsening {
  /** Sources (`tag:<key>`, `ctx:<record>.<field>`) used only in comparisons with constants, with those comparisons. */
  uses: Map<string, Use[]>;
  /** Sources used in any other way: their values stay in the key. */
  concrete: Set<string>;
  /** Some tag is read by a key computed at run time: no tag is coarsened. */
  computedTag: boolean;
}

const COMPARISONS = new Set(['<', '<=', '>', '>=', '==', '!=']);
const FLIPPED: Record<string, '<' | '<=' | '>' | '>=' | '==' | '!='> = {
  '<': '>',
  '<=': '>=',
  '>': '<',
  '>=': '<=',
  '==': '==',
  '!=': '!=',
};

type Node = unknown;

function field(n: Node, key: string): Record<string, unknown> | undefined {
  const v = typeof n === 'object' && n !== null ? (n as Record<string, unknown>)[key] : undefined;
  return typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : undefined;
}

/** The source `n` reads (`tag:k` for `….getTag("k")`, `ctx:r.f` for `context.r.f`), or null. */
function sourceOf(n: Node): string | null {
  const get = field(n, 'getTag');
  if (get) {
    const key = field(get, 'right') ? (get.right as { Value?: unknown }).Value : undefined;
    return typeof key === 'string' ? `tag:${key}` : null;
  }
  const dot = field(n, '.');
  const inner = dot ? field(dot.left, '.') : undefined;
  if (dot && inner && (inner.left as { Var?: unknown })?.Var === 'context' && typeof dot.attr === 'string')
    return `ctx:${inner.attr}.${dot.attr}`;
  return null;
}

/** The constant `n` is, when it is a Long or String literal. */
function literalOf(n: Node): number | string | undefined {
  const v = (n as { Value?: unknown } | null)?.Value;
  return typeof v === 'number' || typeof v === 'string' ? v : undefined;
}

/** The parts of a source expression other than the access itself (a getTag's entity expression). */
function sourceParts(n: Node): Node[] {
  const get = field(n, 'getTag');
  return get ? [get.left, get.right] : [];
}

function record(c: Coarsening, source: string, use: Use): void {
  const list = c.uses.get(source);
  if (list) list.push(use);
  else c.uses.set(source, [use]);
}

function walk(n: Node, c: Coarsening): void {
  if (Array.isArray(n)) {
    for (const x of n) walk(x, c);
    return;
  }
  if (typeof n !== 'object' || n === null) return;
  const o = n as Record<string, unknown>;
  const keys = Object.keys(o);
  if (keys.length === 1 && COMPARISONS.has(keys[0])) {
    const op = keys[0] as '<' | '<=' | '>' | '>=' | '==' | '!=';
    const { left, right } = o[op] as { left: Node; right: Node };
    const [sl, sr, ll, lr] = [sourceOf(left), sourceOf(right), literalOf(left), literalOf(right)];
    // Strings are only compared for (in)equality: an ordering on them does not validate.
    const ok = (v: number | string | undefined) =>
      v !== undefined && (typeof v === 'number' || op === '==' || op === '!=');
    if (sl && ok(lr)) {
      record(c, sl, { op, value: lr as number | string });
      for (const p of sourceParts(left)) walk(p, c);
      return;
    }
    if (sr && ok(ll)) {
      record(c, sr, { op: FLIPPED[op], value: ll as number | string });
      for (const p of sourceParts(right)) walk(p, c);
      return;
    }
  }
  const like = keys.length === 1 ? field(o, 'like') : undefined;
  if (like && Array.isArray(like.pattern)) {
    const s = sourceOf(like.left);
    if (s) {
      record(c, s, { op: 'like', segments: segmentsOf(like.pattern as PatternElem[]) });
      for (const p of sourceParts(like.left)) walk(p, c);
      return;
    }
  }
  const s = sourceOf(o);
  if (s) c.concrete.add(s);
  else if (field(o, 'getTag')) c.computedTag = true;
  for (const v of Object.values(o)) walk(v, c);
}

/** A pattern as its literal runs between wildcards: `a*b*` → ["a", "b", ""]. */
function segmentsOf(pattern: PatternElem[]): string[] {
  const out = [''];
  for (const e of pattern) {
    if (e === 'Wildcard') out.push('');
    else out[out.length - 1] += e.Literal;
  }
  return out;
}

/** Cedar's `like`: `segments` joined by wildcards (any run of characters) match all of `s`. */
export function likeMatches(s: string, segments: string[]): boolean {
  if (segments.length === 1) return s === segments[0];
  const first = segments[0];
  const last = segments[segments.length - 1];
  if (!s.startsWith(first) || s.length < first.length + last.length || !s.endsWith(last)) return false;
  let at = first.length;
  const end = s.length - last.length;
  for (let i = 1; i < segments.length - 1; i++) {
    const found = s.indexOf(segments[i], at);
    if (found < 0 || found + segments[i].length > end) return false;
    at = found + segments[i].length;
  }
  return true;
}

/** What `policy`'s conditions do with the changing sources. */
export function coarseningOf(policy: PolicyJson): Coarsening {
  const c: Coarsening = { uses: new Map(), concrete: new Set(), computedTag: false };
  walk(policy.conditions, c);
  return c;
}

/** The union of `list` (the sources of a group or subset of policies). */
export function unionCoarsening(list: Coarsening[]): Coarsening {
  const c: Coarsening = { uses: new Map(), concrete: new Set(), computedTag: false };
  for (const x of list) {
    c.computedTag ||= x.computedTag;
    for (const [s, uses] of x.uses) for (const u of uses) record(c, s, u);
    for (const s of x.concrete) c.concrete.add(s);
  }
  return c;
}

/** Is `source` coarsened (compared with constants only)? */
export function isCoarse(c: Coarsening, source: string): boolean {
  return c.uses.has(source) && !c.concrete.has(source);
}

function outcome(u: Use, v: CedarValueJson): string {
  if (u.op === 'like') return typeof v === 'string' ? (likeMatches(v, u.segments) ? '1' : '0') : 'x';
  if (typeof v !== typeof u.value) return 'x';
  const a = v as number | string;
  const b = u.value;
  const r =
    u.op === '<'
      ? a < b
      : u.op === '<='
        ? a <= b
        : u.op === '>'
          ? a > b
          : u.op === '>='
            ? a >= b
            : u.op === '=='
              ? a === b
              : a !== b;
  return r ? '1' : '0';
}

/** The class of `v` for these uses: one outcome per comparison (`1`, `0`, `x` for another type). */
function classOf(uses: Use[], v: CedarValueJson): string {
  let out = '\u0000';
  for (const u of uses) out += outcome(u, v);
  return out;
}

/**
 * `context` and `entities` (already trimmed to `reads`, `reads.ts`) with every coarsened source's
 * value replaced by its class: the part of a memo key that depends on the call. Values of sources
 * that are not coarsened are kept as they are, and so is a context record used as a whole value
 * (`context.calls == {…}`, `reads.wholeContextAttrs`), the whole context when it is used as a value,
 * and every tag when one is read by a computed key.
 */
export function coarsen(
  c: Coarsening,
  reads: Reads,
  context: Record<string, CedarValueJson>,
  entities: EntityJson[],
): { context: Record<string, CedarValueJson>; entities: EntityJson[] } {
  if (c.uses.size === 0 || reads.wholeContext) return { context, entities };
  let outContext = context;
  for (const [k, v] of Object.entries(context)) {
    if (reads.wholeContextAttrs.has(k)) continue;
    if (typeof v !== 'object' || v === null || Array.isArray(v) || '__entity' in v || '__extn' in v) continue;
    let rec: Record<string, CedarValueJson> | null = null;
    for (const [f, x] of Object.entries(v as Record<string, CedarValueJson>)) {
      const uses = isCoarse(c, `ctx:${k}.${f}`) ? c.uses.get(`ctx:${k}.${f}`) : undefined;
      if (!uses) continue;
      rec ??= { ...(v as Record<string, CedarValueJson>) };
      rec[f] = classOf(uses, x);
    }
    if (rec) {
      if (outContext === context) outContext = { ...context };
      outContext[k] = rec;
    }
  }
  if (c.computedTag || reads.tagKeys === null) return { context: outContext, entities };
  const outEntities = entities.map((e) => {
    if (!e.tags) return e;
    let tags: Record<string, CedarValueJson> | null = null;
    for (const [t, x] of Object.entries(e.tags)) {
      const uses = isCoarse(c, `tag:${t}`) ? c.uses.get(`tag:${t}`) : undefined;
      if (!uses) continue;
      tags ??= { ...e.tags };
      tags[t] = classOf(uses, x);
    }
    return tags ? { ...e, tags } : e;
  });
  return { context: outContext, entities: outEntities };
}
