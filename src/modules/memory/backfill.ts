/**
 * The background embedder of memories stored without a vector: automatic execution
 * memories are inserted at once without one (the writer, writer.ts; full-text search finds them
 * immediately) and this loop gives them their vectors when the process has time for it, so the
 * embedding model — the sentence encoder costs ~5–10 ms of CPU per sentence, far more than the
 * execution itself — never competes with requests at full load and no memory is ever dropped for
 * want of embedding capacity.
 *
 * When it runs: after each batch it watches the event loop for {@link BackfillOptions.probeMs}
 * (100 ms); if the main thread was busy less than {@link BackfillOptions.idleUtilization} (25 %) of
 * that window, the next batch of {@link BackfillOptions.batch} (32) memories is embedded; otherwise it
 * waits, except that at least {@link BackfillOptions.minBatch} (16) memories are embedded every
 * {@link BackfillOptions.minEveryMs} (5 s), so a process that is never idle still catches up at a
 * bounded cost (~16 sentences per 5 s, a few % of one core). The probe window is measured while no
 * batch of its own runs, so its own work does not count as load.
 *
 * Steps never overlap (one loop per app; {@link EmbeddingBackfill.settle} waits for the step in
 * flight). Failures (the provider down) are logged once per outage and retried at the minimum rate.
 * Nothing here is durable state: the rows without a vector are the queue, so a restart resumes
 * (`initMemory` kicks the loop when any is left).
 */
import { performance } from 'node:perf_hooks';

/** Tuning of {@link EmbeddingBackfill}; every field has the default named in the module comment. */
export interface BackfillOptions {
  /** Memories embedded per step when idle. */
  batch?: number;
  /** Memories embedded per step when the process is busy but {@link minEveryMs} passed since the last step. */
  minBatch?: number;
  /** Longest time between two steps while memories wait, ms. */
  minEveryMs?: number;
  /** Length of the event-loop probe before each step, ms. */
  probeMs?: number;
  /** Event-loop utilisation (0..1) under which the process counts as idle. */
  idleUtilization?: number;
}

/**
 * Embed up to `max` memories that have no vector yet.
 * @returns how many were looked at (fewer than `max`: none is left)
 */
export type BackfillStep = (max: number) => Promise<number>;

/** The per-app background embedding loop; see the module comment. */
export class EmbeddingBackfill {
  private wanted = false;
  private stopped = false;
  private loop: Promise<void> | null = null;
  /** The step in flight (steps never overlap). */
  private stepping: Promise<number> | null = null;
  /** When the last step ended (or the loop was created), `performance.now()` ms. */
  private lastStep = performance.now();
  private failing = false;
  private readonly batch: number;
  private readonly minBatch: number;
  private readonly minEveryMs: number;
  private readonly probeMs: number;
  private readonly idle: number;

  constructor(
    private readonly step: BackfillStep,
    private readonly log: { warn(obj: object, msg: string): void; info(obj: object, msg: string): void },
    opts: BackfillOptions = {},
  ) {
    this.batch = Math.max(1, opts.batch ?? 32);
    this.minBatch = Math.max(1, opts.minBatch ?? 16);
    this.minEveryMs = Math.max(0, opts.minEveryMs ?? 5000);
    this.probeMs = Math.max(1, opts.probeMs ?? 100);
    this.idle = opts.idleUtilization ?? 0.25;
  }

  /** True while memories may be waiting for a vector (a step is due or in flight). */
  get active(): boolean {
    return this.wanted || this.stepping !== null;
  }

  /** Memories without a vector may exist: start the loop if it is not running. O(1); never throws. */
  kick(): void {
    if (this.stopped) return;
    this.wanted = true;
    this.loop ??= this.run().finally(() => {
      this.loop = null;
      if (this.wanted && !this.stopped) this.kick();
    });
  }

  /**
   * Embed every memory that lacks a vector now, without waiting for idle time (tests; an operator's
   * re-embedding). Resolves when a step found none left.
   * @throws the provider's or database's error of a failing step
   */
  async settle(): Promise<void> {
    for (;;) {
      const n = await this.exclusive(this.batch);
      if (n < this.batch) return;
    }
  }

  /** Stop the loop (shutdown): waits for the step in flight; later kicks do nothing. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }

  private async run(): Promise<void> {
    while (this.wanted && !this.stopped) {
      const before = performance.eventLoopUtilization();
      await new Promise<void>((resolve) => setTimeout(resolve, this.probeMs).unref());
      if (this.stopped) return;
      const idle = performance.eventLoopUtilization(before).utilization < this.idle;
      // a failing provider is retried at the minimum rate only
      if ((!idle || this.failing) && performance.now() - this.lastStep < this.minEveryMs) continue;
      const max = idle ? this.batch : this.minBatch;
      this.wanted = false; // a memory inserted during the step kicks again
      try {
        const n = await this.exclusive(max);
        if (n >= max) this.wanted = true;
        if (this.failing) this.log.info({}, 'memory embedding back-fill recovered');
        this.failing = false;
      } catch (err) {
        if (!this.failing)
          this.log.warn(
            { err: (err as Error).message },
            'memory embedding back-fill failed; retrying in the background',
          );
        this.failing = true;
        this.wanted = true;
      }
    }
  }

  /** One step, after the one in flight (if any). */
  private async exclusive(max: number): Promise<number> {
    while (this.stepping) await this.stepping.catch(() => undefined);
    const p = this.step(max);
    this.stepping = p;
    try {
      return await p;
    } finally {
      this.stepping = null;
      this.lastStep = performance.now();
    }
  }
}
