/**
 * Agent key/value memory hot path (`npm run bench:agent-memory`).
 *
 * One process, one database: the full service (agent JWT verification + liveness check, rate
 * limiter, schema validation, ETag handling) serving `GET` and `PUT /v2/memory/:key`, against a
 * bare Fastify route doing the same single-row read / upsert, one statement per request (the service's own
 * single-row prepared statements, same `Db` handle) with no auth, validation or limits. The service
 * coalesces the statements of concurrent requests (agent-memory/coalesce.ts); `statements_per_request`
 * says how many it ran per answered request (1 = no coalescing; BENCH_CONNECTIONS=1 shows the stack alone). autocannon drives both over loopback, one
 * after the other, with the same connections, duration and request headers (the agent's bearer
 * token too, which the bare route ignores: autocannon runs in this process, so only the server's
 * work may differ between the two); keys rotate over a preloaded set.
 *
 * To be fair under a noisy machine the two targets alternate: BENCH_ROUNDS rounds of
 * BENCH_SECONDS each (order swapped every round); requests/s is the mean over rounds, p99 the
 * median of the rounds' p99s. Each round also gives a paired ratio (service/bare of that round,
 * the two runs back to back); `ratio_median` and `cpu_ratio_median` are the medians of those —
 * a burst of load on the machine moves one round's pair, not the verdict. `ratio_interval` is the
 * distribution-free interval of that median (`bench/lib/median-interval.ts`; with the default 11
 * rounds the 2nd and 10th ratios, coverage 98.8 %) and `verdict` what it says of the goal: `met`
 * or `not met` when the whole interval is on one side of 0.80, `undecided` when this run's spread
 * cannot tell.
 *
 * Prints a table and one JSON line: requests/s and p99 latency of each, and the ratio
 * service/bare (goal ≥ 0.80, issue 18), and this process's CPU time per request of each (`cpu_us`, median of the
 * rounds; autocannon's share included; `cpu_sys_us` its kernel part) with `cpu_ratio` = bare/service, which a loaded machine
 * disturbs much less than requests/s. Env: BENCH_SECONDS (2), BENCH_ROUNDS (11), BENCH_CONNECTIONS (10),
 * BENCH_KEYS (100), BENCH_DATABASE_URL (PostgreSQL instead of in-memory PGlite), BENCH_REDIS_URL,
 * BENCH_OPS (`get,put`), BENCH_PROFILE=<dir> (a CPU profile of this process over each measured run:
 * `<op>-<service|bare>-<round>.cpuprofile`; autocannon's share is in it too; V8's sampler counts wall-clock
 * ticks, so on a loaded machine time the thread spent descheduled may land on the frame it resumed in, e.g.
 * `writev`), BENCH_WINDOWS=<file> (each run's monotonic time window, to split an on-CPU `perf record -k mono`).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import Fastify from 'fastify';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { prepareAgentMemoryStatements } from '../src/modules/agent-memory/statements.js';
import { median, medianInterval, verdict, type MedianInterval } from './lib/median-interval.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 2);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 11);
/** Issue 18's goal for both ratios (service/bare requests per second). */
const GOAL = 0.8;
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const KEYS = Number(process.env.BENCH_KEYS ?? 100);

const config = loadConfig({
  // not production: it refuses test tokens; development runs the same code (only NODE_ENV=test differs)
  NODE_ENV: 'development',
  LOG_LEVEL: 'silent',
  DATABASE_URL: process.env.BENCH_DATABASE_URL,
  DATABASE_IN_MEMORY: 'on',
  REDIS_URL: process.env.BENCH_REDIS_URL,
  DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'ap-bench-mem-')),
  AUTH_TEST_TOKENS: 'on',
  AUTH_TEST_ROLES: 'on',
  RATE_LIMIT_USER: '100000000',
  RATE_LIMIT_PRO: '100000000',
  RATE_LIMIT_ANONYMOUS: '100000000',
  SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
  PORT: '0',
  HOST: '127.0.0.1',
});
const { app, ctx } = await buildApp(config);
await app.listen({ port: 0, host: '127.0.0.1' });
const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;

