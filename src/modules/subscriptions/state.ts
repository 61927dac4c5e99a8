/**
 * Per-app state of the quota counter: the typed `AppContext.quota` field (decision
 * "house/per-app-fields" — no module-level `WeakMap`), created by `quota.ts` on first use. This file
 * imports nothing that imports `context.ts`, so `context.ts` can name its types without an import loop.
 */
import type { Static } from 'typebox';
import type { QuotasSchema } from './schemas.js';

/** Quota state of one subscription: the quotas answer plus the subscription's id. */
export type QuotaState = Static<typeof QuotasSchema> & { subscription_id: string };

/** A call waiting to be counted. */
export interface QuotaWaiter {
  /** The call's instant (its windows and its `Retry-After`). */
  now: Date;
  resolve: (state: QuotaState) => void;
  reject: (err: unknown) => void;
}

/** Calls of one key (account, service, day window, month window) waiting while a counting statement for them is in flight. */
export interface QuotaQueue {
  waiting: QuotaWaiter[];
  /** True when a call of the queue came while the key was hot: the next statement asks for a lease. */
  hot: boolean;
}

/**
 * Units of one key's quota counted in the database ahead of the calls that use them (decision
 * "subscriptions/quota-lease"): this instance hands them out without a round trip while the lease
 * is young and in use, and returns the unused ones (`units - taken`) when it ends.
 */
export interface QuotaLease {
  key: string;
  userId: string;
  subscriptionId: string;
  /** The effective plan the counting statement saw. */
  plan: string;
  /** The windows' keys (`YYYY-MM-DD`) the units were counted in. */
  day: string;
  month: string;
  /** The day and month counters when the lease was made, before its own units. */
  dayBase: number;
  monthBase: number;
  /** Units counted for the lease, and how many of them were handed out. */
  units: number;
  taken: number;
  /** `performance.now()` ms when it was made and when a unit was last taken. */
  createdAt: number;
  usedAt: number;
  /** Set when it ended: no unit is handed out any more and the unused ones are (being) given back. */
  ended: boolean;
}

/** The quota counter's per-app state. */
export interface QuotaRuntime {
  /** Calls waiting per key while a counting statement of that key is in flight. */
  queues: Map<string, QuotaQueue>;
  /** The open lease per key. */
  leases: Map<string, QuotaLease>;
  /** Ended leases whose unused units are being given back (settles when the return statement has). */
  returning: Map<QuotaLease, Promise<void>>;
  /** `performance.now()` ms of the last call per key, for keys called within the hot interval. */
  lastCall: Map<string, number>;
  /** The sweep that ends idle and old leases; running only while there are leases or hot keys. */
  sweep: NodeJS.Timeout | null;
  /** Bumped whenever leases are dropped: a counting statement that started before opens no lease. */
  epoch: number;
}
