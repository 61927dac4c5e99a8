/**
 * The fetch every SDK request goes through: credentials from the {@link Authenticator}, one renewal
 * and retry on a 401 `token_expired`, and retries of 429/503 with exponential backoff and full
 * jitter that honour `Retry-After` (spec "Errors": "retry with exponential backoff").
 */
import type { Authenticator } from './credentials.js';
import { AgentPlatformError, parseRetryAfter } from './errors.js';

/** Retry policy of 429 and 503 answers. Delays in ms. */
export interface RetryOptions {
  /** Retries after the first attempt (default 3; 0 turns retries off). */
  maxRetries: number;
  /** First backoff ceiling; doubles per attempt (default 500). */
  baseDelayMs: number;
  /** Longest wait; a `Retry-After` beyond it is not waited for, the error is thrown (default 30 000). */
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryOptions = { maxRetries: 3, baseDelayMs: 500, maxDelayMs: 30_000 };

/**
 * Delay before retry number `attempt` (0-based): `Retry-After` when the server sent one (plus up to
 * 10 % jitter, at most 1 s), else full jitter over `min(maxDelay, base × 2^attempt)` (AWS
 * Architecture Blog, "Exponential Backoff and Jitter"). Undefined when the wait exceeds `maxDelayMs`.
 */
export function retryDelay(
  attempt: number,
  retryAfterSeconds: number | undefined,
  opts: RetryOptions,
  random: () => number = Math.random,
): number | undefined {
  if (retryAfterSeconds !== undefined) {
    const ms = retryAfterSeconds * 1000;
    if (ms > opts.maxDelayMs) return undefined;
    return ms + random() * Math.min(1000, ms * 0.1);
  }
  return random() * Math.min(opts.maxDelayMs, opts.baseDelayMs * 2 ** attempt);
}

/** Options of {@link createTransport}. */
export interface TransportOptions {
  auth: Authenticator;
  fetch: typeof fetch;
  retry: RetryOptions;
  headers: Record<string, string>;
  sleep?: (ms: number) => Promise<void>;
}

/** A `fetch(Request)` with credentials, renewal and retries; network failures become status-0 errors. */
export function createTransport(opts: TransportOptions): (request: Request) => Promise<Response> {
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  return async (request) => {
    let renewed = false;
    for (let attempt = 0; ; attempt++) {
      const req = request.clone();
      for (const [k, v] of Object.entries(opts.headers)) if (!req.headers.has(k)) req.headers.set(k, v);
      await opts.auth.authorize(req.headers);
      let res: Response;
      try {
        res = await opts.fetch(req);
      } catch (err) {
        if ((err as Error).name === 'AbortError') throw err;
        const cause = (err as { cause?: { code?: string; message?: string } }).cause;
        throw new AgentPlatformError({
          status: 0,
          code: 'network_error',
          detail: `Cannot reach ${new URL(request.url).origin} (${cause?.code ?? cause?.message ?? (err as Error).message})`,
          cause: err,
        });
      }
      if (res.status === 401 && !renewed) {
        const code = await errorCode(res);
        if (await opts.auth.recover(code, req.headers.get('authorization'))) {
          renewed = true;
          attempt--;
          continue;
        }
      }
      if ((res.status === 429 || res.status === 503) && attempt < opts.retry.maxRetries) {
        const wait = retryDelay(attempt, parseRetryAfter(res.headers.get('retry-after')), opts.retry);
        if (wait !== undefined) {
          await res.body?.cancel();
          await sleep(wait);
          continue;
        }
      }
      return res;
    }
  };
}

async function errorCode(res: Response): Promise<string> {
  try {
    const body = (await res.clone().json()) as { code?: unknown; error?: unknown };
    return typeof body.code === 'string' ? body.code : typeof body.error === 'string' ? body.error : '';
  } catch {
    return '';
  }
}