async function json(method: string, url: string, headers: Record<string, string>, body?: unknown): Promise<any> {
  const res = await fetch(`${base}${url}`, {
    method,
    headers: { ...headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${await res.text()}`);
  return res.status === 204 ? null : res.json();
}

// The bare comparison: the service's own single-row prepared statements (agent-memory/statements.ts,
// named on PostgreSQL), one per request — the plain way to serve the route — and nothing else. The
// service runs the same statements, or their `unnest` forms for the requests that arrive together.
const bareStatements = prepareAgentMemoryStatements(ctx.db);
// Statements run while the service is measured (the bare route's are not counted). `prepareRaw`
// hands out one object per database handle and statement name, so these are the very objects the
// service's coalescers run: wrapping their `run` counts the service's statements.
let counting = false;
let statementsRun = 0;
for (const st of [bareStatements.get, bareStatements.getMany, bareStatements.upsert, bareStatements.upsertMany]) {
  const run = st.run.bind(st);
  st.run = (values) => {
    if (counting) statementsRun++;
    return run(values);
  };
}
const bare = Fastify({ logger: false });
bare.get<{ Params: { agent: string; key: string } }>('/bare/:agent/:key', async (req, reply) => {
  const [row] = await bareStatements.get.run({ agentId: req.params.agent, key: req.params.key });
  if (!row) return reply.code(404).send({ error: 'not found' });
  reply.header('etag', `"${row.version}"`);
  return row;
});
bare.put<{ Params: { agent: string; key: string }; Body: { value: unknown } }>(
  '/bare/:agent/:key',
  async (req, reply) => {
    const json = JSON.stringify(req.body.value);
    const [row] = await bareStatements.upsert.run({
      agentId: req.params.agent,
      key: req.params.key,
      json,
      bytes: Buffer.byteLength(json),
      ttl: null,
    });
    reply.header('etag', `"${row.version}"`);
    return row;
  },
);
await bare.listen({ port: 0, host: '127.0.0.1' });
const bareBase = `http://127.0.0.1:${(bare.server.address() as { port: number }).port}`;

interface Result {
  rps: number;
  /** Requests answered in the run. */
  requests: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  /** CPU time (user + system) of this process per request, µs — autocannon's share included (the same for both targets). */
  cpu_us: number;
  /** The system (kernel) part of `cpu_us`, µs: socket writes and reads, wake-ups of PostgreSQL's backends. */
  cpu_sys_us: number;
}

// BENCH_PROFILE=<dir>: the inspector profiles this process over each measured run.
const inspector = process.env.BENCH_PROFILE ? new (await import('node:inspector')).Session() : null;
inspector?.connect();
const post = (method: string, params?: object) =>
  new Promise<any>((resolve, reject) =>
    inspector!.post(method, params ?? {}, (err, res) => (err ? reject(err) : resolve(res))),
  );
if (inspector) await post('Profiler.enable');

/**
 * `work` under the profiler, its profile written as `<name>.cpuprofile` (just `work` without BENCH_PROFILE).
 * BENCH_WINDOWS=<file>: each run's `{ name, start_ns, end_ns, requests }` (CLOCK_MONOTONIC, as `perf record -k mono`
 * stamps samples) is appended as a JSON line, so an on-CPU profile of the whole process can be split per run.
 */
async function profiled<T extends { requests: number }>(name: string, work: () => Promise<T>): Promise<T> {
  if (process.env.BENCH_WINDOWS) {
    const start = process.hrtime.bigint();
    const out = await work();
    fs.appendFileSync(
      process.env.BENCH_WINDOWS,
      `${JSON.stringify({ name, start_ns: String(start), end_ns: String(process.hrtime.bigint()), requests: out.requests })}\n`,
    );
    return out;
  }
  if (!inspector) return work();
  await post('Profiler.start');
  const out = await work();
  const { profile } = await post('Profiler.stop');
  fs.mkdirSync(process.env.BENCH_PROFILE!, { recursive: true });
  fs.writeFileSync(path.join(process.env.BENCH_PROFILE!, `${name}.cpuprofile`), JSON.stringify(profile));
  fs.writeFileSync(path.join(process.env.BENCH_PROFILE!, `${name}.json`), JSON.stringify(out));
  return out;
}

async function run(
  url: string,
  method: 'GET' | 'PUT',
  pathOf: (i: number) => string,
  headers: Record<string, string>,
  body?: string,
  seconds = SECONDS,
): Promise<Result> {
  let i = 0;
  const cpu = process.cpuUsage();
  const r = await autocannon({
    url,
    connections: CONNECTIONS,
    duration: seconds,
    requests: [
      {
        method,
        headers: { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body } : {}),
        setupRequest: (req) => ({ ...req, path: pathOf(i++ % KEYS) }),
      },
    ],
  });
  const used = process.cpuUsage(cpu);
  return {
    rps: Math.round(r.requests.average),
    requests: r.requests.total,
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors,
    non2xx: r.non2xx,
    cpu_us: Math.round((used.user + used.system) / Math.max(1, r.requests.total)),
    cpu_sys_us: Math.round(used.system / Math.max(1, r.requests.total)),
  };
}

try {
  const user = await json('POST', '/auth/test', {}, { email: `bench-${Date.now()}@example.test`, roles: ['pro'] });
  const agent = await json('POST', '/v2/agents', { authorization: `Bearer ${user.access_token}` }, { name: 'bench' });
  const token = await json(
    'POST',
    '/auth/agent/token',
    {},
    { grant_type: 'client_credentials', client_id: agent.client_id, client_secret: agent.client_secret },
  );
  const auth = { authorization: `Bearer ${token.access_token}` };
  const value = { note: 'x'.repeat(200), n: 42, tags: ['a', 'b', 'c'] };
  const body = JSON.stringify({ value });
  for (let k = 0; k < KEYS; k++) await json('PUT', `/v2/memory/bench-${k}`, auth, { value });

  const svcPath = (k: number) => `/v2/memory/bench-${k}`;
  const barePath = (k: number) => `/bare/${agent.id}/bench-${k}`;
  // Warm both (JIT, connection pools, caches).
  await run(base, 'GET', svcPath, auth, undefined, 2);
  await run(bareBase, 'GET', barePath, auth, undefined, 2);

  type Target = { url: string; path: (k: number) => string; headers: Record<string, string> };
  const service: Target = { url: base, path: svcPath, headers: auth };
  // The same request headers as the service's (the bare route ignores the bearer token): autocannon
  // runs in this process, and building and writing the token for one target only counted that
  // load-generator work against the service (a profile diff of 2026-11-26: buildRequest, writeBuffer).
  const bareT: Target = { url: bareBase, path: barePath, headers: auth };
  const round2 = (x: number) => Math.round(x * 100) / 100;
  type Compared = {
    service: Result;
    bare: Result;
    ratio_median: number;
    cpu_ratio_median: number;
    ratios: number[];
    /** The order-statistic interval of the paired ratios' median (bench/lib/median-interval.ts) and what it says of the goal. */
    ratio_interval: Omit<MedianInterval, 'median' | 'n'> | null;
    verdict: ReturnType<typeof verdict> | null;
    /** Statements the service ran per answered request (below 1: requests shared statements, agent-memory/coalesce.ts). */
    statements_per_request: number;
  };
  async function compare(method: 'GET' | 'PUT'): Promise<Compared> {
    const runs: { service: Result[]; bare: Result[] } = { service: [], bare: [] };
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? (['service', 'bare'] as const) : (['bare', 'service'] as const);
      for (const which of order) {
        const t = which === 'service' ? service : bareT;
        counting = which === 'service';
        runs[which].push(
          await profiled(`${method.toLowerCase()}-${which}-${round}`, () =>
            run(t.url, method, t.path, t.headers, method === 'PUT' ? body : undefined),
          ),
        );
        counting = false;
      }
    }
    const statements = statementsRun;
    statementsRun = 0;
    // Paired per round: service/bare of the two back-to-back runs.
    const ratios = runs.service.map((s, i) => round2(s.rps / Math.max(1, runs.bare[i].rps)));
    const cpuRatios = runs.service.map((s, i) => runs.bare[i].cpu_us / Math.max(1, s.cpu_us));
    const agg = (rs: Result[]): Result => ({
      rps: Math.round(rs.reduce((n, r) => n + r.rps, 0) / rs.length),
      requests: rs.reduce((n, r) => n + r.requests, 0),
      p50: round2(median(rs.map((r) => r.p50))),
      p99: round2(median(rs.map((r) => r.p99))),
      errors: rs.reduce((n, r) => n + r.errors, 0),
      non2xx: rs.reduce((n, r) => n + r.non2xx, 0),
      cpu_us: round2(median(rs.map((r) => r.cpu_us))),
      cpu_sys_us: round2(median(rs.map((r) => r.cpu_sys_us))),
    });
    const interval = medianInterval(ratios);
    return {
      service: agg(runs.service),
      bare: agg(runs.bare),
      ratio_median: round2(interval.median),
      cpu_ratio_median: round2(median(cpuRatios)),
      ratios,
      ratio_interval: { low: interval.low, high: interval.high, coverage: Math.round(interval.coverage * 1000) / 1000 },
      verdict: verdict(interval, GOAL),
      statements_per_request: round2(
        statements /
          Math.max(
            1,
            runs.service.reduce((n, r) => n + r.requests, 0),
          ),
      ),
    };
  }
  // BENCH_OPS=get (or put): only that operation (to profile it alone); the other reads as empty.
  const ops = (process.env.BENCH_OPS ?? 'get,put').split(',');
  const none: Result = { rps: 0, requests: 0, p50: 0, p99: 0, errors: 0, non2xx: 0, cpu_us: 0, cpu_sys_us: 0 };
  const skip = async (): Promise<Compared> => ({
    service: none,
    bare: none,
    ratio_median: 0,
    cpu_ratio_median: 0,
    ratios: [],
    ratio_interval: null,
    verdict: null,
    statements_per_request: 0,
  });
  const results = {
    get: ops.includes('get') ? await compare('GET') : await skip(),
    put: ops.includes('put') ? await compare('PUT') : await skip(),
  };
  const ratio = (op: 'get' | 'put') => Math.round((results[op].service.rps / results[op].bare.rps) * 100) / 100;
  // bare/service CPU per request: the throughput ratio a CPU-bound process would reach.
  const cpuRatio = (op: 'get' | 'put') =>
    Math.round((results[op].bare.cpu_us / Math.max(1, results[op].service.cpu_us)) * 100) / 100;
  /** `low–high (coverage %)` of an operation's ratio interval, for the table. */
  const shown = (iv: Compared['ratio_interval']) =>
    iv ? `${iv.low}–${iv.high} (${Math.round(iv.coverage * 1000) / 10} %)` : '';
  const rows = (['get', 'put'] as const).flatMap((op) => [
    {
      op: op.toUpperCase(),
      target: 'service /v2/memory/:key',
      ...results[op].service,
      ratio_median: results[op].ratio_median,
      interval: shown(results[op].ratio_interval),
      verdict: results[op].verdict ?? '',
      stmts_per_req: results[op].statements_per_request,
    },
    { op: op.toUpperCase(), target: 'bare route', ...results[op].bare },
  ]);
  console.table(rows);
  console.log(
    JSON.stringify({
      engine: ctx.database.engine,
      connections: CONNECTIONS,
      seconds: SECONDS,
      rounds: ROUNDS,
      get: { ...results.get, ratio: ratio('get'), cpu_ratio: cpuRatio('get') },
      put: { ...results.put, ratio: ratio('put'), cpu_ratio: cpuRatio('put') },
      load: os.loadavg().map(round2),
      goal: GOAL,
    }),
  );
} finally {
  await bare.close();
  await app.close();
}
