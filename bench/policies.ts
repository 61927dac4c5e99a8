/**
 * What Cedar policies add to a tool execution (`npm run bench:policies`).
 *
 * One process, one in-memory platform (or BENCH_DATABASE_URL), one loopback upstream (`GET /fast`).
 * Three accounts each own a one-tool service (owners call their own services unmetered, so the
 * quota path is the same for all) and differ only in their policies:
 * - `off`: none — the policy check returns after one cache lookup, and `control`, a second account
 *   without policies (the noise floor between identical set-ups);
 * - `on`: 100 policies as accounts write them — 90 scoped to other tools
 *   (`resource == Platform::Tool::"…"`, `resource in Platform::Service::"…"`: per-tool caps,
 *   blocks, hours) and 10 that apply to every tool (conditions on arguments, numbers, tags, time);
 *   each call evaluates those 10 + the base permit and logs an `allow`;
 * - `worst`: 100 policies that all apply to every tool (no scope to prune on).
 * Calls pass `{ city }`, which no policy reads (the decision memo answers repeats: `hit`), or also
 * `amount_3` = a new negative number every call, which an applying policy compares with a constant
 * (`> 10000`: `miss`, answered from the memo by the value's class after the first call, ADR 0996),
 * or `amount_8` (new every call) and `fee_8`, which an applying policy subtracts before comparing
 * (`concrete`: no class can stand for the value, Cedar runs on every call); `cap` calls the
 * service's second tool, `other_0`, under a daily cap (`context.calls.last_day >= 100000`): the
 * caller's executions of it are counted on every call.
 *
 * Measured in the same run, interleaved call by call (order rotating) in rounds, so drift and noise
 * hit all alike:
 * 1. the whole execute (`POST /v1/agents/:id/execute` via `app.inject`, upstream included): p50 and
 *    p95 per round of `off`, `control` and `on` with the `hit` arguments, `off` and `on` with the
 *    `miss` ones, `on` with the `concrete` ones (against `off` with `miss`), and `on` on the capped
 *    tool (against `off`); the added p50/p95 (`on − off`, same arguments) with a distribution-free interval of
 *    its median over the rounds (bench/lib/median-interval.ts);
 * 2. the policy check alone (`authorizeToolCall`, called directly as executeTool calls it): p50/p99
 *    of `off`, `on` and `worst`, hit and miss.
 * Goal (docs/benchmarks.md#policies): added p50 < 0.2 ms with 100 policies.
 *
 * Env: BENCH_ROUNDS (7), BENCH_CALLS (300 executes per account and round), BENCH_CHECKS (20000
 * direct checks per case), BENCH_DATABASE_URL.
 */
import http from 'node:http';
import { authorizeToolCall, callCounts } from '../src/modules/policies/authorize.js';
import { engineStats } from '../src/modules/policies/engine.js';
import { resolveExecutableTool } from '../src/modules/registry/executable.js';
import { actorOf } from '../src/http/auth.js';
import { benchUser, startBenchApp } from './lib/app.js';
import { median, medianInterval, verdict } from './lib/median-interval.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const CALLS = Number(process.env.BENCH_CALLS ?? 300);
const CHECKS = Number(process.env.BENCH_CHECKS ?? 20_000);
const GOAL_MS = 0.2;

const upstream = http.createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end('{"ok":true}');
});
await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
const upstreamUrl = `http://127.0.0.1:${(upstream.address() as { port: number }).port}`;

const { app, ctx } = await startBenchApp({
  ALLOW_LOOPBACK_UPSTREAMS: 'on',
  EMBEDDINGS_PROVIDER: 'local',
  LOG_LEVEL: 'silent',
});

async function inject(method: 'GET' | 'POST', url: string, headers: Record<string, string>, payload?: unknown) {
  const res = await app.inject({ method, url, headers, payload: payload as Record<string, unknown> });
  if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
  return res.json();
}

const SCOPED = (svc: string, i: number) =>
  i % 3 === 0
    ? `forbid(principal, action, resource == Platform::Tool::"${svc}/other_${i}") when { context.calls.last_day >= ${100_000 + i} };`
    : i % 3 === 1
      ? `forbid(principal is Platform::Agent, action, resource == Platform::Tool::"${svc}/other_${i}");`
      : `forbid(principal, action, resource in Platform::Service::"other-service-${i}") when { context.time.hour < 6 };`;
