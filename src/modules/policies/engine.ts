/**
 * Compiled policy sets and their evaluation (the hot path of `authorize.ts`).
 *
 * Per account, the enabled policies that bind it (its own + the global ones) are loaded once into a
 * {@link SharedCache} (`policies.sets`, evicted on every instance on change; an account with no
 * policy at all caches `null`, so its calls skip everything). For a call, only the policies whose
 * scope (`principal ==/in/is`, `resource ==/in/is`) can match this principal and tool are handed
 * to Cedar: that subset is pre-parsed once (`preparsePolicySet`) into a slot of the engine and
 * evaluated with `statefulIsAuthorized`, so a call pays for the policies that concern it, not for
 * all of them. The request handed over is trimmed to what those policies can read (`reads.ts`:
 * crossing into WebAssembly costs per value), and the decision is memoised by that trimmed request
 * (ADR 0995; numbers: docs/benchmarks.md#policies). The engine is process-wide; slots are recycled
 * (the oldest is overwritten) beyond {@link MAX_SLOTS}.
 */
import { and, eq, or } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { policies } from '../../db/schema/index.js';
import { SharedCache } from '../../lib/shared-cache.js';
import { type CallFacts, cedar, parsePolicy, parseStoredPolicy, requestOf } from './cedar.js';
import { type Coarsening, coarsen, coarseningOf, isCoarse, unionCoarsening } from './classes.js';
import { type Reads, readsContext, readsKey, readsOf, trimRequest, unionReads } from './reads.js';

/** One enabled policy, compiled. */
export interface CompiledPolicy {
  /** Process-unique number of this compilation (names the pre-parsed subsets it is part of). */
  uid: number;
  id: string;
  source: string;
  /** What its conditions can observe of a request (reads.ts), and its canonical text. */
  reads: Reads;
  readsKey: string;
  /** Which changing values it only compares with constants (their classes key the memo: classes.ts). */
  coarse: Coarsening;
  /** Does it read `context.calls` (the executions are then counted)? */
  readsCalls: boolean;
  approval: boolean;
  /** Can the policy's principal constraint match this principal uid (with its account)? */
  principalMay: (uid: string, accountUid: string, type: string) => boolean;
  /** Can its resource constraint match this tool uid (in its service)? */
  resourceMay: (toolUid: string, serviceUid: string) => boolean;
}

/** The policies that bind one account, compiled; subsets per (principal, tool) are pre-parsed on demand. */
export interface CompiledSet {
  policies: CompiledPolicy[];
  subsets: Map<string, Subset>;
}

interface Subset {
  policies: CompiledPolicy[];
  readsCalls: boolean;
  /** The compilations it holds (`uid`s): subsets with the same signature share one engine slot. */
  signature: string;
  /** What its policies read, and its number in memo keys (null: not memoised, it reads the instant). */
  reads: Reads;
  coarse: Coarsening;
  memo: number | null;
  /** Its policies grouped by what they read: each group's outcome is memoised by its own trimmed request. */
  groups: Group[];
}

/** Policies of a subset that read the same parts of a request. */
interface Group {
  policies: CompiledPolicy[];
  reads: Reads;
  coarse: Coarsening;
  /** Number of the group's compilations in memo keys; null: not memoised (it reads the instant). */
  memo: number | null;
}

/** What a group's policies did on one request: the forbids that matched, the errors. */
interface Outcome {
  forbids: string[];
  errors: Array<{ policy_id: string; message: string }>;
}

interface Slot {
  id: string;
  token: object;
}

/** The outcome of evaluating a call. */
export interface Evaluation {
  /** `allow` (nothing forbade), `deny`, or `approval` (only `@approval("required")` policies forbade). */
  decision: 'allow' | 'deny' | 'approval';
  /** The policies that decided: the forbids that matched (deny: those without `@approval`). */
  policyIds: string[];
  /** Policies that failed to evaluate (they do not apply: Cedar semantics). */
  errors: Array<{ policy_id: string; message: string }>;
  /** How many policies Cedar evaluated (0: none could apply, the call is allowed without the engine). */
  evaluated: number;
}

const BASE_ID = 'platform.base_permit';
const BASE_PERMIT = 'permit(principal, action, resource);';
/** Most pre-parsed subsets kept in the engine (process-wide); the oldest slot is overwritten. */
export const MAX_SLOTS = 4096;
/** Most groups (by what they read) a subset is split into on a memo miss. */
const MAX_GROUPS = 8;
/** Most subsets remembered per compiled set before its map is cleared. */
const MAX_SUBSETS = 1024;

