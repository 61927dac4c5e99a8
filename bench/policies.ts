/**
 * What Cedar policies add to a tool execution (`npm run bench:policies`).
 *
 * One process, one in-memory platform (or BENCH_DATABASE_URL), one loopback upstream (`GET /fast`).
 * Three accounts each own a one-tool service (owners call their own services unmetered, so the
 * quota path is the same for all) and differ only in their policies:
 * - `off`: none — the policy check returns after one cache lookup (today's behaviour), and
 *   `control`, a second account without policies (the noise floor between identical set-ups);
 * - `on`: 100 policies as accounts write them — 90 scoped to other tools
 *   (`resource == Platform::Tool::"…"`: per-tool caps, blocks) and 10 that apply to every tool
 *   (arguments, time, tags); each call evaluates those 10 + the base permit and logs an `allow`;
 * - `worst`: 100 policies that all apply to every tool (no scope to prune on).
 *
 * Measured in the same run, interleaved in rounds (order alternating) so drift and noise hit all
 * alike:
 * 1. the whole execute (`POST /v1/agents/:id/execute` via `app.inject`, upstream included):
 *    p50 per round of `off` and `on`, and the added p50 (`on − off`) with a distribution-free
 *    interval of its median over the rounds (bench/lib/median-interval.ts);
 * 2. the policy check alone (`authorizeToolCall`, called directly as executeTool calls it): p50/p99
 *    of `off`, `on` and `worst`.
 * Goal (docs/benchmarks.md#policies): added p50 < 0.2 ms with 100 policies.
 *
 * Env: BENCH_ROUNDS (7), BENCH_CALLS (300 executes per account and round), BENCH_CHECKS (20000
 * direct checks per account), BENCH_DATABASE_URL.
 */
import http from 'node:http';
import { authorizeToolCall } from '../src/modules/policies/authorize.js';
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
    ? `forbid(principal, action, resource == Platform::Tool::"${svc}/other_${i}") when { context.calls.last_day >= ${100 + i} };`
    : i % 3 === 1
      ? `forbid(principal is Platform::Agent, action, resource == Platform::Tool::"${svc}/other_${i}");`
      : `forbid(principal, action, resource in Platform::Service::"other-service-${i}") when { context.time.hour < 6 };`;
const GENERAL = (i: number) =>
  [
    `forbid(principal, action, resource) when { context.arguments.hasTag("id_${i}") && context.arguments.getTag("id_${i}") like "secret-*" };`,
    `forbid(principal, action, resource) when { resource.tags.contains("destructive") && context.numbers.hasTag("n_${i}") };`,
    `forbid(principal is Platform::Agent, action, resource) unless { resource.tags.contains("read_only") };`,
    `forbid(principal, action, resource) when { context.numbers.hasTag("amount_${i}") && context.numbers.getTag("amount_${i}") > 10000 };`,
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
    tools: [
      {
        name: 'fast',
        description: 'fast',
        method: 'GET',
        path: '/fast',
        input_schema: { type: 'object', properties: { city: { type: 'string' } } },
      },
    ],
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

async function executeOnce(a: Account): Promise<number> {
  const t = performance.now();
  const res = await app.inject({
    method: 'POST',
    url: `/v1/agents/${a.session}/execute`,
    headers: a.headers,
    payload: { service: a.service, tool: 'fast', arguments: { city: 'Paris' } },
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

// Warm-up: caches, JIT, the engine's pre-parsed subsets.
for (const a of [off, control, on]) for (let i = 0; i < 200; i++) await executeOnce(a);

const rounds: Array<{ off: number; control: number; on: number }> = [];
for (let r = 0; r < ROUNDS; r++) {
  const order = r % 2 === 0 ? [off, control, on] : [on, control, off];
  const p50: Record<string, number> = {};
  for (const a of order) {
    const xs: number[] = [];
    for (let i = 0; i < CALLS; i++) xs.push(await executeOnce(a));
    p50[a.name] = median(xs);
  }
  rounds.push({ off: p50.off, control: p50.control, on: p50.on });
}
const added = medianInterval(rounds.map((x) => x.on - x.off));
// Two accounts without policies: how far apart identical set-ups land on this machine (noise floor).
const noise = medianInterval(rounds.map((x) => x.control - x.off));

// The check alone, as executeTool calls it.
async function checks(a: Account): Promise<{ p50_ms: number; p99_ms: number }> {
  const principal = await ctx.auth.authenticate(a.headers.authorization.slice('Bearer '.length));
  const actor = actorOf(principal);
  const resolved = await resolveExecutableTool(ctx, a.service, 'fast');
  if (!resolved) throw new Error('tool not found');
  const args = { city: 'Paris' };
  for (let i = 0; i < 2000; i++) await authorizeToolCall(ctx, principal, actor, resolved, args, undefined);
  const xs: number[] = [];
  for (let i = 0; i < CHECKS; i++) {
    const t = performance.now();
    await authorizeToolCall(ctx, principal, actor, resolved, args, undefined);
    xs.push(performance.now() - t);
  }
  return { p50_ms: r3(pct(xs, 50)), p99_ms: r3(pct(xs, 99)) };
}
const check: Record<string, { p50_ms: number; p99_ms: number }> = {};
for (const a of [off, on, worst]) check[a.name] = await checks(a);

const report = {
  engine: process.env.BENCH_DATABASE_URL ? 'postgres' : 'pglite',
  rounds: ROUNDS,
  calls_per_round: CALLS,
  execute_p50_ms: {
    off: r3(median(rounds.map((x) => x.off))),
    control_no_policies: r3(median(rounds.map((x) => x.control))),
    on_100_policies: r3(median(rounds.map((x) => x.on))),
  },
  added_p50_ms: {
    median: r3(added.median),
    low: r3(added.low),
    high: r3(added.high),
    coverage: r3(added.coverage),
    goal_ms: GOAL_MS,
    verdict: verdict({ ...added, low: -added.high, high: -added.low }, -GOAL_MS),
  },
  control_minus_off_p50_ms: { median: r3(noise.median), low: r3(noise.low), high: r3(noise.high) },
  check_only: {
    off_no_policies: check.off,
    on_100_policies_10_apply: check.on,
    worst_100_policies_all_apply: check.worst,
  },
  load_average: (await import('node:os')).loadavg().map(r3),
};
console.log(JSON.stringify(report, null, 2));
await app.close();
upstream.close();
