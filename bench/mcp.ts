/**
 * MCP overhead (`npm run bench:mcp`): `execute_tool` over MCP (`POST /mcp`, JSON-RPC `tools/call`,
 * stateless SDK transport per request + MCP session lookup) against `POST /v1/agents/:id/execute`
 * in the same run, on the same platform process, upstream and session. The upstream and the
 * platform are bench/execute.ts's children (same set-up: enterprise subscription, bearer upstream
 * credential, argument validation, recording).
 *
 * Runs alternate REST / MCP `BENCH_ROUNDS` times (6) at BENCH_CONNECTIONS (16) and at 1 connection;
 * reported: mean requests/s and p50/p99 of each, and MCP's share of REST throughput as the median
 * of the per-round ratios (each MCP run against the REST run just before it, so a load change on a
 * shared machine moves both sides of a ratio alike), plus one JSON line.
 * Goal: MCP keeps ≥ 80 % of the REST path's throughput.
 *
 * Also reported (Linux): the platform process's CPU time per request of each path (utime + stime
 * from /proc, over each run), and REST's CPU per request as a share of MCP's — what the MCP layer
 * costs on top, which a shared, loaded machine moves much less than it moves throughput.
 *
 * Env: BENCH_SECONDS (4 per run), BENCH_CONNECTIONS (16), BENCH_ROUNDS (6), BENCH_DATABASE_URL,
 * BENCH_REDIS_URL, BENCH_UPSTREAM_DELAY_MS — as bench/execute.ts.
 */
import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

const CHILD = path.join(path.dirname(fileURLToPath(import.meta.url)), 'execute.ts');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const PROTOCOL = '2025-06-18';

const children: ChildProcess[] = [];
process.on('exit', () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
});

function spawn(args: string[]): Promise<any> {
  const child = fork(CHILD, args, { execArgv: process.execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    child.once('message', (msg: object) => resolve({ ...msg, pid: child.pid }));
    child.once('exit', (code) => reject(new Error(`${args[0]} exited with ${code}`)));
  });
}

interface Run {
  rps: number;
  p50: number;
  p99: number;
  bad: number;
  /** Platform CPU (user + system) per request, ms; NaN where /proc is missing. */
  cpuMs: number;
}

/** CPU time (user + system) of process `pid` so far, ms (Linux /proc, clock ticks of 10 ms); NaN elsewhere. */
function cpuTimeMs(pid: number): number {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return NaN;
  }
}

let platformPid = 0;
async function cannon(opts: autocannon.Options): Promise<Run> {
  const cpu0 = cpuTimeMs(platformPid);
  const r = await autocannon(opts);
  const cpuMs = (cpuTimeMs(platformPid) - cpu0) / Math.max(1, r.requests.total);
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    bad: r.non2xx + r.errors + r.timeouts,
    cpuMs,
  };
}

const up = await spawn(['upstream']);
const upstreamUrl = `http://127.0.0.1:${up.port}`;
const { base, authorization, sessionId, service, pid } = await spawn(['platform', upstreamUrl]);
platformPid = pid;
const toolArgs = { city: 'Lisbon', units: 'metric' };

const rest = {
  url: `${base}/v1/agents/${sessionId}/execute`,
  method: 'POST' as const,
  headers: { authorization, 'content-type': 'application/json' },
  body: JSON.stringify({ service, tool: 'current', arguments: toolArgs }),
};

// An MCP session, as a client opens it: initialize, then notifications/initialized.
const mcpHeaders: Record<string, string> = {
  authorization,
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
};
const init = await fetch(`${base}/mcp`, {
  method: 'POST',
  headers: mcpHeaders,
  body: JSON.stringify({
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
  }),
});
if (init.status !== 200) throw new Error(`initialize: ${init.status} ${await init.text()}`);
await init.text();
mcpHeaders['mcp-session-id'] = init.headers.get('mcp-session-id')!;
mcpHeaders['mcp-protocol-version'] = PROTOCOL;
await (
  await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: mcpHeaders,
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  })
).text();
const mcp = {
  url: `${base}/mcp`,
  method: 'POST' as const,
  headers: mcpHeaders,
  body: JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: {
      name: 'execute_tool',
      arguments: { service, tool: 'current', arguments: toolArgs, session_id: sessionId },
    },
  }),
};

