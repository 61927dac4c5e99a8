/**
 * Cold-invoke latency of deployed agents (`npm run bench:deployments`).
 *
 * Starts the service on a free loopback port (in-memory PGlite, in-process queue, sandbox under a
 * temporary DATA_DIR), deploys a small echo handler, then:
 *  1. N sequential synchronous invocations: every one is a cold start (a new sandboxed Node process:
 *     spawn + permission model + module load + handler), measured end to end over HTTP and as the
 *     sandbox's own `duration_ms`;
 *  2. autocannon for a few seconds with C connections, for throughput under SANDBOX_CONCURRENCY.
 * Prints one JSON object. Env: BENCH_N (default 50), BENCH_CONNECTIONS (4), BENCH_SECONDS (5).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { create } from 'tar';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { probeNetworkIsolation } from '../src/sandbox/runner.js';

const N = Number(process.env.BENCH_N ?? 50);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 4);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] * 10) / 10;
}

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-bench-dep-'));
const config = loadConfig({
  NODE_ENV: 'test',
  LOG_LEVEL: 'silent',
  DATABASE_IN_MEMORY: 'on',
  DATA_DIR: dataDir,
  RATE_LIMIT_USER: '1000000',
  SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
  PORT: '0',
  HOST: '127.0.0.1',
});
const { app } = await buildApp(config);
await app.listen({ port: 0, host: '127.0.0.1' });
const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;

async function json(method: string, url: string, headers: Record<string, string>, body?: unknown): Promise<any> {
  const res = await fetch(`${base}${url}`, { method, headers: { ...headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) }, body: body !== undefined ? JSON.stringify(body) : undefined });
  if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${await res.text()}`);
  return res.json();
}

const src = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-bench-src-'));
try {
  const tokens = await json('POST', '/auth/test', {}, { email: `bench-${Date.now()}@example.test` });
  const auth = { authorization: `Bearer ${tokens.access_token}` };
  const agent = await json('POST', '/v2/agents', auth, { name: 'bench' });

  fs.writeFileSync(path.join(src, 'index.mjs'), 'export default async (input) => ({ echo: input });\n');
  const chunks: Buffer[] = [];
  for await (const c of create({ gzip: true, cwd: src, portable: true }, ['index.mjs']) as AsyncIterable<Buffer>) chunks.push(c);
  const form = new FormData();
  form.append('artifact', new Blob([Buffer.concat(chunks)]), 'agent.tgz');
  const dep = await fetch(`${base}/v2/agents/${agent.id}/deploy`, { method: 'POST', headers: auth, body: form });
  if (dep.status !== 202) throw new Error(`deploy: ${dep.status} ${await dep.text()}`);
  for (;;) {
    const list = await json('GET', `/v2/agents/${agent.id}/deployments`, auth);
    if (list.data[0].status === 'active') break;
    if (list.data[0].status === 'failed') throw new Error(`prepare failed: ${list.data[0].failure_reason}`);
    await new Promise((r) => setTimeout(r, 20));
  }

  const http: number[] = [];
  const sandbox: number[] = [];
  for (let i = 0; i < N; i++) {
    const t0 = performance.now();
    const inv = await json('POST', `/v2/agents/${agent.id}/invoke`, auth, { input: { i } });
    http.push(performance.now() - t0);
    if (inv.status !== 'succeeded') throw new Error(`invoke ${i}: ${JSON.stringify(inv.error)}`);
    sandbox.push(inv.duration_ms);
  }

  const load = await autocannon({
    url: `${base}/v2/agents/${agent.id}/invoke`,
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ input: { x: 1 } }),
    connections: CONNECTIONS,
    duration: SECONDS,
  });

  console.log(
    JSON.stringify(
      {
        node: process.version,
        cpus: os.cpus().length,
        loadavg_1m: Math.round(os.loadavg()[0] * 100) / 100,
        network_isolated: !!probeNetworkIsolation(),
        sequential_cold_invokes: N,
        http_ms: { p50: pct(http, 50), p95: pct(http, 95), max: pct(http, 100) },
        sandbox_duration_ms: { p50: pct(sandbox, 50), p95: pct(sandbox, 95) },
        autocannon: { connections: CONNECTIONS, seconds: SECONDS, rps: load.requests.average, p50_ms: load.latency.p50, p99_ms: load.latency.p99, non2xx: load.non2xx, errors: load.errors },
      },
      null,
      2,
    ),
  );
} finally {
  await app.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
  fs.rmSync(src, { recursive: true, force: true });
}