const slotOwners = new Map<string, object>();
/** Pre-parsed subsets by signature (process-wide: they outlive a reload of an unchanged set). */
const slotsBySignature = new Map<string, Slot>();
let slotCounter = 0;
let compileCounter = 0;
/** Compilations by `id + source`, so a reload (TTL, another policy changed) re-uses them. */
const compiled = new Map<string, CompiledPolicy>();
const MAX_COMPILED = 50_000;

type Constraint = { op: string; entity?: unknown; entity_type?: string; in?: unknown; entities?: unknown };

function uidOf(e: unknown): string | null {
  const v = (e as { __entity?: { type: string; id: string } })?.__entity ?? (e as { type?: string; id?: string });
  return v && typeof v.type === 'string' && typeof v.id === 'string' ? `${v.type}::${v.id}` : null;
}

/** A predicate for a scope constraint: may `uid` (whose only ancestor is `parentUid`) satisfy it? */
function scopeMay(c: Constraint | undefined): (uid: string, parentUid: string, type: string) => boolean {
  if (!c || c.op === 'All') return () => true;
  if (c.op === '==') {
    const want = uidOf(c.entity);
    return want === null ? () => true : (uid) => uid === want;
  }
  if (c.op === 'in') {
    const want = uidOf(c.entity);
    return want === null ? () => true : (uid, parent) => uid === want || parent === want;
  }
  if (c.op === 'is') {
    const type = c.entity_type;
    const inner = c.in ? scopeMay({ op: 'in', entity: (c.in as { entity?: unknown }).entity ?? c.in }) : () => true;
    return (uid, parent, t) => t === type && inner(uid, parent, t);
  }
  return () => true;
}

/**
 * Compile one policy: `validate` (drafts) parses and validates against the schema; stored texts
 * (validated on write) are only parsed, and their compilation is re-used while the text is unchanged.
 * @throws AppError validation_failed (a draft), Error (a stored text that no longer parses)
 */
export function compilePolicy(id: string, source: string, validate = true): CompiledPolicy {
  const key = `${id}\n${source}`;
  const known = validate ? undefined : compiled.get(key);
  if (known) return known;
  const parsed = validate ? parsePolicy(source) : parseStoredPolicy(source);
  const reads = readsOf(parsed.json);
  const principal = scopeMay(parsed.json.principal as Constraint);
  const resource = scopeMay(parsed.json.resource as Constraint);
  const policy: CompiledPolicy = {
    uid: ++compileCounter,
    id,
    source,
    reads,
    readsKey: readsKey(reads),
    coarse: coarseningOf(parsed.json),
    readsCalls: readsContext(reads, 'calls'),
    approval: parsed.approval,
    principalMay: (uid, accountUid, type) => principal(uid, accountUid, type),
    resourceMay: (toolUid, serviceUid) => resource(toolUid, serviceUid, 'Platform::Tool'),
  };
  if (!validate) {
    if (compiled.size >= MAX_COMPILED) compiled.clear();
    compiled.set(key, policy);
  }
  return policy;
}

/** The subset of `set` that may apply to this principal and tool, pre-parsed on first use. */
export function subsetFor(
  set: CompiledSet,
  principalUid: string,
  principalType: string,
  accountUid: string,
  toolUid: string,
  serviceUid: string,
): Subset {
  const key = `${principalUid}\n${toolUid}`;
  let subset = set.subsets.get(key);
  if (subset) return subset;
  const chosen = set.policies.filter(
    (p) => p.principalMay(principalUid, accountUid, principalType) && p.resourceMay(toolUid, serviceUid),
  );
  const byReads = new Map<string, CompiledPolicy[]>();
  for (const p of chosen) byReads.set(p.readsKey, [...(byReads.get(p.readsKey) ?? []), p]);
  const reads = unionReads(chosen.map((p) => p.reads));
  const coarse = unionCoarsening(chosen.map((p) => p.coarse));
  const signature = chosen.map((p) => p.uid).join(',');
  // Each group costs a trim and a key per miss: beyond MAX_GROUPS, the subset is one group.
  const groups: Group[] =
    byReads.size > MAX_GROUPS
      ? [{ policies: chosen, reads, coarse, memo: null }]
      : [...byReads.values()].map((policies) => {
          const r = policies[0].reads;
          const c = unionCoarsening(policies.map((p) => p.coarse));
          const n = readsEpoch(r, c) ? null : memoNumber(policies.map((p) => p.uid).join(','));
          return { policies, reads: r, coarse: c, memo: n };
        });
  subset = {
    policies: chosen,
    readsCalls: chosen.some((p) => p.readsCalls),
    signature,
    reads,
    coarse,
    memo: readsEpoch(reads, coarse) ? null : memoNumber(signature),
    groups,
  };
  if (set.subsets.size >= MAX_SUBSETS) set.subsets.clear();
  set.subsets.set(key, subset);
  return subset;
}

