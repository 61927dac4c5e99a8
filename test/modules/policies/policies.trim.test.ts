/**
 * The cheap path of the policy engine decides exactly like plain Cedar: for generated policy sets
 * (scoped and unscoped, conditions on arguments, numbers, tags, roles, scopes, time, calls, whole
 * records, the whole context, computed tag keys, entity literals, expressions that error) and
 * generated calls, `subsetFor` + `evaluateSubset` (scope pruning, the request trimmed to what the
 * policies read, the decision memo) give the same decision, deciding policies and errors as one
 * `statefulIsAuthorized` of the whole set on the untrimmed request (ADR 0995).
 */
import { describe, expect, it } from 'vitest';
import type { Role } from '../../../src/config.js';
import type { AgentPrincipal, Principal, Scope, UserPrincipal } from '../../../src/http/auth.js';
import { type CallFacts, cedar, principalUid, requestOf, toolUid } from '../../../src/modules/policies/cedar.js';
import {
  type CompiledSet,
  compilePolicy,
  type Evaluation,
  engineStats,
  evaluateSubset,
  subsetFor,
} from '../../../src/modules/policies/engine.js';
import { mulberry32 } from '../../../bench/lib/prng.js';
import { unionCoarsening } from '../../../src/modules/policies/classes.js';
import { unionReads } from '../../../src/modules/policies/reads.js';

/** Deterministic PRNG, so a failure names a reproducible seed. */
const rng = mulberry32;
const pickOf = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];

const ATOMS = [
  'context.arguments.hasTag("a") && context.arguments.getTag("a") like "x*"',
  'context.arguments.getTag("b") == "1"',
  'context.numbers.hasTag("n") && context.numbers.getTag("n") > 5',
  'context.numbers.getTag("m") < 3',
  'context.argument_names.contains("a")',
  'resource.tags.contains("write")',
  'resource.tags.contains("read_only")',
  'principal.roles.contains("admin")',
  'principal has api_key && principal.api_key == "key_1"',
  'principal.api_key == "key_2"',
  'principal has api_key',
  'context has calls.last_day',
  'principal.agent_id like "agt_*"',
  'principal.scopes.contains("memory:write")',
  'principal.via == "token"',
  'principal.account == Platform::Account::"usr_2"',
  'principal in Platform::Account::"usr_1"',
  'resource in Platform::Service::"svc_a"',
  'resource.service == "svc_b" && resource.method == "POST"',
  'resource.tool like "*_1"',
  'context.time.hour < 12',
  'context.time.weekday == 3 || context.time.minute > 50',
  'context.time == {epoch_ms: 0, hour: 0, minute: 0, weekday: 4}',
  'context.calls.last_hour > 2',
  'context has calls.last_day && context.calls.last_day > 10',
  '(if context.time.minute > 30 then context else context).calls.last_day > 1',
  'context.arguments.hasTag(resource.service)',
  'Platform::Arguments::"".hasTag("c")',
  'Platform::Numbers::"".hasTag("n") && Platform::Numbers::"".getTag("n") == 7',
  '[context.calls] == [{last_hour: 0, last_day: 0}]',
  'context.calls != {last_hour: context.calls.last_hour, last_day: 0}',
  'context.time != {epoch_ms: context.time.epoch_ms, hour: context.time.hour, minute: context.time.minute, weekday: 3}',
  'context.time.epoch_ms > 1796500000000',
  // Value classes (classes.ts): comparisons with constants, either side, and uses that are not.
  'context.numbers.hasTag("n") && 6 <= context.numbers.getTag("n")',
  'context.numbers.hasTag("m") && context.numbers.getTag("m") + 1 > 3',
  'context.numbers.hasTag("n") && [2, 9].contains(context.numbers.getTag("n"))',
  'context.arguments.hasTag("a") && context.arguments.getTag("a") like "*1"',
  'context.arguments.hasTag("a") && context.arguments.getTag("a") like "x*1*"',
  'context.arguments.hasTag("b") && context.arguments.getTag("b") != "y"',
  'context.numbers.hasTag("a") && context.numbers.getTag("a") == 7',
  'context.calls.last_day >= 10 && context.calls.last_hour != 3',
  'context.time.epoch_ms < 1796800000000',
  'context.time.hour >= 9 && context.time.hour < 17',
  'context.numbers.getTag("c") > -4',
];

