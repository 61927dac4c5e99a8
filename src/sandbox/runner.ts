/**
 * The sandbox: runs handler calls of deployed agent code in sandboxed Node.js child processes,
 * each an execution environment (see `environment.ts`) reused between invocations of the same
 * deployment version (AWS Lambda's model: "warm" invocations skip process start and module load).
 *
 * Isolation (every environment; nothing shared between environments; command lines: `command.ts`):
 * - File system (SANDBOX_ISOLATION=bwrap, the default; `isolation.ts`): bubblewrap starts the
 *   process tree in new user, mount, PID, IPC, UTS and network namespaces with a root that holds
 *   only the Node runtime and the artifact (read-only, at `/app`) and a private `/tmp`: no host
 *   path, so no host Unix socket, is reachable. The sandbox refuses to start where bwrap cannot run.
 * - Node's permission model (`--experimental-permission`, Node ≥ 20), a second wall: the file
 *   system is readable only in the artifact (and `/tmp` when sealed), writable only in the sealed
 *   `/tmp`; child processes, worker threads, native add-ons and WASI are refused.
 * - Memory: `--max-old-space-size` caps the V8 heap and `RLIMIT_DATA` (util-linux `prlimit`) caps
 *   the whole process's private writable memory — Buffers, ArrayBuffers and native allocations
 *   included — at {@link SandboxOptions.processMemoryMb}. An allocation beyond it fails, the
 *   invocation ends `out_of_memory` and the environment is discarded.
 * - Time: a per-invocation timer SIGKILLs the process group; coreutils `timeout` (when present)
 *   kills a one-off process 2 s after its deadline and a pooled one at the end of its lifetime
 *   (`WARM_MAX_AGE_MS`), should this process have died. Between invocations the environment is
 *   frozen (SIGSTOP, `freezer.ts`): work left running by a handler gets no CPU; each invocation's
 *   CPU time is read from `/proc`.
 * - When the server runs as root, environments run as an unprivileged user (65534, "nobody", by
 *   default) — a second wall should the permission model ever be bypassed.
 * - A minimal environment: the deployment's own variables plus `NODE_ENV`, `TZ`, `LANG` — none
 *   of the platform's (no database URL, no keys, no agent credential).
 * - Network: sealed, or unsealed where the host allows it (`unshare --net`), the process starts in
 *   an empty network namespace: no interface but loopback, so no traffic to the internet, the
 *   platform or its database on localhost. Otherwise (`SANDBOX_NETWORK=auto` on an unsealed host
 *   without namespaces, or `allowed`), deployed code HAS network access ({@link Sandbox.networkIsolated}).
 * - Egress: a run with `egress` patterns gets a host proxy per environment (`egress.ts`), whose
 *   Unix socket is the one host path bound into its sandbox, for the in-sandbox relay.
 *
 * Warm pool: runs that carry a `key` (one deployment version) reuse an idle environment of that
 * key; at most `warm.perVersion` environments per key and `warm.total` in all are kept, idle ones
 * are killed after `warm.idleMs`, and an environment that timed out, crashed or ran out of memory
 * is discarded. {@link Sandbox.drain} retires a version's environments (rollback, stop, redeploy).
 */
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { CommandLine } from './command.js';
import { EgressProxy, type EgressEvent } from './egress.js';
import { Spares } from './spares.js';
import { Spawner, type SandboxChild, type SpawnRequest } from './spawner.js';
import { Environment, type EnvironmentSpec } from './environment.js';
import type { SandboxOptions, SandboxResult, SandboxRun } from './contract.js';

export type {
  Broker,
  InvokeHooks,
  LogEntry,
  SandboxError,
  SandboxOptions,
  SandboxResult,
  SandboxRun,
} from './contract.js';
export { probeNetworkIsolation } from './host.js';

/** Lifetime of a pooled environment, ms: its backstop kills it then, so it is not reused when a run could outlast it. */
export const WARM_MAX_AGE_MS = 30 * 60_000;

/** Longest a provisioned environment may take to load its module, ms. */
const SPARE_LOAD_TIMEOUT_MS = 30_000;

/** Runs handler calls in child processes; holds the concurrency limit. One per app. */
export class Sandbox {
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  /** The walls and the command line of environments (`command.ts`). */
  private readonly cmd: CommandLine;

  /** @throws Error when a required wall is unavailable (see {@link CommandLine}) */
  constructor(private readonly opts: SandboxOptions) {
    this.cmd = new CommandLine(opts);
    this.spares =
      opts.provisioned === false
        ? null
        : new Spares({ max: opts.warm?.total || 16, idleMs: opts.warm?.idleMs ?? 300_000 });
  }