function prepared(signature: string, policies: CompiledPolicy[]): string {
  const slot = slotsBySignature.get(signature);
  if (slot && slotOwners.get(slot.id) === slot.token) {
    // Most recently used last: re-insert.
    slotOwners.delete(slot.id);
    slotOwners.set(slot.id, slot.token);
    return slot.id;
  }
  let id: string;
  if (slotOwners.size >= MAX_SLOTS) {
    id = slotOwners.keys().next().value as string;
    slotOwners.delete(id);
  } else id = `ps${++slotCounter}`;
  const staticPolicies: Record<string, string> = { [BASE_ID]: BASE_PERMIT };
  for (const p of policies) staticPolicies[p.id] = p.source;
  const done = cedar.preparsePolicySet(id, { staticPolicies });
  if (done.type === 'failure')
    throw new Error(`policy set did not pre-parse: ${done.errors.map((e) => e.message).join('; ')}`);
  const token = {};
  slotOwners.set(id, token);
  if (slotsBySignature.size >= MAX_SLOTS * 2) slotsBySignature.clear();
  slotsBySignature.set(signature, { id, token });
  return id;
}

/** Most memoised group outcomes (process-wide; the oldest is dropped beyond it). */
export const MAX_MEMO = 20_000;
const memo = new Map<string, Outcome>();
/** Whole decisions by the subset's trimmed request (the first lookup; frozen, shared). */
const decisions = new Map<string, Evaluation>();
/** Signatures → numbers naming them in memo keys (never re-used: a cleared map hands out new ones). */
const memoNumbers = new Map<string, number>();
let memoCounter = 0;

function memoNumber(signature: string): number {
  let n = memoNumbers.get(signature);
  if (n === undefined) {
    if (memoNumbers.size >= MAX_SLOTS * 4) memoNumbers.clear();
    n = ++memoCounter;
    memoNumbers.set(signature, n);
  }
  return n;
}

/**
 * Does a group with these reads see the instant (every call a different request: no memo)? Not
 * when it only compares `context.time.epoch_ms` with constants (its class is in the key).
 */
function readsEpoch(r: Reads, c: Coarsening): boolean {
  return (
    r.wholeContext || r.wholeContextAttrs.has('time') || (r.attrs.has('epoch_ms') && !isCoarse(c, 'ctx:time.epoch_ms'))
  );
}

/**
 * The memo key of a request for policies that read `reads` and coarsen `coarse`, numbered `n`:
 * the request trimmed to what they read, with the changing values they only compare with
 * constants replaced by their classes (classes.ts).
 */
function memoKey(n: number, reads: Reads, coarse: Coarsening, req: ReturnType<typeof requestOf>): string {
  const t = trimRequest(reads, req);
  const k = coarsen(coarse, reads, t.context, t.entities);
  return `${n}\n${JSON.stringify([req.principal, req.resource, k.context, k.entities])}`;
}

/** Engine statistics since start (bench and tests): Cedar calls, and calls answered from the memo alone. */
export const engineStats = { evaluations: 0, memoHits: 0 };

function byPolicyId(a: { policy_id: string; message: string }, b: { policy_id: string; message: string }): number {
  return a.policy_id < b.policy_id ? -1 : a.policy_id > b.policy_id ? 1 : a.message < b.message ? -1 : 1;
}

/** One Cedar call for the `missing` groups, on the request trimmed to what they read; one outcome each. */
function evaluateGroups(missing: Group[], req: ReturnType<typeof requestOf>): Outcome[] {
  engineStats.evaluations++;
  const policies = missing.length === 1 ? missing[0].policies : missing.flatMap((g) => g.policies);
  const reads = missing.length === 1 ? missing[0].reads : unionReads(missing.map((g) => g.reads));
  const { context, entities } = trimRequest(reads, req);
  const answer = cedar.statefulIsAuthorized({
    principal: req.principal,
    action: { type: 'Platform::Action', id: 'execute' },
    resource: req.resource,
    context,
    entities,
    preparsedPolicySetId: prepared(policies.map((p) => p.uid).join(','), policies),
  });
  if (answer.type === 'failure')
    throw new Error(`policy evaluation failed: ${answer.errors.map((e) => e.message).join('; ')}`);
  const matched = new Set(answer.response.diagnostics.reason);
  const errors = answer.response.diagnostics.errors.map((e) => ({ policy_id: e.policyId, message: e.error.message }));
  return missing.map((g) => {
    const ids = new Set(g.policies.map((p) => p.id));
    return {
      forbids: g.policies.filter((p) => matched.has(p.id)).map((p) => p.id),
      errors: errors.filter((e) => ids.has(e.policy_id)),
    };
  });
}

