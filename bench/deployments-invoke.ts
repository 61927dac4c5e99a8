/**
 * Invoke latency of deployed agents, cold and warm, in the same run (`npm run bench:deployments`).
 *
 * Starts the service twice on free loopback ports (in-memory PGlite, in-process queue, sandbox
 * under a temporary DATA_DIR): once with SANDBOX_WARM_PER_VERSION=0 (every invocation a cold start:
 * spawn + permission model + module load + handler — the behaviour before warm environments) and
 * once with the default warm pool. For each, with a trivial echo handler:
 *  1. N sequential synchronous invocations, end to end over HTTP and the sandbox's `duration_ms`;
 *  2. autocannon for a few seconds with C connections (throughput under SANDBOX_CONCURRENCY).
 * Then, warm only, a handler that executes one tool (`context.tools.execute`) against a loopback
 * upstream: N sequential invocations.
 * Prints one JSON object. Env: BENCH_N (default 50), BENCH_CONNECTIONS (8), BENCH_SECONDS (5).
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

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] * 10) / 10;
}

async function tgz(files: Record<string, string>): Promise<Buffer> {
  const src = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-bench-src-'));
  try {
    for (const [name, body] of Object.entries(files)) fs.writeFileSync(path.join(src, name), body);
    const chunks: Buffer[] = [];
    for await (const c of create({ gzip: true, cwd: src, portable: true }, Object.keys(files)) as AsyncIterable<Buffer>) chunks.push(c);
    return Buffer.concat(chunks);
  } finally {
    fs.rmSync(src, { recursive: true, force: true });
  }
}

/** One app with `env` overrides: the measurements of one mode. */
async function measure(mode: 'cold' | 'warm', env: Record<string, string>): Promise<Record<string, unknown>> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-bench-dep-'));
  const config = loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    DATABASE_IN_MEMORY: 'on',
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
    const res = await fetch(`${base}${url}`, { method, headers: { ...headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) }, body: body !== undefined ? JSON.stringify(body) : undefined });
    if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  const upstream = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  try {
    const tokens = await json('POST', '/auth/test', {}, { email: `bench-${mode}-${Date.now()}@example.test` });
    const auth = { authorization: `Bearer ${tokens.access_token}` };
    const deployed = async (name: string, source: string) => {
      const agent = await json('POST', '/v2/agents', auth, { name });
      const form = new FormData();
      form.append('artifact', new Blob([new Uint8Array(await tgz({ 'index.mjs': source }))]), 'agent.tgz');
      const dep = await fetch(`${base}/v2/agents/${agent.id}/deploy`, { method: 'POST', headers: auth, body: form });
      if (dep.status !== 202) throw new Error(`deploy: ${dep.status} ${await dep.text()}`);
      for (;;) {
        const list = await json('GET', `/v2/agents/${agent.id}/deployments`, auth);
        if (list.data[0].status === 'active') return agent;
        if (list.data[0].status === 'failed') throw new Error(`prepare failed: ${list.data[0].failure_reason}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    const sequential = async (agentId: string, input: unknown) => {
      const httpMs: number[] = [];
      const sandbox: number[] = [];
      for (let i = 0; i < N; i++) {
        const t0 = performance.now();
        const inv = await json('POST', `/v2/agents/${agentId}/invoke`, auth, { input });
        httpMs.push(performance.now() - t0);
        if (inv.status !== 'succeeded') throw new Error(`invoke ${i}: ${JSON.stringify(inv.error)}`);
        sandbox.push(inv.duration_ms);
      }
      return { http_ms: { p50: pct(httpMs, 50), p95: pct(httpMs, 95), max: pct(httpMs, 100) }, sandbox_duration_ms: { p50: pct(sandbox, 50), p95: pct(sandbox, 95) } };
    };

    const echo = await deployed('bench', 'export default async (input) => ({ echo: input });\n');
    const seq = await sequential(echo.id, { i: 1 });
    const load = await autocannon({
      url: `${base}/v2/agents/${echo.id}/invoke`,
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ input: { x: 1 } }),
      connections: CONNECTIONS,
      duration: SECONDS,
    });
    const out: Record<string, unknown> = {
      sequential_invokes: N,
      ...seq,
      autocannon: { connections: CONNECTIONS, seconds: SECONDS, rps: load.requests.average, p50_ms: load.latency.p50, p99_ms: load.latency.p99, non2xx: load.non2xx, errors: load.errors },
    };
    if (mode === 'warm') {
      const port = (upstream.address() as { port: number }).port;
      const svc = await json('POST', '/owner/services', auth, { name: `bench-svc-${Date.now()}`, display_name: 'Bench', description: 'bench', base_url: `http://127.0.0.1:${port}`, tools: [{ name: 'ping', description: 'ping', method: 'GET', path: '/ping', input_schema: { type: 'object' } }] });
      const toolAgent = await deployed('bench-tool', `export default async (input, context) => (await context.tools.execute(${JSON.stringify(svc.name)}, 'ping', {})).output;\n`);
      await json('POST', `/v2/agents/${toolAgent.id}/tools/subscribe`, auth, { service: svc.name });
      out.one_tool_call = await sequential(toolAgent.id, {});
    }
    return out;
  } finally {
    upstream.close();
    await app.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

const cold = await measure('cold', { SANDBOX_WARM_PER_VERSION: '0' });
const warm = await measure('warm', {});
console.log(
  JSON.stringify(
    { node: process.version, cpus: os.cpus().length, loadavg_1m: Math.round(os.loadavg()[0] * 100) / 100, network_isolated: !!probeNetworkIsolation(), cold_every_invocation: cold, warm_pool: warm },
    null,
    2,
  ),
);
