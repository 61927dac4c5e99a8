/**
 * Tool-execution overhead (`npm run bench:execute`).
 *
 * Three processes, all on loopback: a tiny upstream API (`GET /fast` → small JSON), the platform
 * (full service: user JWT verification, rate limiter, schema validation of the body, session
 * lookup, registry resolution with decrypted credentials, argument validation, atomic quota
 * count on an `enterprise` subscription, guarded upstream call with signature headers, one-statement
 * execution + usage record, automatic memory hand-off), and this driver running autocannon.
 *
 * In one run, the same upstream is measured directly and through `POST /v1/agents/:id/execute`:
 * - latency at 1 connection (what one agent sees): p50/p99 of both and the added p50;
 * - throughput at BENCH_CONNECTIONS connections: requests/s of both and the ratio.
 * A third baseline, the platform's bare `GET /healthz` (same process, same global hooks: request
 * id, metrics, analytics counters, rate limiter; no auth, no database), shows what the HTTP
 * framework alone costs on this machine. A fourth, the forwarder (`POST /__bench/forward`, added
 * by this benchmark only, never by the service), forwards the JSON body to the upstream with undici
 * and returns its answer: the minimum an execute path does in a Node gateway.
 * Each run also reports the platform process's CPU time per request (user + system, µs), which a
 * loaded machine disturbs much less than requests/s.
 * Goal (issue 18): execute keeps ≥ 25 % of the forwarder's throughput on PostgreSQL (≥ 10 % on
 * PGlite) and adds < 1.0 ms at p50 over it at one connection.
 *
 * Env: BENCH_SECONDS (10 per run), BENCH_CONNECTIONS (16), BENCH_DATABASE_URL (PostgreSQL instead
 * of in-memory PGlite), BENCH_REDIS_URL, BENCH_LOG_LEVEL (warn), BENCH_UPSTREAM_DELAY_MS (0: the
 * upstream answers at once; e.g. 10 for an upstream with a real API's latency), BENCH_ONLY (`execute`:
 * skip the baselines and do not wait for the embeddings), BENCH_PROFILE=<dir> (a CPU profile of the
 * platform's main thread over each execute run: `execute-latency.cpuprofile`, `execute-throughput.cpuprofile`),
 * BENCH_EMBEDDINGS_PROVIDER (unset: the platform's default embedder; `local`), BENCH_DRAIN_TIMEOUT_S (600), BENCH_PLATFORM_NODE_FLAGS (Node flags of the platform child only, e.g. `--max-semi-space-size=2`),
 * BENCH_PGLITE_STORAGE (`memory`, the default: an in-memory PGlite on the platform's main thread; `disk`: an
 * on-disk data directory, as `npm start` opens it — on its own thread, db/pglite-thread.ts — unless BENCH_PGLITE_THREAD=off).
 * CPU per request is reported for the whole platform process (every thread, so the encoder's worker
 * embedding memories in the background counts) and for its main thread alone (event-loop busy time).
 *
 * Automatic memories (issue 18 §1): each execution stores one memory without a vector; the platform
 * embeds them in the background when it has time. After the warm-up and after each execute run the
 * driver waits until that backlog is drained (so no baseline is measured while the encoder works on
 * the previous run's memories) and reports how long it took; at the end, every execution of the
 * bench session must have its memory (`memories_missing` 0, else exit 1).
 */
