/**
 * Errors of the SDK. Every non-2xx answer becomes an {@link AgentPlatformError}: the platform's
 * problem+json body (RFC 9457) or an OAuth 2.0 error body (RFC 6749 §5.2, from `/auth/agent/token`).
 */
import type { DefinitionChange } from './definitions.js';

/** One failing field of a request: `pointer` is a JSON Pointer (RFC 6901) into the part named by `in`. */
export interface FieldError {
  in?: string;
  pointer: string;
  message: string;
}

/**
 * A failed API call. `status` is the HTTP status (0 when the server could not be reached), `code`
 * the platform's stable error code (`validation_failed`, `token_expired`, `not_found`, …, see the
 * spec "Errors"), `detail` a human-readable explanation, `errors` the failing fields, `requestId`
 * the `X-Request-Id` to quote to an operator, `retryAfterSeconds` the `Retry-After` of 429/503.
 */
export class AgentPlatformError extends Error {
  readonly status: number;
  readonly code: string;
  readonly detail: string;
  readonly errors: FieldError[];
  readonly requestId: string | undefined;
  readonly retryAfterSeconds: number | undefined;
  /** The parsed body as received (problem+json, OAuth error, or text). */
  readonly body: unknown;

  constructor(init: {
    status: number;
    code: string;
    detail: string;
    errors?: FieldError[];
    requestId?: string;
    retryAfterSeconds?: number;
    body?: unknown;
    cause?: unknown;
  }) {
    super(`${init.code}: ${init.detail}`, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'AgentPlatformError';
    this.status = init.status;
    this.code = init.code;
    this.detail = init.detail;
    this.errors = init.errors ?? [];
    this.requestId = init.requestId;
    this.retryAfterSeconds = init.retryAfterSeconds;
    this.body = init.body;
  }

  /**
   * The changed tool of a 409 `tool_definition_changed` (its `service`, `tool`, `change` and the
   * RFC 6902 `diff` from the definition the caller pinned); undefined for any other error.
   */
  get definitionChange(): DefinitionChange | undefined {
    if (this.code !== 'tool_definition_changed' || typeof this.body !== 'object' || this.body === null)
      return undefined;
    const b = this.body as Record<string, unknown>;
    return Array.isArray(b.diff) ? (b as unknown as DefinitionChange) : undefined;
  }

  /** Build the error of a non-2xx `response` whose body was already parsed into `body` (or not). */
  static fromResponse(response: Response, body?: unknown): AgentPlatformError {
    const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
    const text = typeof body === 'string' ? body : undefined;
    const code = str(b.code) ?? str(b.error) ?? `http_${response.status}`;
    const detail =
      str(b.detail) ??
      str(b.error_description) ??
      str(b.title) ??
      (text?.slice(0, 500) || response.statusText || `HTTP ${response.status}`);
    return new AgentPlatformError({
      status: response.status,
      code,
      detail,
      errors: Array.isArray(b.errors) ? (b.errors as FieldError[]) : [],
      requestId: str(b.request_id) ?? response.headers.get('x-request-id') ?? undefined,
      retryAfterSeconds: parseRetryAfter(response.headers.get('retry-after')),
      body,
    });
  }

  /** Read and parse `response`'s body, then build the error. */
  static async fromFetchResponse(response: Response): Promise<AgentPlatformError> {
    const text = await response.text().catch(() => '');
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON: keep the text */
    }
    return AgentPlatformError.fromResponse(response, body);
  }
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/**
 * `Retry-After` (RFC 9110 §10.2.3) in seconds: delay-seconds or an HTTP-date; undefined when
 * absent or unparsable. A date in the past gives 0.
 */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}