  /** True when runs start in an empty network namespace (no network at all). */
  get networkIsolated(): boolean {
    return this.cmd.networkIsolated;
  }

  /** True when runs are sealed off the host's file system (bubblewrap). */
  get sealed(): boolean {
    return this.cmd.sealed;
  }

  /** The uid/gid runs switch to (null: same user as this process). */
  get runAs(): { uid: number; gid: number } | null {
    return this.cmd.runAs;
  }

  /** Why runs do not switch to an unprivileged user although this process is root (for a log line). */
  get runAsNote(): string | null {
    return this.cmd.runAsNote;
  }

  /** True when deployments with `egress` can reach their allowed hosts through the host proxy. */
  get egressAvailable(): boolean {
    return !!this.opts.egress && this.cmd.egressReady;
  }

  /** Provisioned environments (null: off). */
  private readonly spares: Spares | null;

  /** Set by {@link killAll}: later and waiting runs fail at once instead of starting environments. */
  private closed = false;

  /**
   * Kill every environment, pooled or not, stop the idle reaper and the fork server (app shutdown).
   * Runs waiting for a concurrency slot or a pooled environment end as failed (`sandbox_closed`),
   * so the job queue's close, which waits for its running jobs, does not wait forever.
   */
  killAll(): void {
    this.closed = true;
    // each woken run holds a slot, as one handed over by `release` does, and gives it back when it ends
    for (const wake of this.waiting.splice(0)) {
      this.running++;
      wake();
    }
    for (const p of this.pools.values()) for (const wake of p.waiters.splice(0)) wake();
    this.spares?.killAll();
    if (this.reaper) clearInterval(this.reaper);
    this.reaper = null;
    for (const e of this.envs) e.kill();
    this.pools.clear();
    void this.spawner?.then((s) => s?.close());
    this.spawner = null;
  }

  /** The fork server (`spawner.ts`), started on first use; null where it cannot run (then this process spawns). */
  private spawner: Promise<Spawner | null> | null = null;

  /** Start a process through the fork server; null when it is unavailable (the environment then spawns it itself). */
  private readonly spawnVia = async (req: SpawnRequest): Promise<SandboxChild | null> => {
    const s = await (this.spawner ??= Spawner.start().catch(() => null));
    return s ? s.spawn(req) : null;
  };

