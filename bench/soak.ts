/**
 * Soak (`npm run bench:soak`, issue 11 §2 long variants): a mixed load at half of the measured peak
 * for a long time, watching the platform's memory.
 *
 * Two processes on loopback: the platform (child, full service) and this driver, which also serves
 * a tiny upstream API for tool executions. The mix, one request of each per round on every
 * connection: `POST /v1/agents/:id/execute` (a tool call through the upstream), `POST /memory` (a
 * memory add), `GET /search/tools?q=…`, `GET /v1/auth/me`.
 *
 * 1. Peak: the mix at BENCH_CONNECTIONS connections for BENCH_PEAK_SECONDS → requests/s.
 * 2. Soak: the mix at half that rate (autocannon `overallRate`) for SOAK_SECONDS (default 600),
 *    sampling the platform's RSS and V8 heap (`process.memoryUsage()`, over IPC) every
 *    SOAK_SAMPLE_SECONDS (5).
 * Reported: the least-squares slope of RSS and heap (MB per minute) over the samples after the
 * first fifth (warm-up: caches, JIT, pools fill), whether RSS is flat (|slope| × duration < 10 % of
 * the mean RSS, and < 1 MB/min), latency p50/p99 and non-2xx/error counts; the last line is JSON.
 *
 * Env: SOAK_SECONDS (600), SOAK_SAMPLE_SECONDS (5), BENCH_PEAK_SECONDS (10), BENCH_CONNECTIONS (8),
 * BENCH_DATABASE_URL (PostgreSQL instead of in-memory PGlite), BENCH_REDIS_URL.
 */
import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

const SELF = fileURLToPath(import.meta.url);
const role = process.argv[2];
if (role) process.on('disconnect', () => process.exit(0));

/** One memory sample of the platform process, MB, at `t` seconds since the soak started. */
interface Sample {
  t: number;
  rss: number;
  heap: number;
}

// ------------------------------------------------------------------ child: platform

if (role === 'platform') {
  const upstreamUrl = process.argv[3];
  const { startBenchApp, benchUser } = await import('./lib/app.js');
  const { setServiceStatus } = await import('../src/modules/registry/service.js');
  const { app, ctx, base } = await startBenchApp({
    REDIS_URL: process.env.BENCH_REDIS_URL,
    DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'ap-bench-soak-')),
    ALLOW_LOOPBACK_UPSTREAMS: 'on',
    // The pro plan without limits: ten minutes of executions must not run into the daily quota.
    QUOTA_PRO_DAY: 'unlimited',
    QUOTA_PRO_MONTH: 'unlimited',
  });
  process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
  const call = async (method: 'GET' | 'POST', url: string, headers: Record<string, string>, payload?: object) => {
    const res = await app.inject({ method, url, headers, payload });
    if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
    return res.json();
  };
  const owner = (await benchUser(app, 'soak-owner@example.test')).headers;
  const user = (await benchUser(app, 'soak-user@example.test')).headers;
  const svc = await call('POST', '/owner/services', owner, {
    name: `soak-weather-${Date.now().toString(36)}`,
    description: 'soak upstream: current weather by city',
    base_url: upstreamUrl,
    tools: [
      {
        name: 'current',
        description: 'Current weather',
        method: 'GET',
        path: '/fast',
        input_schema: {
          type: 'object',
          properties: { city: { type: 'string', minLength: 1 } },
          required: ['city'],
          additionalProperties: false,
        },
      },
    ],
  });
  await setServiceStatus(ctx, svc.id, 'published');
  await call('POST', '/subscriptions', user, { service_id: svc.id, plan: 'pro' });
  const session = await call('POST', '/v1/agents', user, { name: 'soak' });
  process.on('message', (m: { sample?: boolean }) => {
    if (!m.sample) return;
    const { rss, heapUsed } = process.memoryUsage();
    process.send!({ rss: rss / 1e6, heap: heapUsed / 1e6 });
  });
  process.send!({ base, authorization: user.authorization, sessionId: session.id, service: svc.name });
}

// ------------------------------------------------------------------ driver

/** Least-squares slope of `ys` over `xs`. */
function slope(xs: number[], ys: number[]): number {
  const n = xs.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (xs[i] - mx) * (ys[i] - my);
    den += (xs[i] - mx) ** 2;
  }
  return den ? num / den : 0;
}

const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;