const GENERAL = (i: number) =>
  [
    `forbid(principal, action, resource) when { context.arguments.hasTag("id_${i}") && context.arguments.getTag("id_${i}") like "secret-*" };`,
    `forbid(principal, action, resource) when { resource.tags.contains("destructive") && context.numbers.hasTag("n_${i}") };`,
    `forbid(principal is Platform::Agent, action, resource) unless { resource.tags.contains("read_only") };`,
    i === 8
      ? 'forbid(principal, action, resource) when { context.numbers.hasTag("amount_8") && context.numbers.hasTag("fee_8") && context.numbers.getTag("amount_8") - context.numbers.getTag("fee_8") > 10000 };'
      : `forbid(principal, action, resource) when { context.numbers.hasTag("amount_${i}") && context.numbers.getTag("amount_${i}") > 10000 };`,
    `forbid(principal, action, resource) when { context.time.weekday == 7 && context.time.hour == ${i % 24} };`,
  ][i % 5];

interface Account {
  name: 'off' | 'control' | 'on' | 'worst';
  headers: Record<string, string>;
  session: string;
  service: string;
}

async function account(name: Account['name'], policies: (svc: string) => string[]): Promise<Account> {
  const user = await benchUser(app, `bench-policies-${name}-${Date.now()}@example.test`);
  const svc = await inject('POST', '/owner/services', user.headers, {
    name: `bench-pol-${name}-${Date.now().toString(36)}`,
    description: 'policy benchmark',
    base_url: upstreamUrl,
    // `other_0` is the same call under a daily cap (SCOPED(0): `context.calls.last_day >= 100000`).
    tools: ['fast', 'other_0'].map((name) => ({
      name,
      description: name,
      method: 'GET',
      path: '/fast',
      input_schema: { type: 'object', properties: { city: { type: 'string' }, amount_3: { type: 'integer' } } },
    })),
  });
  for (const source of policies(svc.name)) await inject('POST', '/v1/policies', user.headers, { source });
  const session = await inject('POST', '/v1/agents', user.headers, { name: 'bench' });
  return { name, headers: user.headers, session: session.id, service: svc.name };
}

const accounts = [
  await account('off', () => []),
  await account('control', () => []),
  await account('on', (svc) => [
    ...Array.from({ length: 90 }, (_, i) => SCOPED(svc, i)),
    ...Array.from({ length: 10 }, (_, i) => GENERAL(i)),
  ]),
  await account('worst', () => Array.from({ length: 100 }, (_, i) => GENERAL(i % 5 === 2 ? i + 1 : i))),
];
const [off, control, on, worst] = accounts;

let serial = 0;
/** Arguments of one call: `hit` repeats what the policies read, `miss` and `concrete` change it every call. */
const argsOf = (mode: Mode): Record<string, unknown> =>
  mode === 'hit'
    ? { city: 'Paris' }
    : mode === 'miss'
      ? { city: 'Paris', amount_3: -++serial }
      : { city: 'Paris', amount_8: -++serial, fee_8: 1 };

