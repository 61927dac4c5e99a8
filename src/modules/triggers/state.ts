/** Per-app state of the triggers module (a field of `AppContext`; this file must not import `context.ts`). */
import type { RateLimiterAbstract } from 'rate-limiter-flexible';

/** Per-app rate limiters of inbound triggers, one per distinct per-minute limit (`ctx.triggerLimits`). */
export type TriggerLimiters = Map<number, RateLimiterAbstract>;
