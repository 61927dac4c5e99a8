/**
 * One execution environment: a sandboxed Node.js process that has imported one deployment's
 * entrypoint and serves its invocations one at a time over the line protocol of `bootstrap.ts`.
 *
 * The process is spawned by {@link Sandbox} (which owns the command line: permission flags,
 * network namespace, uid, memory rlimit, backstop). This class owns the pipes: it captures
 * stdout/stderr into the current invocation's logs, relays the handler's platform calls to the
 * invocation's {@link Broker}, enforces the per-invocation timeout (SIGKILL of the whole process
 * group), and reports the environment unusable (`dead`) after a timeout, crash or out-of-memory.
 */
import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { cpuTimeMs, freezeGroup, groupMembers, thawGroup } from './freezer.js';
import {
  brokerError,
  cleanError,
  type InvokeHooks,
  type LogEntry,
  type SandboxError,
  type SandboxResult,
} from './contract.js';
import { frameMax, logLineOf, MAX_LINE, outputTooLarge, resultOf, type Msg } from './protocol.js';
import type { SandboxChild, SpawnRequest } from './spawner.js';

/** How V8 and the allocator report heap or address-space exhaustion on stderr. */
const OOM_REPORT = /heap out of memory|Allocation failed|out of memory/i;

/** How to start the process and its limits (set by {@link Sandbox}). */
export interface EnvironmentSpec {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  ids: { uid?: number; gid?: number };
  root: string;
  memoryMb: number;
  maxLogBytes: number;
  maxOutputBytes: number;
  /** Called with the environment as soon as it exists (before its module loads). */
  onCreate?: (env: Environment) => void;
  /** Freeze the process group between invocations (see `freezer.ts`). */
  freeze?: boolean;
  /** The group leader is the backstop (`timeout`): it keeps running while the rest is frozen. */
  backstop?: boolean;
  /** Starts the process (the sandbox's fork server, see `spawner.ts`); absent or resolving null: `child_process.spawn` in this process. Rejects: cannot start. */
  spawn?: (req: SpawnRequest) => Promise<SandboxChild | null>;
}

const MAX_LOG_LINES = 1000;

interface Current {
  logs: LogEntry[];
  logBytes: number;
  truncated: boolean;
  hooks: InvokeHooks;
  finish: (r: Omit<SandboxResult, 'logs' | 'logsTruncated' | 'cold' | 'durationMs' | 'cpuMs'>) => void;
}

/** A running sandbox process. Create with {@link Environment.start}. */
export class Environment {
  readonly created = Date.now();
  lastUsed = Date.now();
  /** Invocations served. */
  uses = 0;
  busy = false;
  /** No longer usable (exited, killed, timed out, crashed, out of memory). */
  dead = false;
  /** To be killed when its current invocation ends (drained, or too old to take another run). */
  retired = false;
  private child!: SandboxChild;
  private current: Current | null = null;
  /**
   * stderr carried V8's or the allocator's out-of-memory report. A flag rather than a tail of the
   * last lines: the native stack trace Node prints after "FATAL ERROR: … heap out of memory" can
   * be longer than the tail and push the report out of it (the run then looked `crashed`).
   */
  private oomReported = false;
  private frame = '';
  private onReady: ((m: Msg) => void) | null = null;
  private readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private resolveExit!: (v: { code: number | null; signal: NodeJS.Signals | null }) => void;

  private constructor(private readonly spec: EnvironmentSpec) {
    this.exited = new Promise((r) => (this.resolveExit = r));
  }

