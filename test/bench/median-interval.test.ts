import { describe, expect, it } from 'vitest';
import { median, medianInterval, verdict } from '../../bench/lib/median-interval.js';

describe('medianInterval (order-statistic interval of a median)', () => {
  it('gives [min, max] for 7 values, with its exact coverage 1 − 2/2^7', () => {
    const r = medianInterval([0.77, 0.76, 0.8, 0.65, 0.92, 0.91, 0.73]);
    expect(r).toMatchObject({ low: 0.65, high: 0.92, median: 0.77, n: 7 });
    expect(r.coverage).toBeCloseTo(1 - 2 / 128, 12);
  });

  it('narrows to the 2nd and 10th of 11 values (coverage 1 − 2·12/2^11) and the 4th and 12th of 15', () => {
    const eleven = medianInterval([11, 1, 10, 2, 9, 3, 8, 4, 7, 5, 6]);
    expect(eleven).toMatchObject({ low: 2, high: 10, median: 6 });
    expect(eleven.coverage).toBeCloseTo(1 - (2 * 12) / 2048, 12);
    const fifteen = medianInterval(Array.from({ length: 15 }, (_, i) => 15 - i));
    expect(fifteen).toMatchObject({ low: 4, high: 12, median: 8 });
    expect(fifteen.coverage).toBeCloseTo(1 - (2 * 576) / 32768, 12);
  });

  it('states the lower coverage of [min, max] when no interval reaches the level, and the mean of the middle two for an even count', () => {
    const r = medianInterval([3, 1, 2, 4]);
    expect(r).toMatchObject({ low: 1, high: 4, median: 2.5 });
    expect(r.coverage).toBeCloseTo(1 - 2 / 16, 12);
    expect(() => medianInterval([])).toThrow(RangeError);
  });

  it('gives the sample median the bench reports beside the interval', () => {
    expect(median([0.9, 0.7, 0.8])).toBe(0.8);
    expect(median([4, 1, 3, 2])).toBe(2.5);
  });

  it('decides a goal only when the whole interval is on one side of it', () => {
    expect(verdict(medianInterval([0.81, 0.82, 0.85, 0.9, 0.83, 0.84, 0.8]), 0.8)).toBe('met');
    expect(verdict(medianInterval([0.7, 0.72, 0.75, 0.79, 0.71, 0.74, 0.73]), 0.8)).toBe('not met');
    expect(verdict(medianInterval([0.77, 0.76, 0.8, 0.65, 0.92, 0.91, 0.73]), 0.8)).toBe('undecided');
  });
});