const SCOPES = [
  'principal, action, resource',
  'principal is Platform::Agent, action, resource',
  'principal == Platform::User::"usr_1", action, resource',
  'principal in Platform::Account::"usr_2", action, resource',
  'principal, action, resource == Platform::Tool::"svc_a/tool_1"',
  'principal, action, resource in Platform::Service::"svc_b"',
  'principal is Platform::User, action, resource is Platform::Tool in Platform::Service::"svc_a"',
];

function policyText(r: () => number): string {
  const n = 1 + Math.floor(r() * 3);
  const parts = Array.from({ length: n }, () => {
    const atom = `(${pickOf(r, ATOMS)})`;
    return r() < 0.2 ? `!${atom}` : atom;
  });
  const body = parts.join(r() < 0.7 ? ' && ' : ' || ');
  const approval = r() < 0.3 ? '@approval("required")\n' : '';
  return `${approval}forbid(${pickOf(r, SCOPES)}) ${r() < 0.75 ? 'when' : 'unless'} { ${body} };`;
}

function principalOf(r: () => number): Principal {
  const account = pickOf(r, ['usr_1', 'usr_2']);
  const roles: Role[] = r() < 0.3 ? ['user', 'admin'] : ['user'];
  const scopes: Scope[] = r() < 0.5 ? ['tools:execute'] : ['tools:execute', 'memory:write'];
  if (r() < 0.5) {
    const agent: AgentPrincipal = {
      kind: 'agent',
      // An agent belongs to one account (subsets are cached per principal within an account's set).
      agentId: `agt_${account}_${pickOf(r, ['1', '2'])}`,
      ownerId: account,
      roles,
      clientId: '',
      scope: scopes,
      ...(r() < 0.5 ? { scopes: new Set(scopes) } : {}),
    };
    return agent;
  }
  const user: UserPrincipal = {
    kind: 'user',
    userId: account,
    subject: `test|${account}`,
    email: null,
    roles,
    via: r() < 0.5 ? 'token' : 'api_key',
    ...(r() < 0.5 ? { keyId: pickOf(r, ['key_1', 'key_2']) } : {}),
    ...(r() < 0.5 ? { scopes: new Set(scopes) } : {}),
  };
  return user;
}

function factsOf(r: () => number): CallFacts {
  const args: Record<string, unknown> = {};
  for (const k of ['a', 'b', 'c', 'n', 'm', 'svc_a', 'z'])
    if (r() < 0.4)
      args[k] = pickOf(r, ['x1', 'y', '1', 'x21', 'xy1', 'x', 7, 2, 9, 3, 5, 6, 10, -4, -5, true, { deep: 1 }, [1, 2]]);
  const service = pickOf(r, ['svc_a', 'svc_b']);
  return {
    principal: principalOf(r),
    service: { id: `id_${service}`, name: service, ownerId: pickOf(r, ['usr_1', 'usr_2']) },
    tool: {
      id: 'tl_x',
      name: pickOf(r, ['tool_1', 'tool_2']),
      method: pickOf(r, ['GET', 'POST']),
      tags: pickOf(r, [['read_only'], ['write'], ['write', 'open_world'], []]),
    },
    arguments: args,
    now: Date.UTC(2026, 11, 1) + Math.floor(r() * 7 * 86_400_000),
    calls: { last_hour: Math.floor(r() * 5), last_day: Math.floor(r() * 20) },
  };
}

let refCounter = 0;

/** Pre-parse the whole set for {@link reference}; returns its engine id. */
function prepareWhole(texts: Array<{ id: string; source: string }>): string {
  const id = `trim-ref-${++refCounter}`;
  const staticPolicies: Record<string, string> = { 'platform.base_permit': 'permit(principal, action, resource);' };
  for (const t of texts) staticPolicies[t.id] = t.source;
  const prepared = cedar.preparsePolicySet(id, { staticPolicies });
  if (prepared.type !== 'success') throw new Error(JSON.stringify(prepared.errors));
  return id;
}

