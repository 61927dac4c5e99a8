/**
 * Provisioned environments (AWS Lambda's provisioned concurrency): after a cold start
 * of a version, the sandbox starts one more environment of that version in the background — same
 * command line, permission flags, network namespace, uid and memory limit, module imported, no
 * invocation yet — so the version's next cold start takes it instead of spawning Node.js while
 * the caller waits. A spare is used once, like any new environment (pooled afterwards when the warm
 * pool has room, else killed after its run), and is replaced when taken.
 *
 * Bounds: one spare per version, at most `max` in all (the least recently provisioned goes first),
 * each killed after `idleMs` unused; {@link Spares.drain} and {@link Spares.killAll} follow the
 * pool's rules (rollback, stop, redeploy, shutdown).
 */
import type { Environment } from './environment.js';
import type { LogEntry, SandboxError } from './contract.js';

/** What `Environment.start` resolves to. */
export type StartResult =
  | { env: Environment; error?: undefined; logs: LogEntry[]; logsTruncated: boolean }
  | { env?: undefined; error: SandboxError; status: 'failed' | 'timed_out'; logs: LogEntry[]; logsTruncated: boolean };

interface Spare {
  start: Promise<StartResult>;
  timer: NodeJS.Timeout;
}

/** The spares of one sandbox, by warm-pool key. */
export class Spares {
  private readonly byKey = new Map<string, Spare>();

  constructor(private readonly opts: { max: number; idleMs: number }) {}

  /** Number of spares (starting or ready). */
  get size(): number {
    return this.byKey.size;
  }

  /**
   * The spare of `key`, removed from the set, waited for up to `timeoutMs`: its environment, or
   * null (none, it failed to start or died meanwhile, or it is not ready in time: then it is killed
   * when it is) — the caller starts one itself.
   */
  async take(key: string, timeoutMs: number): Promise<StartResult | null> {
    const s = this.byKey.get(key);
    if (!s) return null;
    this.byKey.delete(key);
    clearTimeout(s.timer);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), timeoutMs)));
    const r = await Promise.race([s.start, late]);
    clearTimeout(timer);
    if (!r) void s.start.then((x) => x.env?.kill());
    return r?.env && !r.env.dead ? r : null;
  }

  /** Start a spare of `key` with `start` unless it has one; makes room by killing the oldest spare. */
  provision(key: string, start: () => Promise<StartResult>): void {
    if (this.opts.max <= 0 || this.byKey.has(key)) return;
    while (this.byKey.size >= this.opts.max) this.discard(this.byKey.keys().next().value as string);
    const timer = setTimeout(() => this.discard(key), this.opts.idleMs);
    timer.unref();
    this.byKey.set(key, { start: start(), timer });
  }

  /** Kill the spares whose key matches. */
  drain(match: (key: string) => boolean): void {
    for (const k of [...this.byKey.keys()]) if (match(k)) this.discard(k);
  }

  /** Kill every spare. */
  killAll(): void {
    this.drain(() => true);
  }

  private discard(key: string): void {
    const s = this.byKey.get(key);
    if (!s) return;
    this.byKey.delete(key);
    clearTimeout(s.timer);
    void s.start.then((r) => r.env?.kill());
  }
}
