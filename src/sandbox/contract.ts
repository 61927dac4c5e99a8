/**
 * The sandbox's contract with its callers (see `runner.ts`): its options, what a run takes and
 * what it produces (result, error, captured log lines), plus the mapping of errors crossing the
 * process boundary: a handler's error reported by the process (bounded, host paths hidden) and a
 * broker's refusal sent back to the handler.
 */
import type { EgressResolver } from './egress.js';

/** One captured line of output. */
export interface LogEntry {
  /** ISO 8601 UTC time the host received the line. */
  ts: string;
  /** `stdout`/`stderr`: the process's output; `platform`: a `context.log.*` line or a platform event (denied egress, …). */
  stream: 'stdout' | 'stderr' | 'platform';
  message: string;
  /** For `platform` lines: `info` | `warn` | `error`. */
  level?: 'info' | 'warn' | 'error';
  /** Structured fields of a `context.log.*` line. */
  fields?: Record<string, unknown>;
}

/** Why a run did not succeed. `code` values: see `bootstrap.ts`, plus `timeout`, `crashed`, `sandbox_error`. */
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
  /** Wall-clock time of the run, ms: for a cold start spawn + module load + handler, for a warm one the handler alone. */
  durationMs: number;
  /** True when the run started a new environment (a cold start). */
  cold: boolean;
  /**
   * CPU time (user + system) the environment's processes used from the start of the invocation
   * until it was frozen again, ms (10 ms resolution; module load excluded), read by the host from
   * `/proc` (see `freezer.ts`); null when it could not be read (no `/proc`, no process).
   */
  cpuMs: number | null;
}

/**
 * Answers the handler's platform calls (`context.tools.execute`, `context.memory.get`, …) on the
 * host, as the invoking agent. A thrown `{ code, message, status? }` becomes a rejected promise in
 * the handler (a normal, catchable `PlatformError`).
 */
export type Broker = (op: string, args: unknown) => Promise<unknown>;

/** Per-invocation hooks. */
export interface InvokeHooks {
  broker?: Broker;
  /** Called with each log line as it is captured (live tailing). */
  onLog?: (entry: LogEntry) => void;
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
  /**
   * Warm-pool key (one deployment version, e.g. `<agent>/<deployment>/<activated at>`): runs with
   * the same key share environments. Absent: a one-off environment, killed after the run.
   */
  key?: string;
  /** Answers the handler's platform calls (`context.tools`, `context.memory`, …). */
  broker?: Broker;
  /** Called with each log line as it is captured (live tailing). */
  onLog?: (entry: LogEntry) => void;
  /**
   * Egress allow-list of the deployment (normalised patterns, see `egress.ts`). Non-empty: the
   * environment gets a host proxy that admits only these targets (needs {@link SandboxOptions.egress}).
   */
  egress?: string[];
}

/** Options of a {@link Sandbox}. */
export interface SandboxOptions {
  memoryMb: number;
  maxLogBytes: number;
  maxOutputBytes: number;
  concurrency: number;
  network: 'auto' | 'isolated' | 'allowed';
  /** File-system wall: `bwrap` (default; `isolation.ts`) or `off` (Node's permission model alone). */
  isolation?: 'bwrap' | 'off';
  /** Freeze environments between invocations (`freezer.ts`; default true). */
  freeze?: boolean;
  /** Node binary (default: the current one). */
  nodePath?: string;
  /**
   * Unprivileged identity for the runs when this process is root: `auto` = 65534:65534 (nobody)
   * if that user can read `readableDir`, else stay root (logged); explicit = required; null = never.
   */
  user?: { uid: number; gid: number } | 'auto' | null;
  /** The directory runs read from (its parents must be traversable by `user`). */
  readableDir?: string;
  /** Whole-process memory limit (`RLIMIT_DATA`), MiB; default `2 × memoryMb + 64` (V8's young generation, code space and Node's own ~40 MiB). 0 = none. */
  processMemoryMb?: number;
  /** Warm environments: per version, in all, and how long an idle one is kept (ms). Default: no pool (every run is cold). */
  warm?: { perVersion: number; total: number; idleMs: number };
  /** Egress proxy: resolves and SSRF-checks a target host (throws to deny). Without it, `egress` of a run is ignored (no network). */
  egress?: { resolve: EgressResolver };
  /** Keep one provisioned environment per recently cold-started version (`spares.ts`; default true). */
  provisioned?: boolean;
  /** Start processes through a fork server (`spawner.ts`; default true); false: `spawn` in this process (blocks its event loop for the fork). */
  forkServer?: boolean;
}

/**
 * Keep only the known string fields of an error reported by the process, bounded (code 64,
 * others 4096 characters), and hide the host path `root` of the artifact (shown as `/app`).
 * `memoryMb`: the environment's memory limit, added to an `out_of_memory` message.
 */
export function cleanError(e: SandboxError, root: string, memoryMb: number): SandboxError {
  const s = (v: unknown, max: number) => (typeof v === 'string' ? v.split(root).join('/app').slice(0, max) : undefined);
  const out: SandboxError = { code: s(e.code, 64) ?? 'handler_error', message: s(e.message, 4096) ?? '' };
  for (const k of ['name', 'stack', 'permission', 'resource'] as const) {
    const v = s(e[k], 4096);
    if (v !== undefined) out[k] = v;
  }
  if (out.code === 'out_of_memory') out.message = `${out.message} (limit ${memoryMb} MiB)`;
  return out;
}

/**
 * The `error` of a failed reply to a platform call: `{ code, message, status?, errors?, details? }`
 * taken from what the {@link Broker} threw (`platform_error` / "platform call failed" when absent);
 * `details` are the problem's extension members (`approval_id`, `execution_id`, …) when an object.
 */
export function brokerError(thrown: unknown): {
  code: string;
  message: string;
  status?: number;
  errors?: unknown[];
  details?: Record<string, unknown>;
} {
  const err = thrown as
    | { code?: unknown; message?: unknown; status?: unknown; errors?: unknown; details?: unknown }
    | null
    | undefined;
  const details = err?.details;
  return {
    code: typeof err?.code === 'string' ? err.code : 'platform_error',
    message: typeof err?.message === 'string' ? err.message : 'platform call failed',
    ...(typeof err?.status === 'number' ? { status: err.status } : {}),
    ...(Array.isArray(err?.errors) ? { errors: err.errors } : {}),
    ...(details && typeof details === 'object' && !Array.isArray(details)
      ? { details: details as Record<string, unknown> }
      : {}),
  };
}
