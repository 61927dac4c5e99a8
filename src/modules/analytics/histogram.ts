/**
 * Fixed-bucket latency histograms (Prometheus-style): cheap to add up across seconds, minutes and
 * instances, and good enough for p50/p95/p99 (linear interpolation inside a bucket).
 */

/** Upper bounds of the latency buckets, ms; one more overflow bucket follows. */
export const LATENCY_BOUNDS_MS = [
  1, 2, 3, 5, 8, 13, 20, 30, 50, 75, 100, 150, 250, 400, 600, 1000, 1500, 2500, 4000, 6000, 10000, 20000, 30000, 60000,
] as const;

/** Number of buckets (bounds + overflow). */
export const BUCKETS = LATENCY_BOUNDS_MS.length + 1;

/** Bucket index of a duration in ms. */
export function bucketOf(ms: number): number {
  // Bounds are few: a linear scan beats a binary search here.
  for (let i = 0; i < LATENCY_BOUNDS_MS.length; i++) if (ms <= LATENCY_BOUNDS_MS[i]) return i;
  return LATENCY_BOUNDS_MS.length;
}

/** Estimated `p`-quantile (0..1) of a histogram, ms; null when empty. `max` caps the overflow bucket. */
export function percentile(buckets: ArrayLike<number>, p: number, max?: number): number | null {
  let total = 0;
  for (let i = 0; i < buckets.length; i++) total += buckets[i] ?? 0;
  if (!total) return null;
  const rank = p * total;
  let cum = 0;
  for (let i = 0; i < buckets.length; i++) {
    const n = buckets[i] ?? 0;
    if (!n) continue;
    if (cum + n >= rank) {
      const lower = i === 0 ? 0 : LATENCY_BOUNDS_MS[i - 1];
      const upper = i < LATENCY_BOUNDS_MS.length ? LATENCY_BOUNDS_MS[i] : Math.max(max ?? lower * 2, lower);
      const v = lower + ((upper - lower) * (rank - cum)) / n;
      const capped = max !== undefined ? Math.min(v, max) : v;
      return Math.round(capped * 100) / 100;
    }
    cum += n;
  }
  return max ?? null;
}

/** Element-wise sum into `into` (grown as needed). */
export function addBuckets(into: number[], from: ArrayLike<number>): number[] {
  for (let i = 0; i < from.length; i++) into[i] = (into[i] ?? 0) + (from[i] ?? 0);
  return into;
}