if (!role) {
  const SOAK_S = Number(process.env.SOAK_SECONDS ?? 600);
  const SAMPLE_S = Number(process.env.SOAK_SAMPLE_SECONDS ?? 5);
  const PEAK_S = Number(process.env.BENCH_PEAK_SECONDS ?? 10);
  const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 8);

  const body = JSON.stringify({ ok: true, temperature: 21.5, unit: 'C', city: 'Lisbon' });
  const upstream = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(body));
  });
  upstream.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const upstreamUrl = `http://127.0.0.1:${(upstream.address() as { port: number }).port}`;

  const child: ChildProcess = fork(SELF, ['platform', upstreamUrl], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  process.on('exit', () => child.kill('SIGTERM'));
  const setup = await new Promise<{ base: string; authorization: string; sessionId: string; service: string }>(
    (resolve, reject) => {
      child.once('message', (m) => resolve(m as never));
      child.once('exit', (code) => reject(new Error(`platform exited with ${code}`)));
    },
  );
  const sample = () =>
    new Promise<{ rss: number; heap: number }>((resolve) => {
      child.once('message', (m) => resolve(m as { rss: number; heap: number }));
      child.send({ sample: true });
    });

  const json = { authorization: setup.authorization, 'content-type': 'application/json' };
  let n = 0;
  const requests: autocannon.Request[] = [
    {
      method: 'POST',
      path: `/v1/agents/${setup.sessionId}/execute`,
      headers: json,
      body: JSON.stringify({ service: setup.service, tool: 'current', arguments: { city: 'Lisbon' } }),
    },
    // A distinct memory each time (the same text would be the same embedding and row shape).
    {
      method: 'POST',
      path: '/memory',
      headers: json,
      setupRequest: (req) => ({
        ...req,
        body: JSON.stringify({ content: `soak note ${n++}: the weather in Lisbon was 21.5 C at ${Date.now()}` }),
      }),
    },
    { method: 'GET', path: '/search/tools?q=weather%20lisbon', headers: { authorization: setup.authorization } },
    { method: 'GET', path: '/v1/auth/me', headers: { authorization: setup.authorization } },
  ];
  const run = (opts: Partial<autocannon.Options>) =>
    autocannon({ url: setup.base, connections: CONNECTIONS, requests, ...opts });

  const peak = await run({ duration: PEAK_S });
  const rate = Math.max(1, Math.floor(peak.requests.average / 2));
  console.log(
    `soak — ${os.cpus().length} CPUs, load ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}, database: ${process.env.BENCH_DATABASE_URL ? 'postgres' : 'pglite (in memory)'}`,
  );
  console.log(
    `peak ${round(peak.requests.average, 0)} req/s (non-2xx ${peak.non2xx}); soaking at ${rate} req/s for ${SOAK_S} s`,
  );

  const samples: Sample[] = [];
  const t0 = performance.now();
  const sampler = setInterval(() => {
    void sample().then((s) => {
      const t = (performance.now() - t0) / 1000;
      samples.push({ t, rss: s.rss, heap: s.heap });
      console.log(`  t=${t.toFixed(0)} s  rss ${s.rss.toFixed(1)} MB  heap ${s.heap.toFixed(1)} MB`);
    });
  }, SAMPLE_S * 1000);
  const soak = await run({ duration: SOAK_S, overallRate: rate });
  clearInterval(sampler);

  const steady = samples.filter((s) => s.t >= SOAK_S / 5);
  const minutes = steady.map((s) => s.t / 60);
  const rssSlope =
    steady.length > 2
      ? slope(
          minutes,
          steady.map((s) => s.rss),
        )
      : NaN;
  const heapSlope =
    steady.length > 2
      ? slope(
          minutes,
          steady.map((s) => s.heap),
        )
      : NaN;
  const meanRss = steady.reduce((a, s) => a + s.rss, 0) / Math.max(1, steady.length);
  const flat = Math.abs(rssSlope) < 1 && Math.abs(rssSlope) * (SOAK_S / 60) < 0.1 * meanRss;
  console.log(
    `soak: ${round(soak.requests.average, 0)} req/s, p50 ${soak.latency.p50} ms, p99 ${soak.latency.p99} ms, non-2xx ${soak.non2xx}, errors ${soak.errors + soak.timeouts}; ` +
      `RSS slope ${round(rssSlope)} MB/min (mean ${round(meanRss, 0)} MB) → ${flat ? 'flat' : 'GROWING'}, heap slope ${round(heapSlope)} MB/min`,
  );
  console.log(
    JSON.stringify({
      bench: 'soak',
      date: new Date().toISOString(),
      loadavg: os.loadavg().map((l) => round(l)),
      database: process.env.BENCH_DATABASE_URL ? 'postgres' : 'pglite',
      seconds: SOAK_S,
      peak_rps: round(peak.requests.average, 0),
      rate_rps: rate,
      achieved_rps: round(soak.requests.average, 0),
      p50_ms: soak.latency.p50,
      p99_ms: soak.latency.p99,
      non2xx: soak.non2xx,
      errors: soak.errors + soak.timeouts,
      rss_mb: {
        first: round(samples[0]?.rss ?? NaN, 1),
        last: round(samples.at(-1)?.rss ?? NaN, 1),
        mean_steady: round(meanRss, 1),
      },
      rss_slope_mb_per_min: round(rssSlope),
      heap_slope_mb_per_min: round(heapSlope),
      rss_flat: flat,
      samples: samples.length,
    }),
  );
  child.kill('SIGTERM');
  upstream.close();
  process.exit(0);
}
