/**
 * Invoke latency of deployed agents, cold and warm, in the same run (`npm run bench:deployments`).
 *
 * Starts the service on free loopback ports (in-memory PGlite, or PostgreSQL at BENCH_DATABASE_URL;
 * in-process queue, sandbox under a temporary DATA_DIR): twice with SANDBOX_WARM_PER_VERSION=0
 * (every invocation a cold start: spawn + permission model + module load + handler), interleaved
 * round by round — `direct_spawn` (SANDBOX_FORK_SERVER=off, SANDBOX_PROVISIONED=off: the server
 * forks each process itself while the caller waits, as before) and the default (fork server, and
 * a provisioned environment per version started ahead) — then twice with the default warm pool.
 * For each, with a trivial echo handler:
 *  1. N sequential synchronous invocations, end to end over HTTP and the sandbox's `duration_ms`;
 *  2. autocannon for a few seconds with C connections (throughput under SANDBOX_CONCURRENCY).
 * Then, warm only, a handler that executes one tool (`context.tools.execute`) against a loopback
 * upstream, and one that `fetch`es a loopback upstream through its egress proxy: N sequential.
 *
 * A/B in the same run: the warm measurements run on three apps side by side, interleaved round by
 * round — `record_at_start` (SANDBOX_RECORD_DEFER_MS=0: the invocation record is inserted when the
 * run starts and updated when it ends, as before), `warm_pool` (the default: one write when a
 * short synchronous invocation ends) and `unsealed` (SANDBOX_ISOLATION=off, SANDBOX_FREEZE=off: no
 * bubblewrap, no freezing between invocations, as before). The cold measurements interleave
 * `unsealed` with the other two as well. Medians over the rounds.
 * Prints one JSON object. Env: BENCH_N (default 50), BENCH_CONNECTIONS (8), BENCH_SECONDS (5),
 * BENCH_ROUNDS (5), BENCH_DATABASE_URL (PostgreSQL; default in-memory PGlite).
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { create } from 'tar';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { probeNetworkIsolation } from '../src/sandbox/runner.js';

const N = Number(process.env.BENCH_N ?? 50);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 8);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 5));
/** PostgreSQL instead of the in-memory PGlite (every app of the run on this database; their accounts are distinct). */
const DATABASE_URL = process.env.BENCH_DATABASE_URL;

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] * 10) / 10;
}

