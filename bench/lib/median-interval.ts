/**
 * A distribution-free confidence interval for a median from a few paired measurements (the
 * order-statistic interval behind the sign test; W. J. Conover, *Practical Nonparametric
 * Statistics*, 3rd ed., §3.2). For `n` values sorted x(1) ≤ … ≤ x(n), the interval
 * [x(k), x(n−k+1)] holds the true median with probability 1 − 2·P(B ≤ k−1), B ~ Binomial(n, ½),
 * whatever the values' distribution — only that the rounds are independent. The benches use it to
 * say whether a ratio's goal is met, missed, or not decided by this run's noise.
 */

/** The interval, its exact coverage (e.g. 0.984 for 7 values), and the sample median. */
export interface MedianInterval {
  low: number;
  high: number;
  /** Probability that the interval holds the true median, 0–1. */
  coverage: number;
  median: number;
  n: number;
}

/** P(B ≤ k) for B ~ Binomial(n, ½): a sum of binomial coefficients over 2^n (exact for n ≤ 1000). */
function binomialHalfCdf(n: number, k: number): number {
  let term = 1; // C(n, 0)
  let sum = 0;
  for (let i = 0; i <= k; i++) {
    sum += term;
    term = (term * (n - i)) / (i + 1);
  }
  return sum / 2 ** n;
}

/** The median of ascending `s` (the mean of the middle two for an even count). */
function medianOfSorted(s: readonly number[]): number {
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/** The sample median of `xs` (the mean of the middle two for an even count); NaN for none. */
export function median(xs: readonly number[]): number {
  return medianOfSorted([...xs].sort((a, b) => a - b));
}

/**
 * The narrowest order-statistic interval of `xs`' median with coverage ≥ `level` (default 0.95);
 * with fewer than 6 values no interval reaches 0.95 and [min, max] is given with its own coverage.
 * @throws RangeError when `xs` is empty
 */
export function medianInterval(xs: readonly number[], level = 0.95): MedianInterval {
  const n = xs.length;
  if (n === 0) throw new RangeError('medianInterval of no values');
  const s = [...xs].sort((a, b) => a - b);
  let k = 1;
  while (k + 1 <= Math.ceil(n / 2) && 1 - 2 * binomialHalfCdf(n, k) >= level) k++;
  return { low: s[k - 1], high: s[n - k], coverage: 1 - 2 * binomialHalfCdf(n, k - 1), median: medianOfSorted(s), n };
}

/** `met` when the whole interval is at or above `goal`, `not met` when it is below, else `undecided`. */
export function verdict(interval: MedianInterval, goal: number): 'met' | 'not met' | 'undecided' {
  if (interval.low >= goal) return 'met';
  if (interval.high < goal) return 'not met';
  return 'undecided';
}
