/**
 * The sandbox: runs one handler call of deployed agent code in its own Node.js child process.
 *
 * Isolation (each run, fresh process, nothing shared between runs):
 * - Node's permission model (`--experimental-permission`, Node ≥ 20): the file system is readable
 *   only inside the unpacked artifact directory and writable nowhere; child processes, worker
 *   threads, native add-ons and WASI are refused (no `--allow-*` flag for them).
 * - `--max-old-space-size` caps the V8 heap; a wall-clock timer SIGKILLs the process group, and
 *   coreutils `timeout` (when present) kills it 2 s later anyway, should this process have died.
 * - When the server runs as root, runs switch to an unprivileged user (65534, "nobody", by
 *   default) — a second wall should the permission model ever be bypassed.
 * - A minimal environment: the deployment's own variables plus `NODE_ENV`, `TZ`, `LANG` — none
 *   of the platform's (no database URL, no keys).
 * - Network: when the host allows it (root, or unprivileged user namespaces), the process starts
 *   in an empty network namespace (`unshare --net`): no interface but a down loopback, so no
 *   traffic at all — not to the internet, not to the platform or its database on localhost.
 *   Otherwise (`SANDBOX_NETWORK=auto` on a host without namespaces, or `allowed`), deployed code
 *   HAS network access. {@link Sandbox.networkIsolated} tells which.
 * - stdout/stderr are captured line by line with timestamps up to a byte cap; the result travels
 *   on a separate pipe (fd 3) with its own cap.
 *
 * No warm pool: permissions are per process and per artifact directory, and a cold start is
 * ~50 ms here; a pool would have to be per deployment to keep the same isolation.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { BOOTSTRAP_SOURCE } from './bootstrap.js';

/** One captured line of output. */
export interface LogEntry {
  /** ISO 8601 UTC time the parent received the line. */
  ts: string;
  stream: 'stdout' | 'stderr';
  message: string;
}

/** Why a run did not succeed. `code` values: see `bootstrap.ts`, plus `timeout`, `out_of_memory`, `crashed`, `no_result`, `sandbox_error`. */
export interface SandboxError {
  code: string;
  message: string;
  name?: string;
  stack?: string;
  permission?: string;
  resource?: string;
}

/** What one run produced. */
export interface SandboxResult {
  status: 'succeeded' | 'failed' | 'timed_out';
  /** The handler's return value (JSON), null unless succeeded. */
  output: unknown;
  error: SandboxError | null;
  logs: LogEntry[];
  logsTruncated: boolean;
  /** Wall-clock time from spawn to exit (process start + module load + handler), ms. */
  durationMs: number;
}

/** One run. */
export interface SandboxRun {
  /** `load`: import the entrypoint and check it exports a handler (prepare step); `invoke`: call it. */
  mode: 'load' | 'invoke';
  /** Unpacked artifact directory (real path). The only readable place. */
  root: string;
  /** Entrypoint, relative to `root`. */
  entrypoint: string;
  input?: unknown;
  /** Passed to the handler as its second argument (plus `deadline` and `getRemainingTimeInMillis()`). */
  context?: Record<string, unknown>;
  timeoutMs: number;
  /** Extra environment variables of the deployment. */
  env?: Record<string, string>;
}

/** Options of a {@link Sandbox}. */
export interface SandboxOptions {
  memoryMb: number;
  maxLogBytes: number;
  maxOutputBytes: number;
  concurrency: number;
  network: 'auto' | 'isolated' | 'allowed';
  /** Node binary (default: the current one). */
  nodePath?: string;
  /**
   * Unprivileged identity for the runs when this process is root: `auto` = 65534:65534 (nobody)
   * if that user can read `readableDir`, else stay root (logged); explicit = required; null = never.
   */
  user?: { uid: number; gid: number } | 'auto' | null;
  /** The directory runs read from (its parents must be traversable by `user`). */
  readableDir?: string;
}

