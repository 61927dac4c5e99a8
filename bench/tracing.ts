/**
 * Tracing overhead on the execute path (`npm run bench:tracing`, issue #41, ADR 0991).
 *
 * One process, one app (in-memory PGlite unless BENCH_DATABASE_URL), one loopback upstream
 * (`GET /fast`), one user calling its own service (unmetered) in one session; `POST /v1/agents/:id/execute` injected with
 * BENCH_CONCURRENCY (8) calls in flight for BENCH_SECONDS (5) per run. Modes, switched on the same
 * app with `configureTelemetry` and measured in interleaved rounds (BENCH_ROUNDS, 3) so that
 * machine noise falls on all of them alike:
 *  - `off`: nothing set (the default: no SDK, the helpers are a boolean test);
 *  - `store-100`: TRACES_STORE=on, every trace sampled and kept in process;
 *  - `store-1`: TRACES_STORE=on, OTEL_TRACES_SAMPLER=parentbased_traceidratio, ratio 0.01.
 * Prints executions/s per mode (median of rounds), the ratio to `off` of the medians and the median of
 * the per-round ratios (`paired_vs_off`), as JSON.
 *
 * On PGlite it also measures what the statement-span hook of the database layer (telemetry/db.ts)
 * costs while tracing is off: BENCH_STATEMENTS (20000) `select $1` through the instrumented client
 * and through PGlite's own `query`, interleaved in rounds, reported in µs per statement.
 */
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { configureTelemetry } from '../src/telemetry/sdk.js';
import { testEnv } from '../test/helpers/app.js';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 8);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);

const env = testEnv({
  DATABASE_URL: process.env.BENCH_DATABASE_URL,
  REDIS_URL: process.env.BENCH_REDIS_URL,
  LOG_LEVEL: 'warn',
});
const config = loadConfig(env);
const modes = {
  off: loadConfig(env).telemetry,
  'store-100': loadConfig({ ...env, TRACES_STORE: 'on' }).telemetry,
  'store-1': loadConfig({
    ...env,
    TRACES_STORE: 'on',
    OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
    OTEL_TRACES_SAMPLER_ARG: '0.01',
  }).telemetry,
};

const { app, ctx } = await buildApp(config);
const upstreamServer = http.createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end('{"ok":true,"n":42}');
});
await new Promise<void>((r) => upstreamServer.listen(0, '127.0.0.1', r));
const upstream = { url: `http://127.0.0.1:${(upstreamServer.address() as AddressInfo).port}` };
const inject = async (method: string, url: string, headers: Record<string, string>, payload?: unknown) => {
  const r = await app.inject({ method: method as 'POST', url, headers, payload: payload as object });
  return { status: r.statusCode, body: r.body ? JSON.parse(r.body) : null };
};
const user = async () => {
  const r = await inject('POST', '/auth/test', {}, { email: `b-${Math.random()}@example.com` });
  return { authorization: `Bearer ${r.body.access_token}` };
};
const owner = await user();
// The owner calls its own service: unmetered, so no quota ends the run.
const caller = owner;
const svc = await inject('POST', '/owner/services', owner, {
  name: `bench-trace-${Date.now().toString(36)}`,
  description: 'bench',
  base_url: upstream.url,
  tools: [{ name: 'fast', description: 'fast', method: 'GET', path: '/fast', input_schema: { type: 'object' } }],
});
if (svc.status !== 201) throw new Error(`register: ${svc.status} ${JSON.stringify(svc.body)}`);
const session = (await inject('POST', '/v1/agents', caller, {})).body.id as string;
const body = { service: svc.body.name, tool: 'fast', arguments: {} };

async function run(ms: number): Promise<number> {
  let done = 0;
  let failed = 0;
  const end = performance.now() + ms;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const r = await inject('POST', `/v1/agents/${session}/execute`, caller, body);
        if (r.status === 200) done++;
        else if (failed++ === 0) console.error('execute failed', r.status, JSON.stringify(r.body));
      }
    }),
  );
  return (done / ms) * 1000;
}

/** µs per statement through the instrumented PGlite client vs PGlite's own `query` (tracing off). */
async function statementCost(): Promise<Record<string, unknown> | null> {
  const client = (ctx.db as unknown as { $client: { query(t: string, p: unknown[]): Promise<unknown> } }).$client;
  if (ctx.database.engine !== 'pglite') return null;
  const own = Object.getPrototypeOf(client).query as (t: string, p: unknown[]) => Promise<unknown>;
  const n = Number(process.env.BENCH_STATEMENTS ?? 20000);
  const time = async (q: (t: string, p: unknown[]) => Promise<unknown>) => {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) await q('select $1::int as n', [i]);
    return ((performance.now() - t0) * 1000) / n;
  };
  const hooked: number[] = [];
  const plain: number[] = [];
  // Which goes first alternates by round, so that load drifting over the run favours neither.
  for (let r = 0; r < rounds; r++) {
    const pair = [
      async () => hooked.push(await time((t, p) => client.query(t, p))),
      async () => plain.push(await time((t, p) => own.call(client, t, p))),
    ];
    for (const f of r % 2 ? pair.reverse() : pair) await f();
  }
  const med = (xs: number[]) => Number([...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]?.toFixed(2));
  return { statements: n, us_per_statement: { instrumented: med(hooked), pglite_query: med(plain) } };
}

await configureTelemetry(modes.off, false);
await run(2000); // warm-up
const dbHookOff = await statementCost();
const results: Record<string, number[]> = { off: [], 'store-100': [], 'store-1': [] };
for (let i = 0; i < rounds; i++) {
  for (const [name, t] of Object.entries(modes)) {
    await configureTelemetry(t, Boolean(config.databaseUrl));
    results[name]?.push(await run(seconds * 1000));
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const off = median(results.off as number[]);
const out = Object.fromEntries(
  Object.entries(results).map(([k, v]) => [
    k,
    {
      rps: Math.round(median(v)),
      vs_off: Number((median(v) / off).toFixed(3)),
      // Round by round (each mode ran right after off): less sensitive to load that drifts across rounds.
      paired_vs_off: Number(median(v.map((x, i) => x / (results.off?.[i] ?? x))).toFixed(3)),
      rounds: v.map(Math.round),
    },
  ]),
);
console.log(
  JSON.stringify(
    { engine: config.databaseUrl ? 'postgres' : 'pglite', seconds, concurrency, modes: out, db_hook_off: dbHookOff },
    null,
    2,
  ),
);
await app.close();
upstreamServer.close();
process.exit(0);