async function executeOnce(a: Account, mode: Mode, tool = 'fast'): Promise<number> {
  const t = performance.now();
  const res = await app.inject({
    method: 'POST',
    url: `/v1/agents/${a.session}/execute`,
    headers: a.headers,
    payload: { service: a.service, tool, arguments: argsOf(mode) },
  });
  const ms = performance.now() - t;
  if (res.statusCode !== 200) throw new Error(`execute (${a.name}): ${res.statusCode} ${res.body}`);
  return ms;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const r3 = (x: number) => Math.round(x * 1000) / 1000;

type Mode = 'hit' | 'miss' | 'concrete';
type Case = {
  key: 'off' | 'control' | 'on_hit' | 'off_miss' | 'on_miss' | 'on_concrete' | 'on_cap';
  account: Account;
  mode: Mode;
  tool?: string;
};
const cases: Case[] = [
  { key: 'off', account: off, mode: 'hit' },
  { key: 'control', account: control, mode: 'hit' },
  { key: 'on_hit', account: on, mode: 'hit' },
  { key: 'off_miss', account: off, mode: 'miss' },
  { key: 'on_miss', account: on, mode: 'miss' },
  { key: 'on_concrete', account: on, mode: 'concrete' },
  { key: 'on_cap', account: on, mode: 'hit', tool: 'other_0' },
];

// Warm-up: caches, JIT, the engine's pre-parsed subsets.
for (let i = 0; i < 200; i++) for (const c of cases) await executeOnce(c.account, c.mode, c.tool);

type Stats = Record<Case['key'], { p50: number; p95: number }>;
const rounds: Stats[] = [];
for (let r = 0; r < ROUNDS; r++) {
  const xs: Record<string, number[]> = Object.fromEntries(cases.map((c) => [c.key, []]));
  for (let i = 0; i < CALLS; i++)
    for (let j = 0; j < cases.length; j++) {
      const c = cases[(i + j) % cases.length];
      xs[c.key].push(await executeOnce(c.account, c.mode, c.tool));
    }
  const stats = {} as Stats;
  for (const c of cases) stats[c.key] = { p50: median(xs[c.key]), p95: pct(xs[c.key], 95) };
  rounds.push(stats);
}
/** `key` − its policy-free twin (same arguments) per round. */
const addedOf = (key: Case['key'], q: 'p50' | 'p95') =>
  medianInterval(
    rounds.map((x) => x[key][q] - x[key === 'on_hit' || key === 'control' || key === 'on_cap' ? 'off' : 'off_miss'][q]),
  );
const interval = (i: ReturnType<typeof medianInterval>) => ({
  median: r3(i.median),
  low: r3(i.low),
  high: r3(i.high),
  coverage: r3(i.coverage),
});
const goal = (i: ReturnType<typeof medianInterval>) => verdict({ ...i, low: -i.high, high: -i.low }, -GOAL_MS);

// The check alone, as executeTool calls it.
async function checks(a: Account, mode: Mode): Promise<{ p50_ms: number; p99_ms: number }> {
  const principal = await ctx.auth.authenticate(a.headers.authorization.slice('Bearer '.length));
  const actor = actorOf(principal);
  const resolved = await resolveExecutableTool(ctx, a.service, 'fast');
  if (!resolved) throw new Error('tool not found');
  for (let i = 0; i < 2000; i++) await authorizeToolCall(ctx, principal, actor, resolved, argsOf(mode), undefined);
  const xs: number[] = [];
  for (let i = 0; i < CHECKS; i++) {
    const args = argsOf(mode);
    const t = performance.now();
    await authorizeToolCall(ctx, principal, actor, resolved, args, undefined);
    xs.push(performance.now() - t);
  }
  return { p50_ms: r3(pct(xs, 50)), p99_ms: r3(pct(xs, 99)) };
}
const check: Record<string, { p50_ms: number; p99_ms: number }> = {};
const before = { ...engineStats };
for (const a of [off, on, worst])
  for (const mode of ['hit', 'miss', 'concrete'] as const) check[`${a.name}_${mode}`] = await checks(a, mode);

// Counting the capped tool's executions (~2,300 in the window by now): minute counters summed, the
// window's first minute counted exactly (ADR 0997).
async function counts(): Promise<{ p50_ms: number; p99_ms: number; last_day: number }> {
  const principal = await ctx.auth.authenticate(on.headers.authorization.slice('Bearer '.length));
  const resolved = await resolveExecutableTool(ctx, on.service, 'other_0');
  if (!resolved) throw new Error('tool not found');
  const xs: number[] = [];
  let last = 0;
  for (let i = 0; i < 300; i++) {
    const t = performance.now();
    last = (await callCounts(ctx, actorOf(principal), resolved.tool.id)).last_day;
    xs.push(performance.now() - t);
  }
  return { p50_ms: r3(pct(xs, 50)), p99_ms: r3(pct(xs, 99)), last_day: last };
}
const countAll = await counts();

const med = (key: Case['key'], q: 'p50' | 'p95') => r3(median(rounds.map((x) => x[key][q])));
const report = {
  engine: process.env.BENCH_DATABASE_URL ? 'postgres' : 'pglite',
  rounds: ROUNDS,
  calls_per_round: CALLS,
  execute_ms: Object.fromEntries(cases.map((c) => [c.key, { p50: med(c.key, 'p50'), p95: med(c.key, 'p95') }])),
  added_ms: {
    hit_p50: { ...interval(addedOf('on_hit', 'p50')), verdict: goal(addedOf('on_hit', 'p50')) },
    hit_p95: interval(addedOf('on_hit', 'p95')),
    miss_p50: { ...interval(addedOf('on_miss', 'p50')), verdict: goal(addedOf('on_miss', 'p50')) },
    miss_p95: interval(addedOf('on_miss', 'p95')),
    concrete_p50: { ...interval(addedOf('on_concrete', 'p50')), verdict: goal(addedOf('on_concrete', 'p50')) },
    concrete_p95: interval(addedOf('on_concrete', 'p95')),
    cap_p50: { ...interval(addedOf('on_cap', 'p50')), verdict: goal(addedOf('on_cap', 'p50')) },
    cap_p95: interval(addedOf('on_cap', 'p95')),
    goal_ms: GOAL_MS,
  },
  control_minus_off_p50_ms: interval(addedOf('control', 'p50')),
  check_only: {
    off_no_policies: check.off_hit,
    on_100_policies_10_apply_hit: check.on_hit,
    on_100_policies_10_apply_miss: check.on_miss,
    on_100_policies_10_apply_concrete: check.on_concrete,
    worst_100_policies_all_apply_hit: check.worst_hit,
    worst_100_policies_all_apply_miss: check.worst_miss,
    worst_100_policies_all_apply_concrete: check.worst_concrete,
    cedar_calls: engineStats.evaluations - before.evaluations,
    memo_hits: engineStats.memoHits - before.memoHits,
  },
  call_counts: countAll,
  load_average: (await import('node:os')).loadavg().map(r3),
};
console.log(JSON.stringify(report, null, 2));
await app.close();
upstream.close();
