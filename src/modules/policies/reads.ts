/**
 * What a set of policies can observe of a request, read off their JSON form (`policyToJson`), and
 * the request trimmed to it: the cheap path of `engine.ts` (ADR 0995).
 *
 * Why: crossing into WebAssembly costs per value handed over (an entity's attributes, the context's
 * records), more than evaluating ten policies (docs/benchmarks.md#policies). A Cedar expression can
 * observe an attribute only by name (`e.attr`, `e has attr`, `has a.b`), a tag only through
 * `hasTag`/`getTag`, an entity's ancestors through `in`, and a record as a whole only by using it as
 * a value (`context.time == {…}`, `if … then context …`). So a value no policy names cannot change a
 * decision, nor an error's message, and the trimmed request evaluates exactly like the full one
 * (test/modules/policies/policies.trim.test.ts compares both on generated policies and requests).
 * Because the trimmed request is everything Cedar sees, it also serves as the memo key of a decision.
 */
import type { CedarValueJson, EntityJson, PolicyJson } from '@cedar-policy/cedar-wasm/nodejs';

/** What one policy (or a union of policies) can read. */
export interface Reads {
  /** Attribute names accessed anywhere (`.`/`has`), on entities and records alike. */
  attrs: Set<string>;
  /** Top-level context attributes accessed (`context.x`, `context has x`). */
  contextAttrs: Set<string>;
  /** Context attributes used as a whole value (not only through `.y`/`has y`): kept untrimmed. */
  wholeContextAttrs: Set<string>;
  /** The context itself is used as a value: kept untrimmed. */
  wholeContext: boolean;
  /** Tag keys read by `hasTag`/`getTag` with a literal key; null: some key is computed (keep all tags). */
  tagKeys: Set<string> | null;
  /** `principal`/`resource` are observed beyond their uid (in conditions, or an `in` scope): their entities are kept. */
  vars: Set<string>;
  /** Entity types named by literals in conditions (`Platform::Numbers::""`): their entities are kept. */
  literalTypes: Set<string>;
}

type Node = unknown;

function isVar(n: Node, name: string): boolean {
  return typeof n === 'object' && n !== null && (n as { Var?: unknown }).Var === name;
}

function walk(n: Node, r: Reads, leftOfAccess: boolean): void {
  if (Array.isArray(n)) {
    for (const x of n) walk(x, r, false);
    return;
  }
  if (typeof n !== 'object' || n === null) return;
  const o = n as Record<string, unknown>;
  if (o.Var === 'context' && !leftOfAccess) r.wholeContext = true;
  if (typeof o.Var === 'string') r.vars.add(o.Var);
  const literal = (o.Value as { __entity?: { type?: unknown } } | null)?.__entity;
  if (literal && typeof literal.type === 'string') r.literalTypes.add(literal.type);
  const dot = o['.'] as { left: Node; attr: string } | undefined;
  if (dot && typeof dot === 'object' && typeof dot.attr === 'string') {
    r.attrs.add(dot.attr);
    if (isVar(dot.left, 'context')) {
      r.contextAttrs.add(dot.attr);
      if (!leftOfAccess) r.wholeContextAttrs.add(dot.attr);
    }
    walk(dot.left, r, true);
    return;
  }
  const has = o.has as { left: Node; attr: string | string[] } | undefined;
  if (has && typeof has === 'object' && 'left' in has) {
    const path = Array.isArray(has.attr) ? has.attr : [has.attr];
    for (const a of path) r.attrs.add(a);
    if (isVar(has.left, 'context') && path.length > 0) r.contextAttrs.add(path[0]);
    walk(has.left, r, true);
    return;
  }
  for (const op of ['hasTag', 'getTag'] as const) {
    const call = o[op] as { left: Node; right: Node } | undefined;
    if (call && typeof call === 'object' && 'right' in call) {
      const key = (call.right as { Value?: unknown } | null)?.Value;
      if (typeof key === 'string') r.tagKeys?.add(key);
      else {
        r.tagKeys = null;
        walk(call.right, r, false);
      }
      walk(call.left, r, false);
      return;
    }
  }
  for (const v of Object.values(o)) walk(v, r, false);
}

/** Reads of nothing: the start of {@link readsOf} and {@link unionReads}. */
function noReads(): Reads {
  return {
    attrs: new Set(),
    contextAttrs: new Set(),
    wholeContextAttrs: new Set(),
    wholeContext: false,
    tagKeys: new Set(),
    vars: new Set(),
    literalTypes: new Set(),
  };
}

/** What `policy` can observe: its conditions, and the entities its scope needs (`in`: their ancestors). */
export function readsOf(policy: PolicyJson): Reads {
  const r = noReads();
  walk(policy.conditions, r, false);
  for (const v of ['principal', 'resource'] as const) {
    const op = (policy[v] as { op?: string } | undefined)?.op;
    if (op !== undefined && op !== 'All' && op !== '==') r.vars.add(v);
  }
  return r;
}