import { fork, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { Agent, request } from 'undici';

/** The script of the upstream and platform child processes. */
const CHILD = fileURLToPath(new URL('./lib/execute-children.ts', import.meta.url));

// ------------------------------------------------------------------ driver

interface Run {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  /** CPU time (user + system) of the platform process per request, µs (0 for `direct`): all threads, the encoder's worker included. */
  cpu_us?: number;
  /** Busy time of the platform's main thread (event loop) per request, µs. */
  main_us?: number;
}

/**
 * Fork `lib/execute-children.ts` as `args[0]` (`upstream` or `platform`). BENCH_PLATFORM_NODE_FLAGS (space-separated
 * Node/V8 flags, e.g. `--max-semi-space-size=2`) are added to the platform child's only, to measure
 * what a flag of `npm start` costs the execute path without changing the upstream or the load generator.
 */
function spawn(args: string[]): Promise<{ child: ChildProcess; msg: any }> {
  const extra =
    args[0] === 'platform' ? (process.env.BENCH_PLATFORM_NODE_FLAGS ?? '').split(/\s+/).filter(Boolean) : [];
  const child = fork(CHILD, args, {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    execArgv: [...process.execArgv, ...extra],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    child.once('message', (msg) => resolve({ child, msg }));
    child.once('exit', (code) => reject(new Error(`${args[0]} exited with ${code}`)));
  });
}

/**
 * Latency at one connection with microsecond resolution (autocannon reports whole milliseconds):
 * sequential requests over one keep-alive connection for `seconds`.
 */
async function sequential(
  opts: { url: string; method: 'GET' | 'POST'; headers: Record<string, string>; body?: string },
  seconds: number,
): Promise<Run> {
  const dispatcher = new Agent({ connections: 1, keepAliveTimeout: 60_000 });
  const times: number[] = [];
  let non2xx = 0;
  let errors = 0;
  const end = performance.now() + seconds * 1000;
  const started = performance.now();
  while (performance.now() < end) {
    const t = performance.now();
    try {
      const res = await request(opts.url, { method: opts.method, headers: opts.headers, body: opts.body, dispatcher });
      await res.body.arrayBuffer();
      if (res.statusCode < 200 || res.statusCode >= 300) non2xx++;
    } catch {
      errors++;
    }
    times.push(performance.now() - t);
  }
  const elapsed = (performance.now() - started) / 1000;
  await dispatcher.close();
  times.sort((a, b) => a - b);
  const pct = (p: number) => times[Math.min(times.length - 1, Math.floor((p / 100) * times.length))];
  return { rps: times.length / elapsed, p50: pct(50), p99: pct(99), non2xx, errors };
}

async function cannon(opts: autocannon.Options): Promise<Run> {
  const r = await autocannon({ ...opts });
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
  };
}

const children: ChildProcess[] = [];
function stopChildren(): void {
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
}