/** Plain Cedar: every policy of the set (pre-parsed as `id`), the untrimmed request. */
function reference(id: string, texts: Array<{ id: string; source: string }>, facts: CallFacts): Evaluation {
  const req = requestOf(facts);
  const answer = cedar.statefulIsAuthorized({
    ...req,
    action: { type: 'Platform::Action', id: 'execute' },
    preparsedPolicySetId: id,
  });
  if (answer.type !== 'success') throw new Error(JSON.stringify(answer.errors));
  const { decision, diagnostics } = answer.response;
  const errors = diagnostics.errors
    .map((e) => ({ policy_id: e.policyId, message: e.error.message }))
    .sort((a, b) =>
      a.policy_id === b.policy_id ? (a.message < b.message ? -1 : 1) : a.policy_id < b.policy_id ? -1 : 1,
    );
  const approvalIds = new Set(texts.filter((t) => t.source.startsWith('@approval')).map((t) => t.id));
  const forbids = diagnostics.reason.filter((x) => x !== 'platform.base_permit').sort();
  const hard = forbids.filter((x) => !approvalIds.has(x));
  if (decision === 'allow') return { decision: 'allow', policyIds: [], errors, evaluated: texts.length };
  return {
    decision: hard.length ? 'deny' : 'approval',
    policyIds: hard.length ? hard : forbids,
    errors,
    evaluated: texts.length,
  };
}

function pruned(set: CompiledSet, facts: CallFacts): Evaluation {
  const p = principalUid(facts.principal);
  const t = toolUid(facts.service.name, facts.tool.name);
  const account = facts.principal.kind === 'agent' ? facts.principal.ownerId : facts.principal.userId;
  const subset = subsetFor(
    set,
    `${p.type}::${p.id}`,
    p.type,
    `Platform::Account::${account}`,
    `${t.type}::${t.id}`,
    `Platform::Service::${facts.service.name}`,
  );
  return evaluateSubset(subset, facts);
}