const MAX_LOG_LINES = 1000;
const MAX_LINE = 8 * 1024;

/** How this host can cut a process off the network, or null. Probed once per process. */
let netProbe: { bin: string; flags: string[] } | null | undefined;

function findBinary(name: string): string | null {
  for (const dir of (process.env.PATH ?? '/usr/bin:/bin').split(':').concat(['/usr/bin', '/bin'])) {
    const p = path.join(dir, name);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return p;
    } catch {
      /* next */
    }
  }
  return null;
}

/** Probe `unshare --net` (as root) and `unshare --net --map-root-user` (unprivileged user namespaces). */
export function probeNetworkIsolation(): { bin: string; flags: string[] } | null {
  if (netProbe !== undefined) return netProbe;
  netProbe = null;
  const bin = findBinary('unshare');
  if (bin) {
    for (const flags of [['--net'], ['--net', '--map-root-user']]) {
      const r = spawnSync(bin, [...flags, '--', process.execPath, '-e', '0'], { timeout: 5000, stdio: 'ignore' });
      if (r.status === 0) {
        netProbe = { bin, flags };
        break;
      }
    }
  }
  return netProbe;
}

/** coreutils `timeout`, used as a backstop that kills a run even if this process dies. */
let timeoutBin: string | null | undefined;

/** Runs handler calls in child processes; holds the concurrency limit. One per app. */
export class Sandbox {
  private running = 0;
  private readonly children = new Set<ChildProcess>();
  private readonly waiting: Array<() => void> = [];
  private readonly prefix: string[];
  /** True when runs start in an empty network namespace (no network at all). */
  readonly networkIsolated: boolean;
  /** The uid/gid runs switch to (null: same user as this process). */
  readonly runAs: { uid: number; gid: number } | null = null;
  /** Why runs do not switch to an unprivileged user although this process is root (for a log line). */
  readonly runAsNote: string | null = null;

  constructor(private readonly opts: SandboxOptions) {
    const probe = opts.network === 'allowed' ? null : probeNetworkIsolation();
    if (opts.network === 'isolated' && !probe) {
      throw new Error('SANDBOX_NETWORK=isolated but this host cannot create network namespaces (unshare --net failed)');
    }
    this.networkIsolated = !!probe;
    const wanted = opts.user === 'auto' ? { uid: 65534, gid: 65534 } : (opts.user ?? null);
    if (wanted && process.getuid?.() === 0) {
      if (this.canRead(probe, wanted)) this.runAs = wanted;
      else if (opts.user === 'auto') this.runAsNote = `uid ${wanted.uid} cannot read ${opts.readableDir}: sandboxed code runs as root (make the path traversable, or set SANDBOX_USER)`;
      else throw new Error(`SANDBOX_USER=${wanted.uid}:${wanted.gid} cannot read ${opts.readableDir}`);
    }
    const ids = this.runAs && probe ? ['-S', String(this.runAs.uid), '-G', String(this.runAs.gid)] : [];
    this.prefix = probe ? [probe.bin, ...probe.flags, ...ids, '--'] : [];
  }

  /** Can `user` (entered the same way runs are) read and traverse `readableDir`? */
  private canRead(probe: { bin: string; flags: string[] } | null, user: { uid: number; gid: number }): boolean {
    const dir = this.opts.readableDir;
    if (!dir) return true;
    const node = this.opts.nodePath ?? process.execPath;
    const code = `require('fs').accessSync(${JSON.stringify(dir)}, require('fs').constants.R_OK | require('fs').constants.X_OK)`;
    const r = probe
      ? spawnSync(probe.bin, [...probe.flags, '-S', String(user.uid), '-G', String(user.gid), '--', node, '-e', code], { timeout: 5000, stdio: 'ignore', env: {} })
      : spawnSync(node, ['-e', code], { timeout: 5000, stdio: 'ignore', uid: user.uid, gid: user.gid, env: {} });
    return r.status === 0;
  }