/**
 * Evaluate `facts` against `subset`. Policies are independent (forbid-only, one base permit), so
 * each group of policies reading the same parts of the request is answered from the memo by its
 * own trimmed request (reads.ts) when it can; the groups left are evaluated in one Cedar call on
 * the request trimmed to what they read, and memoised unless they read the instant. The whole
 * decision is memoised too, by the subset's trimmed request (looked up first). Cedar's answer is a
 * function of the policies and the request only. `policyIds` and `errors` are sorted by id; the
 * result may be shared (frozen): callers must not mutate it.
 */
export function evaluateSubset(subset: Subset, facts: CallFacts): Evaluation {
  if (subset.policies.length === 0) return { decision: 'allow', policyIds: [], errors: [], evaluated: 0 };
  const req = requestOf(facts);
  let whole: string | null = null;
  if (subset.memo !== null) {
    whole = memoKey(subset.memo, subset.reads, subset.coarse, req);
    const hit = decisions.get(whole);
    if (hit) {
      engineStats.memoHits++;
      return hit;
    }
  }
  const outcomes: Outcome[] = [];
  const missing: Group[] = [];
  const keys: Array<string | null> = [];
  for (const g of subset.groups) {
    let key: string | null = null;
    if (g.memo !== null) {
      key = memoKey(g.memo, g.reads, g.coarse, req);
      const hit = memo.get(key);
      if (hit) {
        outcomes.push(hit);
        continue;
      }
    }
    missing.push(g);
    keys.push(key);
  }
  if (missing.length === 0) engineStats.memoHits++;
  else
    evaluateGroups(missing, req).forEach((o, i) => {
      outcomes.push(o);
      remember(memo, keys[i], o);
    });
  const forbids = outcomes.flatMap((o) => o.forbids).sort();
  const errors = outcomes.flatMap((o) => o.errors).sort(byPolicyId);
  const evaluated = subset.policies.length;
  let ev: Evaluation;
  if (forbids.length === 0) ev = { decision: 'allow', policyIds: [], errors, evaluated };
  else {
    const approval = new Set(subset.policies.filter((p) => p.approval).map((p) => p.id));
    const hard = forbids.filter((id) => !approval.has(id));
    ev = {
      decision: hard.length > 0 ? 'deny' : 'approval',
      policyIds: hard.length > 0 ? hard : forbids,
      errors,
      evaluated,
    };
  }
  Object.freeze(ev.policyIds);
  Object.freeze(ev.errors);
  remember(decisions, whole, Object.freeze(ev));
  return ev;
}

function remember<T>(map: Map<string, T>, key: string | null, value: T): void {
  if (key === null) return;
  if (map.size >= MAX_MEMO) map.delete(map.keys().next().value as string);
  map.set(key, value);
}

function setsCache(ctx: AppContext): SharedCache<CompiledSet | null> {
  return SharedCache.of(ctx, { name: 'policies.sets', max: 10_000, ttlMs: ctx.config.cacheTtlMs });
}

/** Load and compile the enabled policies that bind `accountId` (its own + global); null when there are none. */
async function loadSet(ctx: AppContext, accountId: string): Promise<CompiledSet | null> {
  const rows = await ctx.db
    .select({ id: policies.id, source: policies.source })
    .from(policies)
    .where(
      and(
        eq(policies.enabled, true),
        or(eq(policies.scope, 'global'), and(eq(policies.scope, 'account'), eq(policies.ownerId, accountId))),
      ),
    )
    .orderBy(policies.id);
  if (rows.length === 0) return null;
  const list: CompiledPolicy[] = [];
  for (const r of rows) {
    try {
      list.push(compilePolicy(r.id, r.source, false));
    } catch (err) {
      // Stored texts were validated on write; a text an engine upgrade no longer accepts is skipped, loudly.
      ctx.log.error({ policy: r.id, err: (err as Error).message }, 'stored policy no longer compiles; skipped');
    }
  }
  return { policies: list, subsets: new Map() };
}

/**
 * The compiled set of `accountId`: synchronous when cached (the common case), else loaded.
 * Null → no enabled policy binds the account: nothing to evaluate.
 */
export function policySetOf(ctx: AppContext, accountId: string): CompiledSet | null | Promise<CompiledSet | null> {
  const cache = setsCache(ctx);
  const hit = cache.peek(accountId);
  return hit !== undefined ? hit : cache.get(accountId, (k) => loadSet(ctx, k));
}

/** Drop the cached set of `accountId` (its policies changed), or of every account (`null`: a global policy changed). */
export async function invalidatePolicySets(ctx: AppContext, accountId: string | null): Promise<void> {
  await setsCache(ctx).invalidate(accountId);
}
