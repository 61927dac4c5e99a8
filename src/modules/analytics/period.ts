/**
 * Periods of the analytics answers: `window` (`24h` | `7d` | `30d` | `90d`, ending now) or
 * `from`/`to` (ISO 8601, at most 366 days apart), and the per-day views built on them.
 */
import { AppError } from '../../http/errors.js';
import type { UsageTotals } from '../sessions/usage.js';

export type Window = '24h' | '7d' | '30d' | '90d';

const WINDOW_MS: Record<Window, number> = {
  '24h': 86_400_000,
  '7d': 7 * 86_400_000,
  '30d': 30 * 86_400_000,
  '90d': 90 * 86_400_000,
};
/** Longest `from`..`to` span, days. */
export const MAX_PERIOD_DAYS = 366;

/** A resolved period. */
export interface Period {
  from: Date;
  to: Date;
  window: Window | null;
  /** First and last UTC day the counters cover (inclusive). */
  fromDay: string;
  toDay: string;
}

/** Period as shown in answers. */
export function periodView(p: Period) {
  return { from: p.from.toISOString(), to: p.to.toISOString(), window: p.window, from_day: p.fromDay, to_day: p.toDay };
}

function badQuery(pointer: string, message: string): AppError {
  return new AppError('validation_failed', `${pointer.slice(1)} ${message}`, {
    errors: [{ in: 'query', pointer, message }],
  });
}

/**
 * Resolve `window` or `from`/`to` (default: `def` ending now).
 * @throws AppError validation_failed (both given, from ≥ to, span over 366 days)
 */
export function resolvePeriod(
  q: { window?: Window; from?: string; to?: string },
  def: Window,
  now = new Date(),
): Period {
  if (q.window && (q.from || q.to)) throw badQuery('/window', 'cannot be combined with from/to');
  let from: Date;
  let to: Date;
  if (q.from || q.to) {
    to = q.to ? new Date(q.to) : now;
    from = q.from ? new Date(q.from) : new Date(to.getTime() - WINDOW_MS[def]);
    if (Number.isNaN(from.getTime())) throw badQuery('/from', 'must be an ISO 8601 date-time');
    if (Number.isNaN(to.getTime())) throw badQuery('/to', 'must be an ISO 8601 date-time');
    if (from.getTime() >= to.getTime()) throw badQuery('/from', 'must be before to');
    if (to.getTime() - from.getTime() > MAX_PERIOD_DAYS * 86_400_000)
      throw badQuery('/from', `must be at most ${MAX_PERIOD_DAYS} days before to`);
  } else {
    to = now;
    from = new Date(now.getTime() - WINDOW_MS[q.window ?? def]);
  }
  // `to` is exclusive: its UTC day counts only when the period reaches into it.
  const lastInstant = new Date(to.getTime() - 1);
  return {
    from,
    to,
    window: q.from || q.to ? null : (q.window ?? def),
    fromDay: from.toISOString().slice(0, 10),
    toDay: lastInstant.toISOString().slice(0, 10),
  };
}

/** Every UTC day of the period, `YYYY-MM-DD`, oldest first. */
export function daysOf(p: Period): string[] {
  const out: string[] = [];
  for (
    let d = new Date(`${p.fromDay}T00:00:00Z`);
    d.toISOString().slice(0, 10) <= p.toDay;
    d = new Date(d.getTime() + 86_400_000)
  )
    out.push(d.toISOString().slice(0, 10));
  return out;
}

/** `part / whole` rounded to 4 decimals; null when `whole` is 0. */
export function rate(part: number, whole: number): number | null {
  return whole ? Math.round((part / whole) * 10_000) / 10_000 : null;
}

/** Usage totals as shown in answers (with `success_rate`). */
export function usageView(t: UsageTotals) {
  return {
    calls: t.calls,
    successes: t.successes,
    failures: t.failures,
    success_rate: rate(t.successes, t.calls),
    avg_duration_ms: t.avg_duration_ms,
  };
}

/** Daily series with every day of the period (zeros where nothing happened), PostHog-style. */
export function filledDays(p: Period, rows: Array<UsageTotals & { day: string }>) {
  const byDay = new Map(rows.map((r) => [r.day, r]));
  return daysOf(p).map((day) => {
    const r = byDay.get(day);
    return {
      day,
      calls: r?.calls ?? 0,
      successes: r?.successes ?? 0,
      failures: r?.failures ?? 0,
      avg_duration_ms: r?.avg_duration_ms ?? 0,
    };
  });
}
