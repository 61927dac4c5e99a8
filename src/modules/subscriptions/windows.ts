/**
 * Quota windows (the UTC calendar day and month) and how a quota state is shown to clients: the
 * window states of the quotas answer, the `X-Quota-*` headers and the 429 of a call over the quota.
 */
import type { Static } from 'typebox';
import type { Plan } from '../../config.js';
import type { AppContext } from '../../context.js';
import { AppError } from '../../http/errors.js';
import type { subscriptions } from '../../db/schema/index.js';
import { limitsOf } from './plans.js';
import type { QuotaWindowSchema } from './schemas.js';
import type { QuotaState } from './state.js';

export type { QuotaState } from './state.js';
/** One quota window as shown to clients (`limit`/`remaining` null when unlimited; `resets_at` ISO 8601 UTC, the next window's start). */
export type QuotaWindowState = Static<typeof QuotaWindowSchema>;
export type QuotaWindow = QuotaWindowState['window'];

/** The current UTC windows: keys as `YYYY-MM-DD` dates and their reset instants. */
export interface Windows {
  day: string;
  month: string;
  dayResetsAt: Date;
  monthResetsAt: Date;
}

/** Calendar day and month (UTC) containing `now`. */
export function windowsAt(now: Date = new Date()): Windows {
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth();
  const d = now.getUTCDate();
  const pad = (n: number) => String(n).padStart(2, '0');
  return {
    day: `${y}-${pad(m + 1)}-${pad(d)}`,
    month: `${y}-${pad(m + 1)}-01`,
    dayResetsAt: new Date(Date.UTC(y, m, d + 1)),
    monthResetsAt: new Date(Date.UTC(y, m + 1, 1)),
  };
}

/** The day and month window states of `plan` with `dayUsed`/`monthUsed` calls counted in the windows `w`. */
export function windowStates(
  ctx: AppContext,
  plan: string,
  dayUsed: number,
  monthUsed: number,
  w: Windows,
): QuotaWindowState[] {
  const l = limitsOf(ctx, plan);
  const one = (window: QuotaWindow, limit: number | null, used: number, resets: Date): QuotaWindowState => ({
    window,
    limit,
    used,
    remaining: limit === null ? null : Math.max(0, limit - used),
    resets_at: resets.toISOString(),
  });
  return [one('day', l.day, dayUsed, w.dayResetsAt), one('month', l.month, monthUsed, w.monthResetsAt)];
}

/** Counters of a row as seen in the windows `w` (a counter of a past window reads 0). */
export function usedNow(
  row: Pick<typeof subscriptions.$inferSelect, 'dayStart' | 'dayUsed' | 'monthStart' | 'monthUsed'>,
  w: Windows,
): { day: number; month: number } {
  return { day: row.dayStart === w.day ? row.dayUsed : 0, month: row.monthStart === w.month ? row.monthUsed : 0 };
}

/**
 * The window that binds first: the limited window with the fewest calls remaining (the day on a
 * tie, since it resets sooner). null when every window is unlimited.
 */
export function tightestWindow(state: QuotaState): QuotaWindowState | null {
  let best: QuotaWindowState | null = null;
  for (const w of state.windows) {
    if (w.remaining === null) continue;
    if (!best || w.remaining < best.remaining!) best = w;
  }
  return best;
}

/**
 * `X-Quota-Limit`, `X-Quota-Remaining`, `X-Quota-Reset` (Unix seconds when the window resets)
 * for the tightest window; empty when unlimited.
 */
export function quotaHeaders(state: QuotaState): Record<string, string> {
  const w = tightestWindow(state);
  if (!w) return {};
  return {
    'x-quota-limit': String(w.limit),
    'x-quota-remaining': String(w.remaining),
    'x-quota-reset': String(Math.floor(new Date(w.resets_at).getTime() / 1000)),
  };
}

/**
 * The 429 `quota_exceeded` of a call at `now` over the quota of `plan`, given the counters after the
 * calls that were granted: `Retry-After` = seconds until the exhausted window resets (the later one
 * when both are), `X-Quota-*` headers of that window.
 */
export function quotaExceeded(
  ctx: AppContext,
  plan: Plan,
  dayUsed: number,
  monthUsed: number,
  w: Windows,
  now: Date,
): AppError {
  const windows = windowStates(ctx, plan, dayUsed, monthUsed, w);
  const exhausted = windows.filter((x) => x.remaining === 0);
  // When both are used up, the caller must wait for the later reset.
  const binding = exhausted[exhausted.length - 1] ?? windows[0];
  const retryAfter = Math.max(1, Math.ceil((new Date(binding.resets_at).getTime() - now.getTime()) / 1000));
  return new AppError(
    'quota_exceeded',
    `The ${binding.window === 'day' ? 'daily' : 'monthly'} quota of the ${plan} plan (${binding.limit} calls) is used up; it resets at ${binding.resets_at}`,
    {
      headers: {
        'retry-after': String(retryAfter),
        'x-quota-limit': String(binding.limit),
        'x-quota-remaining': '0',
        'x-quota-reset': String(Math.floor(new Date(binding.resets_at).getTime() / 1000)),
      },
      extra: { window: binding.window, limit: binding.limit, resets_at: binding.resets_at },
    },
  );
}