async function tgz(files: Record<string, string>): Promise<Buffer> {
  const src = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-bench-src-'));
  try {
    for (const [name, body] of Object.entries(files)) fs.writeFileSync(path.join(src, name), body);
    const chunks: Buffer[] = [];
    for await (const c of create({ gzip: true, cwd: src, portable: true }, Object.keys(files)) as AsyncIterable<Buffer>)
      chunks.push(c);
    return Buffer.concat(chunks);
  } finally {
    fs.rmSync(src, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => pct(xs, 50);

/** One app with `env` overrides, an account, and helpers to deploy and invoke. */
async function start(name: string, env: Record<string, string>) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-bench-dep-'));
  fs.chmodSync(dataDir, 0o755);
  const config = loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    ...(DATABASE_URL ? { DATABASE_URL } : { DATABASE_IN_MEMORY: 'on' }),
    DATA_DIR: dataDir,
    RATE_LIMIT_USER: '1000000',
    SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
    ALLOW_LOOPBACK_UPSTREAMS: 'on',
    PORT: '0',
    HOST: '127.0.0.1',
    ...env,
  });
  const { app } = await buildApp(config);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  const json = async (method: string, url: string, headers: Record<string, string>, body?: unknown): Promise<any> => {
    const res = await fetch(`${base}${url}`, {
      method,
      headers: { ...headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
    if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  const tokens = await json('POST', '/auth/test', {}, { email: `bench-${name}-${Date.now()}@example.test` });
  const auth = { authorization: `Bearer ${tokens.access_token}` };
  const deployed = async (agentName: string, source: string, fields: Record<string, string> = {}) => {
    const agent = await json('POST', '/v2/agents', auth, { name: agentName });
    const form = new FormData();
    form.append('artifact', new Blob([new Uint8Array(await tgz({ 'index.mjs': source }))]), 'agent.tgz');
    for (const [k, v] of Object.entries(fields)) form.append(k, v);
    const dep = await fetch(`${base}/v2/agents/${agent.id}/deploy`, { method: 'POST', headers: auth, body: form });
    if (dep.status !== 202) throw new Error(`deploy: ${dep.status} ${await dep.text()}`);
    for (;;) {
      const list = await json('GET', `/v2/agents/${agent.id}/deployments`, auth);
      if (list.data[0].status === 'active') return agent as { id: string };
      if (list.data[0].status === 'failed') throw new Error(`prepare failed: ${list.data[0].failure_reason}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  /** `n` sequential synchronous invocations: end-to-end HTTP times and the sandbox's duration_ms. */
  const sequential = async (agentId: string, input: unknown, n: number) => {
    const httpMs: number[] = [];
    const sandbox: number[] = [];
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      const inv = await json('POST', `/v2/agents/${agentId}/invoke`, auth, { input });
      httpMs.push(performance.now() - t0);
      if (inv.status !== 'succeeded') throw new Error(`invoke ${i}: ${JSON.stringify(inv.error)}`);
      sandbox.push(inv.duration_ms);
    }
    return { httpMs, sandbox };
  };
  const load = async (agentId: string, seconds: number) => {
    const r = await autocannon({
      url: `${base}/v2/agents/${agentId}/invoke`,
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ input: { x: 1 } }),
      connections: CONNECTIONS,
      duration: seconds,
    });
    return {
      rps: r.requests.average,
      p50_ms: r.latency.p50,
      p99_ms: r.latency.p99,
      non2xx: r.non2xx,
      errors: r.errors,
    };
  };
  const close = async () => {
    await app.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  return { json, auth, deployed, sequential, load, close };
}

type Bench = Awaited<ReturnType<typeof start>>;
const summary = (xs: { httpMs: number[]; sandbox: number[] }) => ({
  http_ms: { p50: pct(xs.httpMs, 50), p95: pct(xs.httpMs, 95), max: pct(xs.httpMs, 100) },
  sandbox_duration_ms: { p50: pct(xs.sandbox, 50), p95: pct(xs.sandbox, 95) },
});
/** Medians of `rounds` autocannon runs of SECONDS / rounds each. */
const loadOut = (
  runs: Array<{ rps: number; p50_ms: number; p99_ms: number; non2xx: number; errors: number }>,
  rounds: number,
) => ({
  connections: CONNECTIONS,
  seconds: Math.max(1, Math.round(SECONDS / rounds)) * rounds,
  rps: median(runs.map((l) => l.rps)),
  p50_ms: median(runs.map((l) => l.p50_ms)),
  p99_ms: median(runs.map((l) => l.p99_ms)),
  non2xx: runs.reduce((n, l) => n + l.non2xx, 0),
  errors: runs.reduce((n, l) => n + l.errors, 0),
});
const merge = (a: { httpMs: number[]; sandbox: number[] }, b: { httpMs: number[]; sandbox: number[] }) => ({
  httpMs: [...a.httpMs, ...b.httpMs],
  sandbox: [...a.sandbox, ...b.sandbox],
});
const ECHO = 'export default async (input) => ({ echo: input });\n';

const upstream = http.createServer((_req, res) =>
  res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'),
);
await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
const upstreamPort = (upstream.address() as { port: number }).port;

// 1. Every invocation cold, A/B interleaved: processes spawned by the server itself (as before) and by the fork server.
const coldVariants: Array<[string, Bench]> = [
  [
    'direct_spawn',
    await start('cold-a', { SANDBOX_WARM_PER_VERSION: '0', SANDBOX_FORK_SERVER: 'off', SANDBOX_PROVISIONED: 'off' }),
  ],
  ['fork_server', await start('cold-b', { SANDBOX_WARM_PER_VERSION: '0' })],
  [
    'unsealed',
    await start('cold-c', { SANDBOX_WARM_PER_VERSION: '0', SANDBOX_ISOLATION: 'off', SANDBOX_FREEZE: 'off' }),
  ],
];
const coldRuns: Record<
  string,
  { agent: string; seq: { httpMs: number[]; sandbox: number[] }; load: Array<Awaited<ReturnType<Bench['load']>>> }
> = {};
for (const [name, b] of coldVariants)
  coldRuns[name] = { agent: (await b.deployed('bench', ECHO)).id, seq: { httpMs: [], sandbox: [] }, load: [] };
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, b] of round % 2 ? [...coldVariants].reverse() : coldVariants)
    coldRuns[name].seq = merge(
      coldRuns[name].seq,
      await b.sequential(coldRuns[name].agent, { i: 1 }, Math.max(1, Math.ceil(N / ROUNDS))),
    );
}
for (let round = 0; round < 2; round++) {
  for (const [name, b] of round % 2 ? [...coldVariants].reverse() : coldVariants)
    coldRuns[name].load.push(await b.load(coldRuns[name].agent, Math.max(1, Math.round(SECONDS / 2))));
}
for (const [, b] of coldVariants) await b.close();
const coldOut = (name: string) => ({
  sequential_invokes: coldRuns[name].seq.httpMs.length,
  ...summary(coldRuns[name].seq),
  autocannon: loadOut(coldRuns[name].load, 2),
});
const cold = coldOut('fork_server');

// 2. Warm, A/B interleaved: the record written at the start (before) and once at the end (after).
const variants: Array<[string, Bench]> = [
  ['record_at_start', await start('a', { SANDBOX_RECORD_DEFER_MS: '0' })],
  ['warm_pool', await start('b', {})],
  ['unsealed', await start('c', { SANDBOX_ISOLATION: 'off', SANDBOX_FREEZE: 'off' })],
];
const perRound = Math.max(1, Math.ceil(N / ROUNDS));
const results: Record<
  string,
  {
    echo: { httpMs: number[]; sandbox: number[] };
    tool: { httpMs: number[]; sandbox: number[] };
    load: Array<Awaited<ReturnType<Bench['load']>>>;
  }
> = {};
const agents: Record<string, { echo: string; tool: string }> = {};
for (const [name, b] of variants) {
  const echo = await b.deployed('bench', ECHO);
  const svc = await b.json('POST', '/owner/services', b.auth, {
    name: `bench-svc-${name.replace(/_/g, '-')}-${Date.now()}`,
    display_name: 'Bench',
    description: 'bench',
    base_url: `http://127.0.0.1:${upstreamPort}`,
    tools: [{ name: 'ping', description: 'ping', method: 'GET', path: '/ping', input_schema: { type: 'object' } }],
  });
  const tool = await b.deployed(
    'bench-tool',
    `export default async (input, context) => (await context.tools.execute(${JSON.stringify(svc.name)}, 'ping', {})).output;\n`,
  );
  await b.json('POST', `/v2/agents/${tool.id}/tools/subscribe`, b.auth, { service: svc.name });
  agents[name] = { echo: echo.id, tool: tool.id };
  results[name] = { echo: { httpMs: [], sandbox: [] }, tool: { httpMs: [], sandbox: [] }, load: [] };
  await b.sequential(echo.id, {}, 3); // warm the pool and the app
  await b.sequential(tool.id, {}, 3);
}
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, b] of round % 2 ? [...variants].reverse() : variants) {
    results[name].echo = merge(results[name].echo, await b.sequential(agents[name].echo, { i: 1 }, perRound));
    results[name].tool = merge(results[name].tool, await b.sequential(agents[name].tool, {}, perRound));
  }
}
const loadRounds = 2;
for (let round = 0; round < loadRounds; round++) {
  for (const [name, b] of round % 2 ? [...variants].reverse() : variants)
    results[name].load.push(await b.load(agents[name].echo, Math.max(1, Math.round(SECONDS / loadRounds))));
}
const warmOut = (name: string) => ({
  sequential_invokes: results[name].echo.httpMs.length,
  ...summary(results[name].echo),
  autocannon: loadOut(results[name].load, loadRounds),
  one_tool_call: summary(results[name].tool),
});

// 3. Egress: fetch() of a loopback upstream through the environment's proxy (warm, default settings).
const [, after] = variants[1];
const fetcher = await after.deployed(
  'bench-egress',
  `export default async () => (await fetch('http://127.0.0.1:${upstreamPort}/')).json();\n`,
  { egress: JSON.stringify([`127.0.0.1:${upstreamPort}`]) },
);
await after.sequential(fetcher.id, {}, 3);
const egress = summary(await after.sequential(fetcher.id, {}, N));
for (const [, b] of variants) await b.close();
upstream.close();

const warm = warmOut('warm_pool');
console.log(
  JSON.stringify(
    {
      node: process.version,
      cpus: os.cpus().length,
      loadavg_1m: Math.round(os.loadavg()[0] * 100) / 100,
      database: DATABASE_URL ? 'postgresql' : 'pglite',
      network_isolated: !!probeNetworkIsolation(),
      cold_every_invocation: cold,
      cold_every_invocation_direct_spawn: coldOut('direct_spawn'),
      cold_every_invocation_unsealed: coldOut('unsealed'),
      warm_pool: { ...warm, one_fetch_through_egress_proxy: egress },
      warm_pool_record_at_start: warmOut('record_at_start'),
      warm_pool_unsealed: warmOut('unsealed'),
      targets: {
        warm_p50_under_5_ms: warm.http_ms.p50 < 5,
        warm_500_rps_at_8_connections: warm.autocannon.rps >= 500,
        cold_p50_at_most_60_ms: cold.http_ms.p50 <= 60,
        warm_tool_p50_under_10_ms: warm.one_tool_call.http_ms.p50 < 10,
      },
    },
    null,
    2,
  ),
);