  /**
   * Spawn the process and wait until the module is loaded. Resolves `{ env }` when ready, or
   * `{ error }` (load_error, invalid_handler, crashed, timeout, sandbox_error) — never throws.
   */
  static async start(
    spec: EnvironmentSpec,
    timeoutMs: number,
  ): Promise<
    | { env: Environment; error?: undefined; logs: LogEntry[]; logsTruncated: boolean }
    | { env?: undefined; error: SandboxError; status: 'failed' | 'timed_out'; logs: LogEntry[]; logsTruncated: boolean }
  > {
    const e = new Environment(spec);
    spec.onCreate?.(e);
    // Lines printed while the module loads belong to the first invocation (or the prepare step).
    const cur: Current = { logs: [], logBytes: 0, truncated: false, hooks: {}, finish: () => {} };
    e.current = cur;
    try {
      e.child =
        (await spec.spawn?.({ argv: spec.argv, cwd: spec.cwd, env: spec.env, ids: spec.ids })) ??
        spawn(spec.argv[0], spec.argv.slice(1), {
          cwd: spec.cwd,
          env: spec.env,
          stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
          detached: true,
          ...spec.ids,
        });
    } catch (err) {
      return {
        error: { code: 'sandbox_error', message: `cannot start the sandbox: ${(err as Error).message}` },
        status: 'failed',
        logs: [],
        logsTruncated: false,
      };
    }
    e.wire();
    if (e.dead) e.kill(); // killed (drained, shut down) while it was being started
    const ready = await new Promise<Msg | { t: 'timeout' } | { t: 'exit' }>((resolve) => {
      const timer = setTimeout(() => resolve({ t: 'timeout' }), timeoutMs);
      e.onReady = (m) => {
        clearTimeout(timer);
        resolve(m);
      };
      void e.exited.then(() => {
        clearTimeout(timer);
        resolve({ t: 'exit' });
      });
    });
    e.onReady = null;
    e.current = null;
    const out = { logs: cur.logs, logsTruncated: cur.truncated };
    if (ready.t === 'ready') {
      // Frozen until its first invocation: code run at module load (timers, loops) waits too.
      e.freeze();
      return { env: e, ...out };
    }
    e.kill();
    if (ready.t === 'timeout')
      return {
        error: { code: 'timeout', message: `loading the module exceeded the timeout of ${timeoutMs} ms` },
        status: 'timed_out',
        ...out,
      };
    if (ready.t === 'load_failed' && 'error' in ready && ready.error)
      return { error: e.clean(ready.error), status: 'failed', ...out };
    const { code, signal } = await e.exited;
    if (e.spawnError)
      return {
        error: { code: 'sandbox_error', message: `cannot start the sandbox: ${e.spawnError}` },
        status: 'failed',
        ...out,
      };
    return { error: e.exitError(code, signal), status: 'failed', ...out };
  }

  private spawnError: string | null = null;

  private wire(): void {
    const child = this.child;
    child.on('error', (err) => {
      this.spawnError = err.message;
      this.dead = true;
      this.resolveExit({ code: null, signal: null });
    });
    child.on('close', (code, signal) => {
      this.dead = true;
      this.resolveExit({ code, signal });
    });
    child.stdin!.on('error', () => {});
    const capture = (stream: 'stdout' | 'stderr') => {
      let partial = '';
      const push = (line: string) => {
        if (stream === 'stderr') {
          if (OOM_REPORT.test(line)) this.oomReported = true;
        }
        this.log({
          ts: new Date().toISOString(),
          stream,
          message: line.length > MAX_LINE ? `${line.slice(0, MAX_LINE)}…` : line,
        });
      };
      const s = child[stream]!;
      s.on('data', (chunk: Buffer) => {
        const lines = (partial + chunk.toString('utf8')).split('\n');
        partial = lines.pop() ?? '';
        if (partial.length > MAX_LINE * 4) {
          lines.push(partial);
          partial = '';
        }
        for (const l of lines) push(l.replace(/\r$/, ''));
      });
      // A last line without a newline is flushed when the invocation ends (see `flushPartial`).
      this.flushers.push(() => {
        if (partial) push(partial);
        partial = '';
      });
    };
    capture('stdout');
    capture('stderr');
    const ch = child.stdio[3] as NodeJS.ReadableStream;
    ch.on('error', () => {});
    ch.on('data', (chunk: Buffer) => {
      this.frame += chunk.toString('utf8');
      if (this.frame.length > frameMax(this.spec.maxOutputBytes) && this.frame.indexOf('\n') < 0) {
        this.failCurrent({ status: 'failed', output: null, error: outputTooLarge(this.spec.maxOutputBytes) });
        return;
      }
      let nl;
      while ((nl = this.frame.indexOf('\n')) >= 0) {
        const line = this.frame.slice(0, nl);
        this.frame = this.frame.slice(nl + 1);
        let msg: Msg;
        try {
          msg = JSON.parse(line) as Msg;
        } catch {
          continue;
        }
        if (msg && typeof msg === 'object') this.onMessage(msg);
      }
    });
  }