/** Start the children, measure, print the report; exits 1 when a platform run had failures or a memory is missing. */
async function main(): Promise<void> {
  process.on('exit', stopChildren);
  process.on('uncaughtException', (err) => {
    console.error(err);
    process.exit(1);
  });
  process.on('unhandledRejection', (err) => {
    console.error(err);
    process.exit(1);
  });
  const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
  const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
  const up = await spawn(['upstream']);
  const upstreamUrl = `http://127.0.0.1:${up.msg.port}`;
  const pl = await spawn(['platform', upstreamUrl]);
  const { base, authorization, sessionId, service } = pl.msg as {
    base: string;
    authorization: string;
    sessionId: string;
    service: string;
  };
  const direct = {
    url: `${upstreamUrl}/fast?city=Lisbon&units=metric`,
    method: 'GET' as const,
    headers: { accept: 'application/json', authorization: 'Bearer upstream-secret' },
  };
  const via = {
    url: `${base}/v1/agents/${sessionId}/execute`,
    method: 'POST' as const,
    headers: { authorization, 'content-type': 'application/json' },
    body: JSON.stringify({ service, tool: 'current', arguments: { city: 'Lisbon', units: 'metric' } }),
  };

  // Sanity check and warm-up (JIT, connection pools, validator cache).
  const check = await fetch(via.url, { method: 'POST', headers: via.headers, body: via.body });
  const checked = (await check.json()) as { status?: string };
  if (check.status !== 200 || checked.status !== 'succeeded')
    throw new Error(`execute failed: ${check.status} ${JSON.stringify(checked)}`);
  await cannon({ ...via, connections: CONNECTIONS, duration: 3 });
  await cannon({ ...direct, connections: CONNECTIONS, duration: 2 });

  const bare = { url: `${base}/healthz`, method: 'GET' as const, headers: {} };
  const forward = {
    url: `${base}/__bench/forward`,
    method: 'POST' as const,
    headers: { 'content-type': 'application/json' },
    body: via.body,
  };
  await cannon({ ...forward, connections: CONNECTIONS, duration: 1 });
  const DRAIN_TIMEOUT_S = Number(process.env.BENCH_DRAIN_TIMEOUT_S ?? 600);
  const drains = [] as Array<Awaited<ReturnType<typeof drained>>>;
  // BENCH_ONLY=execute: only the execute runs (to profile the execute path alone with BENCH_PROFILE);
  // the baselines then read as 0 and the ratios are meaningless.
  const only = process.env.BENCH_ONLY === 'execute';
  // What PGlite ran as (BENCH_PGLITE_STORAGE, BENCH_PGLITE_THREAD): in memory on the main thread, or on disk on its own thread.
  const pgliteStorage =
    process.env.BENCH_PGLITE_STORAGE !== 'disk'
      ? 'memory'
      : process.env.BENCH_PGLITE_THREAD === 'off'
        ? 'disk, main thread'
        : 'disk, own thread';
  const skipped: Run = { rps: 0, p50: 0, p99: 0, non2xx: 0, errors: 0 };
  let asked = 0;
  /** Ask the platform child over IPC (`{[kind]: id}` → `{[kind + 'Reply']: id, …}`). */
  const ask = <T>(kind: 'cpu' | 'backlog' | 'profile', payload?: object) =>
    new Promise<T>((resolve) => {
      const id = ++asked;
      const on = (m: Record<string, unknown>) => {
        if (m[`${kind}Reply`] !== id) return;
        pl.child.off('message', on);
        resolve(m as T);
      };
      pl.child.on('message', on);
      pl.child.send({ [kind]: payload ? { id, ...payload } : id });
    });
  const platformCpu = async () => ask<{ us: number; mainUs: number }>('cpu');
  interface Backlog {
    queued: number;
    unembedded: number;
    executions: number;
    memories: number;
    embedded: number;
  }
  /**
   * Wait until the automatic memories of the execute runs so far are all stored and embedded (the
   * background back-fill): the next run is not measured while a backlog is being embedded.
   * @returns the backlog when the load stopped and how long it took to drain, s
   */
  const drained = async (
    phase: string,
  ): Promise<{ phase: string; at_stop: Backlog; drain_s: number; drained: boolean; final: Backlog }> => {
    const t0 = performance.now();
    const atStop = await ask<Backlog>('backlog');
    let b = atStop;
    // BENCH_ONLY (profiling): wait only until the memories are stored, not embedded
    const owed = (x: Backlog) => x.queued > 0 || (!only && x.unembedded > 0);
    while (owed(b) && performance.now() - t0 < DRAIN_TIMEOUT_S * 1000) {
      await new Promise((r) => setTimeout(r, 250));
      b = await ask<Backlog>('backlog');
    }
    const done = !owed(b);
    const pick = ({ queued, unembedded, executions, memories, embedded }: Backlog) => ({
      queued,
      unembedded,
      executions,
      memories,
      embedded,
    });
    const r = {
      phase,
      at_stop: pick(atStop),
      drain_s: Number(((performance.now() - t0) / 1000).toFixed(2)),
      drained: done,
      final: pick(b),
    };
    console.log(
      `  memory backlog after ${phase}: ${atStop.queued} queued + ${atStop.unembedded} without a vector; ${done ? 'drained' : 'NOT drained'} in ${r.drain_s} s (executions ${b.executions}, memories ${b.memories}, embedded ${b.embedded})`,
    );
    return r;
  };
  /** `run` with the platform's CPU per request (µs) over it; `profile`: the name of its CPU profile (BENCH_PROFILE). */
  const measured = async (run: () => Promise<Run>, seconds: number, profile?: string): Promise<Run> => {
    if (profile && process.env.BENCH_PROFILE) await ask('profile', { start: true });
    const before = await platformCpu();
    const r = await run();
    const after = await platformCpu();
    if (profile && process.env.BENCH_PROFILE) await ask('profile', { name: profile });
    const n = Math.max(1, r.rps * seconds);
    return {
      ...r,
      cpu_us: Math.round((after.us - before.us) / n),
      main_us: Math.round((after.mainUs - before.mainUs) / n),
    };
  };
  const seq = async (o: Parameters<typeof sequential>[0], baseline: boolean) =>
    only && baseline
      ? skipped
      : measured(() => sequential(o, SECONDS), SECONDS, baseline ? undefined : 'execute-latency');
  const tp = async (o: autocannon.Options, baseline: boolean) =>
    only && baseline
      ? skipped
      : measured(
          () => cannon({ ...o, connections: CONNECTIONS, duration: SECONDS }),
          SECONDS,
          baseline ? undefined : 'execute-throughput',
        );
  drains.push(await drained('warm-up'));
  const lat = {
    direct: await seq(direct, true),
    bare: await seq(bare, true),
    forwarder: await seq(forward, true),
    platform: await seq(via, false),
  };
  drains.push(await drained('latency run'));
  const tput = {
    direct: await tp(direct, true),
    bare: await tp(bare, true),
    forwarder: await tp(forward, true),
    platform: await tp(via, false),
  };
  drains.push(await drained('throughput run'));
  const last = drains[drains.length - 1].final;

  const row = (name: string, r: Run) =>
    `${name.padEnd(34)} ${r.rps.toFixed(0).padStart(8)} req/s   p50 ${r.p50.toFixed(2).padStart(7)} ms   p99 ${r.p99.toFixed(2).padStart(7)} ms   platform CPU ${String(r.cpu_us ?? 0).padStart(5)} µs/req (main thread ${String(r.main_us ?? 0).padStart(5)})   non-2xx ${r.non2xx}  errors ${r.errors}`;
  const addedP50 = lat.platform.p50 - lat.direct.p50;
  const ratio = tput.platform.rps / tput.direct.rps;
  const addedP50Fwd = lat.platform.p50 - lat.forwarder.p50;
  const ratioFwd = tput.platform.rps / tput.forwarder.rps;
  const delay = Number(process.env.BENCH_UPSTREAM_DELAY_MS ?? 0);
  console.log(
    `\nexecute overhead — ${os.cpus().length} CPUs, ${SECONDS}s per run, database: ${process.env.BENCH_DATABASE_URL ? 'postgres' : `pglite (${pgliteStorage})`}, upstream delay ${delay} ms`,
  );
  console.log(`latency, 1 connection, sequential requests (µs resolution)`);
  console.log(row('  direct GET /fast', lat.direct));
  console.log(row('  platform bare GET /healthz', lat.bare));
  console.log(row('  forwarder POST (undici, no auth/db)', lat.forwarder));
  console.log(row('  via POST /v1/agents/:id/execute', lat.platform));
  console.log(`throughput, ${CONNECTIONS} connections (autocannon; latencies in whole ms)`);
  console.log(row('  direct GET /fast', tput.direct));
  console.log(row('  platform bare GET /healthz', tput.bare));
  console.log(row('  forwarder POST (undici, no auth/db)', tput.forwarder));
  console.log(row('  via POST /v1/agents/:id/execute', tput.platform));
  console.log(
    `added p50 latency vs direct: ${addedP50.toFixed(2)} ms, vs forwarder: ${addedP50Fwd.toFixed(2)} ms (goal < 1.0)`,
  );
  console.log(
    `throughput: ${(ratio * 100).toFixed(1)} % of direct, ${(ratioFwd * 100).toFixed(1)} % of the forwarder (goal >= 25 % PostgreSQL, >= 10 % PGlite)`,
  );
  const cpuRatio = (tput.forwarder.cpu_us ?? 0) / Math.max(1, tput.platform.cpu_us ?? 1);
  console.log(
    `platform CPU per request at ${CONNECTIONS} connections: forwarder ${tput.forwarder.cpu_us} µs, execute ${tput.platform.cpu_us} µs (forwarder/execute ${(cpuRatio * 100).toFixed(1)} %: the throughput ratio a CPU-bound platform would reach)`,
  );
  console.log(
    JSON.stringify({
      bench: 'execute',
      upstream_delay_ms: delay,
      database: process.env.BENCH_DATABASE_URL ? 'postgres' : 'pglite',
      ...(process.env.BENCH_DATABASE_URL ? {} : { pglite_storage: pgliteStorage }),
      loadavg: os.loadavg().map((l) => Number(l.toFixed(2))),
      latency: {
        direct: lat.direct,
        bare_route: lat.bare,
        forwarder: lat.forwarder,
        platform: lat.platform,
        added_p50_ms: Number(addedP50.toFixed(3)),
        added_p50_vs_forwarder_ms: Number(addedP50Fwd.toFixed(3)),
      },
      throughput: {
        connections: CONNECTIONS,
        direct: tput.direct,
        bare_route: tput.bare,
        forwarder: tput.forwarder,
        platform: tput.platform,
        ratio: Number(ratio.toFixed(3)),
        ratio_vs_forwarder: Number(ratioFwd.toFixed(3)),
        cpu_ratio_vs_forwarder: Number(cpuRatio.toFixed(3)),
      },
      embeddings: process.env.BENCH_EMBEDDINGS_PROVIDER ?? 'default',
      platform_node_flags: process.env.BENCH_PLATFORM_NODE_FLAGS ?? '',
      memory_backlog: drains,
      memories_missing: last.executions - last.memories,
    }),
  );
  stopChildren();
  if (last.executions !== last.memories)
    console.log(`MEMORIES MISSING: ${last.executions} executions, ${last.memories} execution memories`);
  const failed =
    lat.platform.non2xx +
    tput.platform.non2xx +
    lat.platform.errors +
    tput.platform.errors +
    Math.abs(last.executions - last.memories);
  process.exit(failed ? 1 : 0);
}

await main();