  /** Kill every running child (app shutdown). */
  killAll(): void {
    for (const c of this.children) killGroup(c);
  }

  /** Runs in progress and waiting, for metrics and tests. */
  get load(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting.length };
  }

  /** Run one call. Never throws for anything the deployed code does; the result says what happened. */
  async run(r: SandboxRun): Promise<SandboxResult> {
    await this.acquire();
    try {
      return await this.spawnRun(r);
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

  private spawnRun(r: SandboxRun): Promise<SandboxResult> {
    const node = this.opts.nodePath ?? process.execPath;
    const nodeArgs = [
      '--experimental-permission',
      `--allow-fs-read=${r.root}`,
      '--disable-warning=ExperimentalWarning',
      `--max-old-space-size=${this.opts.memoryMb}`,
      '--input-type=module',
      '-e',
      BOOTSTRAP_SOURCE,
      r.mode,
      r.root,
      r.entrypoint,
      String(this.opts.maxOutputBytes),
    ];
    if (timeoutBin === undefined) timeoutBin = findBinary('timeout');
    // Backstop: `timeout` kills the run 2 s after its deadline even if this process has died meanwhile.
    const backstop = timeoutBin ? [timeoutBin, '-s', 'KILL', `${Math.ceil(r.timeoutMs / 1000) + 2}s`] : [];
    const argv = [...backstop, ...this.prefix, node, ...nodeArgs];
    const env: Record<string, string> = { ...(r.env ?? {}), NODE_ENV: 'production', TZ: 'UTC', LANG: 'C.UTF-8' };
    const started = performance.now();
    const deadline = Date.now() + r.timeoutMs;
    const logs: LogEntry[] = [];
    let logBytes = 0;
    let logsTruncated = false;
    const resultChunks: Buffer[] = [];
    let resultBytes = 0;
    let resultOverflow = false;
    let timedOut = false;
    const stderrTail: string[] = [];

    return new Promise<SandboxResult>((resolve) => {
      let child: ChildProcess;
      try {
        // detached: own process group, so a kill reaches `timeout`, `unshare` and node alike.
        // Without unshare (which switches user itself after creating the namespace), spawn as the user directly.
        const ids = this.runAs && !this.networkIsolated ? { uid: this.runAs.uid, gid: this.runAs.gid } : {};
        child = spawn(argv[0], argv.slice(1), { cwd: r.root, env, stdio: ['pipe', 'pipe', 'pipe', 'pipe'], detached: true, ...ids });
      } catch (err) {
        resolve({ status: 'failed', output: null, error: { code: 'sandbox_error', message: `cannot start the sandbox: ${(err as Error).message}` }, logs, logsTruncated, durationMs: 0 });
        return;
      }
      this.children.add(child);
      const capture = (stream: 'stdout' | 'stderr') => {
        let partial = '';
        const push = (line: string) => {
          if (stream === 'stderr') {
            stderrTail.push(line);
            if (stderrTail.length > 20) stderrTail.shift();
          }
          const msg = line.length > MAX_LINE ? `${line.slice(0, MAX_LINE)}…` : line;
          const size = Buffer.byteLength(msg) + 1;
          if (logsTruncated || logBytes + size > this.opts.maxLogBytes || logs.length >= MAX_LOG_LINES) {
            logsTruncated = true;
            return;
          }
          logBytes += size;
          logs.push({ ts: new Date().toISOString(), stream, message: msg });
        };
        return {
          data: (chunk: Buffer) => {
            const text = partial + chunk.toString('utf8');
            const lines = text.split('\n');
            partial = lines.pop() ?? '';
            if (partial.length > MAX_LINE * 4) {
              lines.push(partial);
              partial = '';
            }
            for (const l of lines) push(l.replace(/\r$/, ''));
          },
          end: () => {
            if (partial) push(partial);
            partial = '';
          },
        };
      };
      const out = capture('stdout');
      const errs = capture('stderr');
      child.stdout!.on('data', out.data);
      child.stderr!.on('data', errs.data);
      const resultPipe = child.stdio[3] as NodeJS.ReadableStream;
      resultPipe.on('data', (chunk: Buffer) => {
        resultBytes += chunk.length;
        if (resultBytes > this.opts.maxOutputBytes + 64 * 1024) {
          resultOverflow = true;
          killGroup(child);
          return;
        }
        resultChunks.push(chunk);
      });
      resultPipe.on('error', () => {});
      child.stdin!.on('error', () => {});
      const context = { ...(r.context ?? {}), deadline };
      child.stdin!.end(JSON.stringify({ input: r.input ?? null, context }));

      const timer = setTimeout(() => {
        timedOut = true;
        killGroup(child);
      }, r.timeoutMs);

      child.on('error', (err) => {
        clearTimeout(timer);
        this.children.delete(child);
        resolve({ status: 'failed', output: null, error: { code: 'sandbox_error', message: `cannot start the sandbox: ${err.message}` }, logs, logsTruncated, durationMs: Math.round(performance.now() - started) });
      });
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        this.children.delete(child);
        out.end();
        errs.end();
        const durationMs = Math.round(performance.now() - started);
        const base = { logs, logsTruncated, durationMs };
        if (timedOut) {
          resolve({ ...base, status: 'timed_out', output: null, error: { code: 'timeout', message: `the run exceeded its timeout of ${r.timeoutMs} ms and was killed` } });
          return;
        }
        if (resultOverflow) {
          resolve({ ...base, status: 'failed', output: null, error: { code: 'output_too_large', message: `the handler result is larger than ${this.opts.maxOutputBytes} bytes` } });
          return;
        }
        let msg: { status?: string; output_json?: string; error?: SandboxError } | null = null;
        if (resultBytes > 0) {
          try {
            msg = JSON.parse(Buffer.concat(resultChunks).toString('utf8'));
          } catch {
            msg = null;
          }
        }
        if (msg?.status === 'succeeded' && typeof msg.output_json === 'string') {
          let output: unknown = null;
          try {
            output = JSON.parse(msg.output_json);
          } catch {
            resolve({ ...base, status: 'failed', output: null, error: { code: 'output_not_serializable', message: 'the handler result is not JSON' } });
            return;
          }
          resolve({ ...base, status: 'succeeded', output, error: null });
          return;
        }
        if (msg?.status === 'failed' && msg.error && typeof msg.error === 'object') {
          resolve({ ...base, status: 'failed', output: null, error: cleanError(msg.error, r.root) });
          return;
        }
        const tail = stderrTail.join('\n');
        if (/heap out of memory|Allocation failed/i.test(tail)) {
          resolve({ ...base, status: 'failed', output: null, error: { code: 'out_of_memory', message: `the process ran out of memory (limit ${this.opts.memoryMb} MiB heap)` } });
          return;
        }
        if (code === 13) {
          resolve({ ...base, status: 'failed', output: null, error: { code: 'no_result', message: 'the handler returned a promise that never settled' } });
          return;
        }
        resolve({
          ...base,
          status: 'failed',
          output: null,
          error: { code: 'crashed', message: `the process exited (${signal ? `signal ${signal}` : `code ${code}`}) without returning a result` },
        });
      });
    });
  }
}

/** SIGKILL the child's whole process group (falls back to the child alone). */
function killGroup(child: ChildProcess): void {
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

/** Keep only known string fields, bounded, and hide the host path of the artifact (shown as `/app`). */
function cleanError(e: SandboxError, root: string): SandboxError {
  const s = (v: unknown, max: number) => (typeof v === 'string' ? v.split(root).join('/app').slice(0, max) : undefined);
  const out: SandboxError = { code: s(e.code, 64) ?? 'handler_error', message: s(e.message, 4096) ?? '' };
  for (const k of ['name', 'stack', 'permission', 'resource'] as const) {
    const v = s(e[k], 4096);
    if (v !== undefined) out[k] = v;
  }
  return out;
}