  private readonly flushers: Array<() => void> = [];

  private log(entry: LogEntry): void {
    if (this.current) this.logTo(this.current, entry);
  }

  private logTo(cur: Current, entry: LogEntry): void {
    const size = Buffer.byteLength(entry.message) + 1;
    if (cur.truncated || cur.logBytes + size > this.spec.maxLogBytes || cur.logs.length >= MAX_LOG_LINES) {
      cur.truncated = true;
      return;
    }
    cur.logBytes += size;
    cur.logs.push(entry);
    cur.hooks.onLog?.(entry);
  }

  /** Add a `platform` line (an event of the host, e.g. a refused egress attempt) to the current invocation's logs, if any. */
  platformLog(level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>): void {
    this.log({
      ts: new Date().toISOString(),
      stream: 'platform',
      level,
      message: message.slice(0, MAX_LINE),
      ...(fields ? { fields } : {}),
    });
  }

  private onMessage(m: Msg): void {
    if (this.onReady && (m.t === 'ready' || m.t === 'load_failed')) {
      this.onReady(m);
      return;
    }
    const cur = this.current;
    if (!cur) return;
    switch (m.t) {
      case 'result': {
        const r = resultOf(m, this.spec.maxOutputBytes);
        if (r) cur.finish(r.error ? { ...r, error: this.clean(r.error) } : r);
        return;
      }
      case 'fatal':
        if (m.error && typeof m.error === 'object')
          cur.finish({ status: 'failed', output: null, error: this.clean(m.error) });
        this.kill();
        return;
      case 'log':
        this.log(logLineOf(m));
        return;
      case 'call':
        this.relay(cur, m);
        return;
      default:
    }
  }

  /** Answer one platform call through the invocation's broker; replies only while that invocation still runs. */
  private relay(cur: Current, m: Msg): void {
    const id = m.id;
    if (typeof id !== 'number' || typeof m.op !== 'string') return;
    const send = (msg: object) => {
      if (this.current !== cur || this.dead) return;
      const line = JSON.stringify(msg);
      if (line === undefined) return;
      this.child.stdin!.write(`${line}\n`);
    };
    const broker = cur.hooks.broker;
    if (!broker) {
      send({
        t: 'reply',
        id,
        ok: false,
        error: { code: 'not_available', message: 'platform calls are not available in this run' },
      });
      return;
    }
    broker(m.op, m.args).then(
      (value) => send({ t: 'reply', id, ok: true, value: value === undefined ? null : value }),
      (err: unknown) => send({ t: 'reply', id, ok: false, error: brokerError(err) }),
    );
  }

  private failCurrent(r: Parameters<Current['finish']>[0]): void {
    this.current?.finish(r);
    this.kill();
  }