describe('the engine decides like plain Cedar on the whole set', () => {
  const seen = { deny: 0, approval: 0, allow: 0, errors: 0, memoHits: 0, pruned: 0 };
  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]) {
    it(`generated policies and calls, seed ${seed}`, () => {
      const r = rng(seed);
      const texts = Array.from({ length: 12 }, (_, i) => ({ id: `pol_${seed}_${i}`, source: policyText(r) }));
      const set: CompiledSet = { policies: texts.map((t) => compilePolicy(t.id, t.source, false)), subsets: new Map() };
      const whole = prepareWhole(texts);
      const calls = Array.from({ length: 120 }, () => factsOf(r));
      const hitsBefore = engineStats.memoHits;
      // Twice, the second pass in reverse: the memo answers the repeats.
      for (const facts of [...calls, ...[...calls].reverse()]) {
        const want = reference(whole, texts, facts);
        const got = pruned(set, facts);
        expect({ decision: got.decision, policyIds: got.policyIds, errors: got.errors }).toEqual({
          decision: want.decision,
          policyIds: want.policyIds,
          errors: want.errors,
        });
        seen[got.decision]++;
        if (got.errors.length) seen.errors++;
        if (got.evaluated < texts.length) seen.pruned++;
      }
      seen.memoHits += engineStats.memoHits - hitsBefore;
    });
  }

  it('the generated cases exercise every outcome, the scope pruning and the memo', () => {
    // Otherwise the comparison above proves little.
    expect(seen.deny).toBeGreaterThan(50);
    expect(seen.approval).toBeGreaterThan(50);
    expect(seen.allow).toBeGreaterThan(50);
    expect(seen.errors).toBeGreaterThan(50);
    expect(seen.pruned).toBeGreaterThan(50);
    expect(seen.memoHits).toBeGreaterThan(50);
  });

  it('ignores what no policy reads: a different unread argument is a memo hit, a read one is not', () => {
    const set: CompiledSet = {
      policies: [
        compilePolicy(
          'pol_amount',
          'forbid(principal, action, resource) when { context.numbers.hasTag("amount") && context.numbers.getTag("amount") > 100 };',
          false,
        ),
      ],
      subsets: new Map(),
    };
    const base = factsOf(rng(99));
    const at = (args: Record<string, unknown>) => pruned(set, { ...base, arguments: args });
    expect(at({ amount: 5, note: 'a' }).decision).toBe('allow');
    const hits = engineStats.memoHits;
    expect(at({ amount: 5, note: 'b' }).decision).toBe('allow');
    expect(engineStats.memoHits).toBe(hits + 1);
    expect(at({ amount: 500, note: 'b' }).decision).toBe('deny');
    expect(engineStats.memoHits).toBe(hits + 1);
  });

  it('keys the memo by value class: values compared only with constants hit when the outcomes repeat', () => {
    const set: CompiledSet = {
      policies: [
        compilePolicy(
          'pol_class',
          'forbid(principal, action, resource) when { context.numbers.hasTag("amount") && context.numbers.getTag("amount") > 100 && context.arguments.getTag("ref") like "ord-*" };',
          false,
        ),
        compilePolicy(
          'pol_sum',
          'forbid(principal, action, resource) when { context.numbers.hasTag("qty") && context.numbers.getTag("qty") * 2 > 10 };',
          false,
        ),
      ],
      subsets: new Map(),
    };
    const base = factsOf(rng(7));
    const at = (args: Record<string, unknown>) => pruned(set, { ...base, arguments: args });
    const hits = () => engineStats.memoHits;
    const h0 = hits();
    expect(at({ amount: 5, ref: 'ord-1' }).decision).toBe('allow');
    expect(at({ amount: 6, ref: 'ord-2' }).decision).toBe('allow');
    expect(hits()).toBe(h0 + 1);
    expect(at({ amount: 500, ref: 'ord-3' }).decision).toBe('deny');
    expect(at({ amount: 600, ref: 'ord-4' }).decision).toBe('deny');
    expect(hits()).toBe(h0 + 2);
    expect(at({ amount: 600, ref: 'inv-4' }).decision).toBe('allow');
    expect(at({ amount: 101, ref: 'inv-5' }).decision).toBe('allow');
    expect(hits()).toBe(h0 + 3);
    // A missing tag is a class of its own (Cedar errors on getTag).
    expect(at({ amount: 200 }).errors.map((e) => e.policy_id)).toEqual(['pol_class']);
    // `qty * 2` is not a comparison with a constant: each value is its own key.
    expect(at({ qty: 1 }).decision).toBe('allow');
    expect(at({ qty: 2 }).decision).toBe('allow');
    expect(at({ qty: 6 }).decision).toBe('deny');
    expect(hits()).toBe(h0 + 3);
  });

  /** Each case: policies, then calls whose values share a class of the coarse use but not a decision. */
  const EDGES: Array<{ name: string; policies: string[]; calls: Array<Partial<CallFacts>> }> = [
    {
      name: 'a literal on the left flips the comparison',
      policies: [
        'forbid(principal, action, resource) when { context.numbers.hasTag("n") && 5 < context.numbers.getTag("n") };',
      ],
      calls: [{ arguments: { n: 4 } }, { arguments: { n: 6 } }, { arguments: { n: 5 } }],
    },
    {
      name: 'a record used as a whole value keeps its fields',
      policies: [
        'forbid(principal, action, resource) when { context.calls.last_day >= 10 };',
        'forbid(principal, action, resource) when { context.calls == {last_hour: 0, last_day: 3} };',
      ],
      calls: [{ calls: { last_hour: 0, last_day: 3 } }, { calls: { last_hour: 0, last_day: 4 } }],
    },
    {
      name: 'the context used as a value keeps every field',
      policies: [
        'forbid(principal, action, resource) when { context.calls.last_day >= 10 };',
        'forbid(principal, action, resource) when { (if true then context else context).calls.last_day == 3 };',
      ],
      calls: [{ calls: { last_hour: 0, last_day: 3 } }, { calls: { last_hour: 0, last_day: 4 } }],
    },
    {
      name: 'a tag read by a computed key keeps every tag',
      policies: [
        'forbid(principal, action, resource) when { context.numbers.hasTag("n") && context.numbers.getTag("n") > 5 };',
        'forbid(principal, action, resource) when { context.numbers.hasTag(resource.tool) && context.numbers.getTag(resource.tool) == 3 };',
      ],
      calls: [{ arguments: { n: 3 } }, { arguments: { n: 4 } }],
    },
  ];
  for (const edge of EDGES)
    it(`decides like Cedar where classes would be too coarse: ${edge.name}`, () => {
      const texts = edge.policies.map((source, i) => ({ id: `pol_edge_${i}`, source }));
      const set: CompiledSet = { policies: texts.map((t) => compilePolicy(t.id, t.source, false)), subsets: new Map() };
      const whole = prepareWhole(texts);
      const base = factsOf(rng(5));
      const decisions = edge.calls.map((c) => {
        const facts: CallFacts = { ...base, tool: { ...base.tool, name: 'n' }, ...c };
        const got = pruned(set, facts);
        expect({ decision: got.decision, policyIds: got.policyIds, errors: got.errors }).toMatchObject(
          (({ decision, policyIds, errors }) => ({ decision, policyIds, errors }))(reference(whole, texts, facts)),
        );
        return got.decision;
      });
      // The calls were chosen so that the decision changes: a memo keyed too coarsely would repeat one.
      expect(new Set(decisions).size).toBeGreaterThan(1);
    });
});