// Sanity check and warm-up.
const check = (await (await fetch(mcp.url, { method: 'POST', headers: mcp.headers, body: mcp.body })).json()) as {
  result?: { structuredContent?: { status?: string }; isError?: boolean };
};
if (check.result?.structuredContent?.status !== 'succeeded')
  throw new Error(`execute_tool over MCP failed: ${JSON.stringify(check)}`);
await cannon({ ...rest, connections: CONNECTIONS, duration: 2 });
await cannon({ ...mcp, connections: CONNECTIONS, duration: 2 });

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const mean = (runs: Run[]): Run => ({
  rps: runs.reduce((s, r) => s + r.rps, 0) / runs.length,
  p50: runs.reduce((s, r) => s + r.p50, 0) / runs.length,
  p99: runs.reduce((s, r) => s + r.p99, 0) / runs.length,
  bad: runs.reduce((s, r) => s + r.bad, 0),
  cpuMs: median(runs.map((r) => r.cpuMs)),
});
const results: Record<string, { rest: Run; mcp: Run; ratio: number; ratios: number[]; cpuShare: number }> = {};
for (const connections of [CONNECTIONS, 1]) {
  const r: Run[] = [];
  const m: Run[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    r.push(await cannon({ ...rest, connections, duration: SECONDS }));
    m.push(await cannon({ ...mcp, connections, duration: SECONDS }));
  }
  const ratios = m.map((x, i) => x.rps / r[i].rps);
  results[connections] = {
    rest: mean(r),
    mcp: mean(m),
    ratio: median(ratios),
    ratios,
    cpuShare: median(r.map((x) => x.cpuMs)) / median(m.map((x) => x.cpuMs)),
  };
}

const fmt = (x: Run) =>
  `${x.rps.toFixed(0).padStart(6)} req/s  p50 ${x.p50.toFixed(1)} ms  p99 ${x.p99.toFixed(1)} ms  CPU ${x.cpuMs.toFixed(3)} ms/req${x.bad ? `  (${x.bad} failed)` : ''}`;
console.log(
  `\nexecute over MCP vs REST (${process.env.BENCH_DATABASE_URL ? 'PostgreSQL' : 'PGlite'}, ${SECONDS}s × ${ROUNDS} rounds each, alternating)`,
);
for (const [connections, { rest: r, mcp: m, ratio, ratios, cpuShare }] of Object.entries(results)) {
  console.log(`${connections.padStart(3)} connection(s)  REST ${fmt(r)}`);
  console.log(
    `${' '.repeat(17)}  MCP  ${fmt(m)}   → median ${(100 * ratio).toFixed(1)} % of REST (rounds: ${ratios.map((x) => (100 * x).toFixed(0)).join(', ')} %)`,
  );
  console.log(`${' '.repeat(17)}  CPU per request: REST's is ${(100 * cpuShare).toFixed(1)} % of MCP's`);
}
const share = results[CONNECTIONS].ratio;
console.log(
  `goal: MCP ≥ 80 % of REST throughput at ${CONNECTIONS} connections: ${share >= 0.8 ? 'met' : 'NOT met'} (${(share * 100).toFixed(1)} %)`,
);
console.log(
  JSON.stringify({
    bench: 'mcp',
    engine: process.env.BENCH_DATABASE_URL ? 'postgresql' : 'pglite',
    seconds: SECONDS,
    rounds: ROUNDS,
    loadavg: os.loadavg().map((x) => +x.toFixed(2)),
    results,
  }),
);
process.exit(0);