  /**
   * Run one invocation in this (ready, idle) environment. Never throws. After a timeout, crash,
   * out-of-memory or oversized result the process is killed and {@link dead} is set.
   */
  async invoke(
    input: unknown,
    context: Record<string, unknown>,
    timeoutMs: number,
    hooks: InvokeHooks,
    preLogs?: { logs: LogEntry[]; logsTruncated: boolean },
  ): Promise<Omit<SandboxResult, 'cold'>> {
    this.busy = true;
    this.uses++;
    const cpuBefore = this.cpu();
    this.thaw();
    const started = performance.now();
    const deadline = Date.now() + timeoutMs;
    const cur: Current = { logs: [], logBytes: 0, truncated: false, hooks, finish: () => {} };
    for (const l of preLogs?.logs ?? []) this.logTo(cur, l);
    cur.truncated ||= preLogs?.logsTruncated ?? false;
    const outcome = await new Promise<Parameters<Current['finish']>[0]>((resolve) => {
      let settled = false;
      const done = (r: Parameters<Current['finish']>[0]) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(r);
      };
      cur.finish = done;
      this.current = cur;
      const timer = setTimeout(() => {
        done({
          status: 'timed_out',
          output: null,
          error: { code: 'timeout', message: `the run exceeded its timeout of ${timeoutMs} ms and was killed` },
        });
        this.kill();
      }, timeoutMs);
      void this.exited.then(async ({ code, signal }) => {
        // Let the last output and fd-3 messages of a dying process arrive first; a last stderr line
        // without a newline counts too.
        await new Promise((r) => setImmediate(r));
        for (const f of this.flushers) f();
        done({ status: 'failed', output: null, error: this.exitError(code, signal) });
      });
      if (this.dead) return;
      this.child.stdin!.write(
        `${JSON.stringify({ t: 'invoke', input: input ?? null, context: { ...context, deadline } })}\n`,
      );
    });
    // Output written before the result may still sit in the stdout/stderr pipes: two turns of the loop read it.
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    for (const f of this.flushers) f();
    this.current = null;
    this.busy = false;
    this.lastUsed = Date.now();
    if (
      outcome.error &&
      ['timeout', 'out_of_memory', 'crashed', 'uncaught_exception', 'unhandled_rejection', 'output_too_large'].includes(
        outcome.error.code,
      )
    )
      this.kill();
    else this.freeze();
    const cpuAfter = this.dead ? this.lastCpu : this.cpu();
    const cpuMs = cpuBefore !== null && cpuAfter !== null ? Math.max(0, Math.round(cpuAfter - cpuBefore)) : null;
    return {
      ...outcome,
      logs: cur.logs,
      logsTruncated: cur.truncated,
      durationMs: Math.round(performance.now() - started),
      cpuMs,
    };
  }

  /** Processes of the environment's group (found once, see `groupMembers`). */
  private members: number[] | null = null;
  /** CPU time of the group when it was killed, ms (its `/proc` entries are gone afterwards). */
  private lastCpu: number | null = null;
  /** True while stopped between invocations. */
  frozen = false;

  /** CPU time of the environment's processes so far, ms; null when unknown. */
  private cpu(): number | null {
    const pid = this.child?.pid;
    if (!pid || this.dead) return null;
    this.members ??= groupMembers(pid);
    return cpuTimeMs(this.members);
  }

  /** Stop the environment's processes until {@link thaw} (when the spec asks for it). */
  private freeze(): void {
    const pid = this.child?.pid;
    if (!this.spec.freeze || !pid || this.dead || this.frozen) return;
    this.frozen = freezeGroup(pid, this.spec.backstop === true);
  }

  private thaw(): void {
    const pid = this.child?.pid;
    if (!this.frozen || !pid) return;
    this.frozen = false;
    thawGroup(pid);
  }

  /** Why the process ended without a result (heap exhaustion is recognised on stderr). */
  private exitError(code: number | null, signal: NodeJS.Signals | null): SandboxError {
    if (this.oomReported) {
      return { code: 'out_of_memory', message: `the process ran out of memory (limit ${this.spec.memoryMb} MiB)` };
    }
    return {
      code: 'crashed',
      message: `the process exited (${signal ? `signal ${signal}` : `code ${code}`}) without returning a result`,
    };
  }

  /** Keep only known string fields, bounded, and hide the host path of the artifact (see {@link cleanError}). */
  private clean(e: SandboxError): SandboxError {
    return cleanError(e, this.spec.root, this.spec.memoryMb);
  }

  /** SIGKILL the whole process group (falls back to the child alone); marks the environment dead. */
  kill(): void {
    if (!this.dead && this.members) this.lastCpu = this.cpu();
    this.dead = true;
    const child = this.child;
    if (!child) return;
    try {
      if (child.pid) process.kill(-child.pid, 'SIGKILL');
      else child.kill('SIGKILL');
    } catch {
      try {
        child.kill('SIGKILL');
      } catch {
        /* already gone */
      }
    }
  }

  /** Resolves when the process has exited. */
  get closed(): Promise<unknown> {
    return this.exited;
  }
}