/** The union of what `list` can observe. */
export function unionReads(list: Reads[]): Reads {
  const r = noReads();
  for (const x of list) {
    for (const a of x.attrs) r.attrs.add(a);
    for (const a of x.contextAttrs) r.contextAttrs.add(a);
    for (const a of x.wholeContextAttrs) r.wholeContextAttrs.add(a);
    r.wholeContext ||= x.wholeContext;
    if (x.tagKeys === null) r.tagKeys = null;
    else if (r.tagKeys) for (const k of x.tagKeys) r.tagKeys.add(k);
    for (const v of x.vars) r.vars.add(v);
    for (const t of x.literalTypes) r.literalTypes.add(t);
  }
  return r;
}

/** Can a policy with these reads observe `context.<name>`? */
export function readsContext(r: Reads, name: string): boolean {
  return r.wholeContext || r.contextAttrs.has(name);
}

function pick<T>(o: Record<string, T>, keep: (k: string) => boolean): Record<string, T> {
  const out: Record<string, T> = {};
  for (const k of Object.keys(o)) if (keep(k)) out[k] = o[k];
  return out;
}

function isRecord(v: CedarValueJson): v is Record<string, CedarValueJson> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !('__entity' in v) && !('__extn' in v);
}

type Uid = { type: string; id: string };

/** Add to `out` the uids of the entities `v` refers to (in records and sets too). */
function refsOf(v: CedarValueJson, out: Set<string>): void {
  if (typeof v !== 'object' || v === null) return;
  if (Array.isArray(v)) {
    for (const x of v) refsOf(x, out);
    return;
  }
  const e = (v as { __entity?: Uid }).__entity;
  if (e) {
    out.add(`${e.type}::${e.id}`);
    return;
  }
  if ('__extn' in v) return;
  for (const x of Object.values(v)) refsOf(x as CedarValueJson, out);
}

/**
 * The entities of `entities` the policies can reach: the principal and the resource when they are
 * observed (`r.vars`), the entities the (trimmed) context refers to, those of a type named by a
 * literal, and, from each of these, the entities their kept attributes refer to and their parents
 * (an `in` walks the ancestors). An entity nothing reaches cannot change a decision.
 */
function reachable(
  r: Reads,
  req: { principal: Uid; resource: Uid },
  context: Record<string, CedarValueJson>,
  entities: EntityJson[],
): EntityJson[] {
  const byUid = new Map(entities.map((e) => [`${(e.uid as Uid).type}::${(e.uid as Uid).id}`, e]));
  const todo = new Set<string>();
  if (r.vars.has('principal')) todo.add(`${req.principal.type}::${req.principal.id}`);
  if (r.vars.has('resource')) todo.add(`${req.resource.type}::${req.resource.id}`);
  for (const v of Object.values(context)) refsOf(v, todo);
  for (const [uid, e] of byUid) if (r.literalTypes.has((e.uid as Uid).type)) todo.add(uid);
  const kept = new Set<string>();
  for (const uid of todo) {
    // A Set visits what is added while iterating: this is the closure.
    const e = byUid.get(uid);
    if (!e || kept.has(uid)) continue;
    kept.add(uid);
    for (const v of Object.values(e.attrs)) refsOf(v, todo);
    for (const p of e.parents as Uid[]) todo.add(`${p.type}::${p.id}`);
  }
  return entities.filter((e) => kept.has(`${(e.uid as Uid).type}::${(e.uid as Uid).id}`));
}

/**
 * The request trimmed to what `r` can observe: context attributes no policy names are dropped
 * (records keep only the named fields unless used whole); entities nothing reaches are dropped,
 * the others keep their uid and parents but only the named attributes and the tags read by
 * literal key.
 */
export function trimRequest(
  r: Reads,
  req: { principal: Uid; resource: Uid; context: Record<string, CedarValueJson>; entities: EntityJson[] },
): { context: Record<string, CedarValueJson>; entities: EntityJson[] } {
  const { context } = req;
  const trimmedContext = r.wholeContext ? context : pick(context, (k) => r.contextAttrs.has(k));
  if (!r.wholeContext)
    for (const [k, v] of Object.entries(trimmedContext))
      if (isRecord(v) && !r.wholeContextAttrs.has(k)) trimmedContext[k] = pick(v, (a) => r.attrs.has(a));
  const keys = r.tagKeys;
  const trimmedEntities = req.entities.map((e) => {
    const out: EntityJson = { uid: e.uid, attrs: pick(e.attrs, (a) => r.attrs.has(a)), parents: e.parents };
    if (e.tags) out.tags = keys ? pick(e.tags, (t) => keys.has(t)) : e.tags;
    return out;
  });
  return { context: trimmedContext, entities: reachable(r, req, trimmedContext, trimmedEntities) };
}

/** A canonical text of `r`: policies with equal keys read the same parts of a request. */
export function readsKey(r: Reads): string {
  const sorted = (s: Set<string>) => [...s].sort();
  return JSON.stringify([
    sorted(r.attrs),
    sorted(r.contextAttrs),
    sorted(r.wholeContextAttrs),
    r.wholeContext,
    r.tagKeys ? sorted(r.tagKeys) : null,
    sorted(r.vars),
    sorted(r.literalTypes),
  ]);
}