  /** Runs in progress and waiting, for metrics and tests. */
  get load(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting.length };
  }

  /** Pooled environments: total, idle, and per key (for metrics and tests). */
  get warm(): { total: number; idle: number; keys: Record<string, number> } {
    const keys: Record<string, number> = {};
    let total = 0;
    let idle = 0;
    for (const [k, p] of this.pools) {
      keys[k] = p.envs.length + p.starting;
      total += keys[k];
      idle += p.envs.filter((e) => !e.busy).length;
    }
    return { total, idle, keys };
  }

  /**
   * Retire the environments whose key matches: idle ones are killed now, busy ones when their
   * current invocation ends. Later runs with such a key start fresh environments.
   */
  drain(match: (key: string) => boolean): number {
    let n = 0;
    for (const [k, p] of this.pools) {
      if (!match(k)) continue;
      for (const e of p.envs) {
        n++;
        if (!e.busy) e.kill();
        else e.retired = true;
      }
      this.pools.delete(k);
      this.wake(k);
    }
    this.spares?.drain(match);
    return n;
  }

  /** Run one call. Never throws for anything the deployed code does; the result says what happened. */
  async run(r: SandboxRun): Promise<SandboxResult> {
    await this.acquire();
    try {
      return await this.runAcquired(r);
    } finally {
      this.release();
    }
  }

  private async acquire(): Promise<void> {
    if (this.running < this.opts.concurrency) {
      this.running++;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.running--;
  }

  private async runAcquired(r: SandboxRun): Promise<SandboxResult> {
    const hooks = { broker: r.broker, onLog: r.onLog };
    const warm = r.mode === 'invoke' && r.key && this.opts.warm ? await this.checkout(r.key, r.timeoutMs) : null;
    // shut down while this run waited for a slot or an environment (or before it asked): start nothing
    if (this.closed) {
      if (warm?.env) this.checkin(r.key!, warm.env);
      else if (warm?.reserved) this.unreserve(r.key!);
      return closedResult();
    }
    if (warm?.env) {
      const res = await warm.env.invoke(r.input, r.context ?? {}, r.timeoutMs, hooks);
      this.checkin(r.key!, warm.env);
      return { ...res, cold: false };
    }
    // Cold: a new environment, pooled afterwards when `warm` reserved a place for it.
    const started = performance.now();
    const pooled = warm?.reserved === true;
    let proxy: EgressProxy | null = null;
    let target: Environment | null = null;
    try {
      if (r.egress?.length && this.egressAvailable)
        proxy = await EgressProxy.listen(
          path.join(this.opts.readableDir ?? path.dirname(r.root), '.egress'),
          r.egress,
          this.opts.egress!.resolve,
          (e) => target?.platformLog('warn', egressMessage(e), { ...e }),
        );
    } catch (err) {
      if (pooled) this.unreserve(r.key!);
      throw err;
    }
    // Provisioned environments (spares.ts): take this version's spare, and start the next one.
    const provisionable = r.mode === 'invoke' && !!r.key && !proxy && this.spares !== null;
    const spare = provisionable ? await this.spares!.take(r.key!, r.timeoutMs) : null;
    if (provisionable)
      this.spares!.provision(r.key!, () => Environment.start(this.specOf(r, true, null), SPARE_LOAD_TIMEOUT_MS));
    // known to killAll from its creation: a shutdown while the module loads kills it there
    const st =
      spare ??
      (await Environment.start(
        {
          ...this.specOf(r, pooled, proxy),
          onCreate: (e) => {
            target = e;
            this.envs.add(e);
          },
        },
        Math.max(1, r.timeoutMs - Math.round(performance.now() - started)),
      ));
    if (target && !st.env) this.envs.delete(target);
    if (proxy) {
      const p = proxy;
      if (st.env) void st.env.closed.then(() => p.close());
      else p.close();
    }
    // shut down while the environment started: it is not used (killAll killed it, or it was a spare)
    if (this.closed) {
      st.env?.kill();
      if (pooled) this.unreserve(r.key!);
      return closedResult();
    }
    if (!st.env) {
      if (pooled) this.unreserve(r.key!);
      for (const l of st.logs) r.onLog?.(l);
      return {
        status: st.status,
        output: null,
        error: st.error,
        logs: st.logs,
        logsTruncated: st.logsTruncated,
        durationMs: Math.round(performance.now() - started),
        cold: true,
        cpuMs: null,
      };
    }
    const env = st.env;
    this.envs.add(env);
    void env.closed.then(() => this.envs.delete(env));
    if (r.mode === 'load') {
      env.kill();
      return {
        status: 'succeeded',
        output: null,
        error: null,
        logs: st.logs,
        logsTruncated: st.logsTruncated,
        durationMs: Math.round(performance.now() - started),
        cold: true,
        cpuMs: null,
      };
    }
    if (pooled) this.adopt(r.key!, env);
    const remaining = Math.max(1, r.timeoutMs - Math.round(performance.now() - started));
    const res = await env.invoke(r.input, r.context ?? {}, remaining, hooks, st);
    if (pooled) this.checkin(r.key!, env);
    else env.kill();
    return { ...res, durationMs: Math.round(performance.now() - started), cold: true };
  }

  // -------------------------------------------------------------------------------------------
  // Pool.

  private readonly pools = new Map<string, { envs: Environment[]; starting: number; waiters: Array<() => void> }>();
  private readonly envs = new Set<Environment>();
  private reaper: NodeJS.Timeout | null = null;

  private poolOf(key: string) {
    let p = this.pools.get(key);
    if (!p) {
      p = { envs: [], starting: 0, waiters: [] };
      this.pools.set(key, p);
    }
    return p;
  }

  private pooledTotal(): number {
    let n = 0;
    for (const p of this.pools.values()) n += p.envs.length + p.starting;
    return n;
  }

  /**
   * An idle environment of `key` (marked busy), or a reserved place for a new pooled one, or
   * null (run one-off: the pool is full of busy environments of other versions).
   */
  private async checkout(key: string, timeoutMs: number): Promise<{ env?: Environment; reserved?: boolean } | null> {
    const w = this.opts.warm!;
    for (;;) {
      if (this.closed) return null;
      const p = this.poolOf(key);
      p.envs = p.envs.filter((e) => !e.dead);
      const fits = (e: Environment) => Date.now() + timeoutMs + 2000 < e.created + WARM_MAX_AGE_MS;
      for (const e of p.envs) if (!e.busy && !fits(e)) e.retired = true;
      const idle = p.envs.find((e) => !e.busy && !e.retired);
      if (idle) {
        idle.busy = true;
        return { env: idle };
      }
      if (p.envs.length + p.starting < w.perVersion && (this.pooledTotal() < w.total || this.evictIdle(key))) {
        p.starting++;
        this.startReaper();
        return { reserved: true };
      }
      if (p.envs.length + p.starting === 0) return null;
      // Wait for an environment of this version to come free (or go away).
      await new Promise<void>((resolve) => p.waiters.push(resolve));
    }
  }

  /** Kill the least recently used idle environment of another key to make room. */
  private evictIdle(except: string): boolean {
    let victim: { key: string; env: Environment } | null = null;
    for (const [k, p] of this.pools) {
      if (k === except) continue;
      for (const e of p.envs) if (!e.busy && (!victim || e.lastUsed < victim.env.lastUsed)) victim = { key: k, env: e };
    }
    if (!victim) return false;
    this.remove(victim.key, victim.env);
    return true;
  }

  private adopt(key: string, env: Environment): void {
    const p = this.poolOf(key);
    p.starting = Math.max(0, p.starting - 1);
    env.busy = true;
    p.envs.push(env);
  }

  private unreserve(key: string): void {
    const p = this.pools.get(key);
    if (p) p.starting = Math.max(0, p.starting - 1);
    this.wake(key);
  }

  private checkin(key: string, env: Environment): void {
    env.busy = false;
    if (env.dead || env.retired || !this.pools.get(key)?.envs.includes(env)) this.remove(key, env);
    this.wake(key);
  }

  private remove(key: string, env: Environment): void {
    env.kill();
    const p = this.pools.get(key);
    if (!p) return;
    p.envs = p.envs.filter((e) => e !== env);
    if (p.envs.length === 0 && p.starting === 0 && p.waiters.length === 0) this.pools.delete(key);
  }

  private wake(key: string): void {
    const p = this.pools.get(key);
    const next = p?.waiters.shift();
    if (next) next();
  }

  /** Kill idle environments unused for `warm.idleMs` (checked every min(idleMs, 10 s); the timer does not hold the process open). */
  private startReaper(): void {
    if (this.reaper || !this.opts.warm) return;
    const idleMs = this.opts.warm.idleMs;
    this.reaper = setInterval(
      () => {
        const cutoff = Date.now() - idleMs;
        for (const [k, p] of this.pools)
          for (const e of [...p.envs]) if (!e.busy && e.lastUsed < cutoff) this.remove(k, e);
        if (this.pools.size === 0 && this.reaper) {
          clearInterval(this.reaper);
          this.reaper = null;
        }
      },
      Math.max(50, Math.min(idleMs, 10_000)),
    );
    this.reaper.unref();
  }

  /** Command line and limits of a new environment for `r` (`pooled`: its backstop is the pool lifetime). */
  private specOf(r: SandboxRun, pooled: boolean, proxy: EgressProxy | null): EnvironmentSpec {
    const c = this.cmd.build(r, pooled, WARM_MAX_AGE_MS, proxy?.socketPath ?? null);
    const limitMb = this.cmd.processMemoryMb;
    return {
      argv: c.argv,
      cwd: r.root,
      env: { ...(r.env ?? {}), NODE_ENV: 'production', TZ: 'UTC', LANG: 'C.UTF-8' },
      ids: c.ids,
      root: r.root,
      memoryMb: limitMb || this.opts.memoryMb,
      spawn: this.opts.forkServer === false ? undefined : this.spawnVia,
      maxLogBytes: this.opts.maxLogBytes,
      maxOutputBytes: this.opts.maxOutputBytes,
      freeze: this.opts.freeze !== false,
      backstop: c.backstop,
    };
  }

  /** The whole-process memory limit in force, MiB (0: none — `prlimit` missing or disabled). */
  get processMemoryMb(): number {
    return this.cmd.processMemoryMb;
  }
}

/** The line an egress refusal leaves in the invocation's logs. */
function egressMessage(e: EgressEvent): string {
  return e.reason === 'unreachable'
    ? `egress failed: ${e.method} ${e.host}:${e.port}: ${e.message}`
    : `egress denied: ${e.method} ${e.host}:${e.port}: ${e.message}`;
}

/** The result of a run the app's shutdown stopped before it started. */
function closedResult(): SandboxResult {
  return {
    status: 'failed',
    output: null,
    error: { code: 'sandbox_closed', message: 'the server shut down before this run started' },
    logs: [],
    logsTruncated: false,
    durationMs: 0,
    cold: false,
    cpuMs: null,
  };
}
