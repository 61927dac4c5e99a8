/**
 * Start-up time and idle memory of `npm start` (the command of package.json's `start` script, run
 * in the tree measured) on this machine:
 * 1. `first-cold`: a machine's first start: an empty cache of prepared data directories
 *    (`PGLITE_TEMPLATE_DIR`), then the tree's `postinstall` script as `npm install` runs it (when it
 *    has one: it prepares that cache; its time is `install_ms`), then the first open of a fresh
 *    DATA_DIR,
 * 2. `later`: a later open of the same DATA_DIR,
 * 3. `first`: first open of another fresh DATA_DIR, the prepared directory now in the cache (what
 *    every first open after the machine's first one does),
 * 4. `first-nocache`: first open of a fresh DATA_DIR with an empty cache and no install step
 *    (`npm install --ignore-scripts`, a removed cache, a migration added since the install): PGlite
 *    initialises a cluster and the migrations run before the open.
 * For each: `startup_ms` as logged by main.ts (from process start to listening) with its phases
 * (`modules_ms`, `database_ms`, `app_ms`) and the process's CPU time until then (`cpu_ms`, all
 * threads: what a loaded machine disturbs least) and the main thread's share of it (`main_cpu_ms`,
 * read when the ready line arrives: start-up's critical path), the latency of the first requests after the
 * ready line (`first_healthz_ms`; `first_readyz_ms`, a database round trip) — what start-up
 * deferred must not land there — and the resident set size (VmRSS of /proc/<pid>/status) after
 * IDLE_MS of idleness. Linux only (procfs).
 *
 * With BENCH_BASELINE_ROOT=<another checkout> (e.g. `git archive <commit>` with node_modules linked),
 * every run measures that tree too, interleaved with this one (first and later open of each),
 * and the summary compares medians from the same run. Caution (2026-11-29): a checkout whose
 * `node_modules` is a symlink to this tree's loaded its modules ~0.35 s slower (`modules_ms`) than
 * this tree with the same code, so such a pair overstates this tree's lead; compare two checkouts set
 * up the same way, or switch the change on and off within one tree.
 *
 *   npm run bench:startup            # RUNS=3 IDLE_MS=5000 by default
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const RUNS = Number(process.env.RUNS ?? 3);
const IDLE_MS = Number(process.env.IDLE_MS ?? 5000);
const ROOT = path.resolve(import.meta.dirname, '..');

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

/**
 * CPU time (user + system, ms) the main thread of process `pid` has used: fields 14–15 of
 * /proc/<pid>/task/<pid>/stat, in clock ticks (USER_HZ, 100 on Linux). Start-up's critical path
 * is this thread's work; the other threads (WebAssembly compilation, GC, libuv) run beside it.
 */
function mainThreadCpuMs(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 102.4) / 10 : NaN;
}

/**
 * The `start` script of `root`'s package.json as node arguments and environment
 * (`exec env MALLOC_ARENA_MAX=2 node scripts/start.mjs` → `['scripts/start.mjs']`, `{ MALLOC_ARENA_MAX: '2' }`).
 */
function startCommand(root: string): { args: string[]; env: Record<string, string> } {
  const { scripts } = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as {
    scripts: { start: string };
  };
  const words = scripts.start.trim().split(/\s+/);
  const node = words.indexOf('node');
  if (node < 0) throw new Error(`the start script of ${root} does not run node: ${scripts.start}`);
  const env = Object.fromEntries(
    words
      .slice(0, node)
      .flatMap((w) =>
        /^[A-Z_][A-Z0-9_]*=/.test(w) ? [[w.slice(0, w.indexOf('=')), w.slice(w.indexOf('=') + 1)]] : [],
      ),
  );
  return { args: words.slice(node + 1), env };
}

/**
 * Run the `postinstall` script of `root`'s package.json as npm does (`sh -c`, in `root`) with the
 * cache of prepared data directories `templates`.
 * @returns the ms it took, or undefined when the tree has no such script
 * @throws Error when it exits non-zero
 */
async function installHook(root: string, templates: string): Promise<number | undefined> {
  const { scripts } = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as {
    scripts: { postinstall?: string };
  };
  if (!scripts.postinstall) return undefined;
  const t = performance.now();
  const child = spawn('sh', ['-c', scripts.postinstall], {
    cwd: root,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, PGLITE_TEMPLATE_DIR: templates },
    stdio: 'ignore',
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0) throw new Error(`the postinstall script of ${root} exited ${code}`);
  return Math.round(performance.now() - t);
}

/** ms one GET of `url` took. @throws when it does not answer 200 */
async function timedGet(url: string): Promise<number> {
  const t = performance.now();
  const res = await fetch(url);
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
  return Math.round((performance.now() - t) * 10) / 10;
}

interface Phases {
  modules_ms?: number;
  database_ms?: number;
  app_ms?: number;
  cpu_ms?: number;
}

type Result = {
  startup_ms: number;
  main_cpu_ms: number;
  wall_ms: number;
  first_healthz_ms: number;
  first_readyz_ms: number;
  idle_rss_mib: number;
  install_ms?: number;
} & Phases;

async function once(root: string, dataDir: string, templates: string): Promise<Result> {
  const port = await freePort();
  const t0 = Date.now();
  const { args, env } = startCommand(root);
  const child = spawn(process.execPath, args, {
    cwd: root,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      ...env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      PGLITE_TEMPLATE_DIR: templates,
      LOG_LEVEL: 'info',
      NODE_ENV: 'production',
    },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const ready = await new Promise<{ startup_ms: number; phases?: Phases }>((resolve, reject) => {
    let buf = '';
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      for (const line of buf.split('\n')) if (line.includes('agent platform ready')) resolve(JSON.parse(line));
    });
    child.on('exit', (code) => reject(new Error(`server exited ${code}`)));
  });
  const wall = Date.now() - t0;
  const main_cpu_ms = mainThreadCpuMs(child.pid!);
  const first_healthz_ms = await timedGet(`http://127.0.0.1:${port}/healthz`);
  const first_readyz_ms = await timedGet(`http://127.0.0.1:${port}/readyz`);
  await new Promise((r) => setTimeout(r, IDLE_MS));
  const rss = rssMiB(child.pid!);
  child.kill('SIGTERM');
  await new Promise((r) => child.on('exit', r));
  return {
    startup_ms: ready.startup_ms,
    ...ready.phases,
    main_cpu_ms,
    wall_ms: wall,
    first_healthz_ms,
    first_readyz_ms,
    idle_rss_mib: rss,
  };
}

const BASELINE = process.env.BENCH_BASELINE_ROOT ? path.resolve(process.env.BENCH_BASELINE_ROOT) : null;
const trees: Array<{ tree: string; root: string }> = [
  { tree: 'this', root: ROOT },
  ...(BASELINE ? [{ tree: 'baseline', root: BASELINE }] : []),
];
const results: Array<{ tree: string; run: number; open: string } & Result> = [];
const loadBefore = os.loadavg();
for (let i = 0; i < RUNS; i++) {
  // Alternate which tree goes first, so neither always gets the quieter half of a round.
  for (const { tree, root } of i % 2 ? [...trees].reverse() : trees) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-bench-startup-'));
    const [data, again, templates, bare, bareTemplates] = ['data', 'again', 'templates', 'bare', 'bare-templates'].map(
      (d) => path.join(dir, d),
    );
    try {
      const install_ms = await installHook(root, templates);
      results.push({
        tree,
        run: i + 1,
        open: 'first-cold',
        ...(await once(root, data, templates)),
        ...(install_ms === undefined ? {} : { install_ms }),
      });
      results.push({ tree, run: i + 1, open: 'later', ...(await once(root, data, templates)) });
      results.push({ tree, run: i + 1, open: 'first', ...(await once(root, again, templates)) });
      results.push({ tree, run: i + 1, open: 'first-nocache', ...(await once(root, bare, bareTemplates)) });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const summary = trees.flatMap(({ tree }) =>
  ['first-cold', 'first', 'later', 'first-nocache'].map((open) => {
    const rs = results.filter((r) => r.tree === tree && r.open === open);
    const med = (k: keyof Result) =>
      rs.every((r) => typeof r[k] === 'number') ? median(rs.map((r) => r[k] as number)) : null;
    return {
      tree,
      open,
      startup_ms: med('startup_ms'),
      cpu_ms: med('cpu_ms'),
      main_cpu_ms: med('main_cpu_ms'),
      first_readyz_ms: med('first_readyz_ms'),
      idle_rss_mib: med('idle_rss_mib'),
      install_ms: med('install_ms'),
    };
  }),
);
console.table(results);
console.table(summary);
const load = (l: number[]) => l.map((x) => Math.round(x * 10) / 10);
console.log(
  JSON.stringify({
    bench: 'startup',
    load_average_before: load(loadBefore),
    load_average: load(os.loadavg()),
    cpus: os.cpus().length,
    node: process.version,
    summary,
    results,
  }),
);
