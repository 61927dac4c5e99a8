/**
 * One error type and one error handler: every failure becomes `application/problem+json`
 * (RFC 9457) with a stable `code` (DESIGN.md §5). Status codes are fixed per code in {@link CODES}.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** Stable error codes and their HTTP status and title. */
export const CODES = {
  /** The call is held for a person's approval; the problem carries `approval_id`, `approval_url`, `expires_at`. */
  approval_required: [202, 'Approval required'],
  validation_failed: [400, 'Validation failed'],
  bad_request: [400, 'Bad request'],
  upstream_blocked: [400, 'Upstream address not allowed'],
  invalid_artifact: [400, 'Invalid artifact'],
  invalid_login_state: [400, 'Unknown, used or expired login state'],
  invalid_connection_state: [400, 'Unknown, used or expired connection state'],
  redirect_uri_not_allowed: [400, 'Redirect URI not allowed'],
  redirect_uri_mismatch: [400, 'Redirect URI mismatch'],
  invalid_grant: [400, 'Invalid grant'],
  invalid_client: [401, 'Invalid client'],
  token_expired: [401, 'Token expired'],
  invalid_token: [401, 'Invalid token'],
  unauthenticated: [401, 'Authentication required'],
  invalid_credentials: [401, 'Invalid credentials'],
  insufficient_role: [403, 'Insufficient role'],
  forbidden: [403, 'Forbidden'],
  connection_not_bound: [403, 'Authorization not started in this browser'],
  not_subscribed: [403, 'Not subscribed'],
  approval_denied: [403, 'Approval denied'],
  /** A Cedar `forbid` policy matched the tool call; the problem carries `policy_ids`. */
  policy_denied: [403, 'Denied by policy'],
  permission_required: [403, 'Permission required'],
  agent_token_required: [403, 'Agent token required'],
  insufficient_scope: [403, 'Insufficient scope'],
  exceeds_credential: [403, 'Broader than the credential'],
  not_found: [404, 'Not found'],
  method_not_allowed: [405, 'Method not allowed'],
  conflict: [409, 'Conflict'],
  invalid_state: [409, 'Invalid state'],
  session_closed: [409, 'Session closed'],
  /** A pinned tool's definition changed since the caller pinned it; the problem carries the diff. */
  tool_definition_changed: [409, 'Tool definition changed'],
  approval_invalid: [409, 'Approval not usable for this call'],
  connection_required: [409, 'Connection required'],
  limit_reached: [409, 'Limit reached'],
  last_admin: [409, 'Last admin'],
  memory_entry_limit: [409, 'Agent memory entry limit reached'],
  precondition_failed: [412, 'Precondition failed'],
  payload_too_large: [413, 'Payload too large'],
  unsupported_media_type: [415, 'Unsupported media type'],
  rate_limited: [429, 'Too many requests'],
  quota_exceeded: [429, 'Quota exceeded'],
  internal_error: [500, 'Internal server error'],
  upstream_error: [502, 'Upstream error'],
  service_unavailable: [503, 'Service unavailable'],
  upstream_timeout: [504, 'Upstream timeout'],
} as const satisfies Record<string, readonly [number, string]>;

export type ErrorCode = keyof typeof CODES;

/** One failing field: `pointer` is a JSON Pointer (RFC 6901) into the request part named by `in`. */
export interface FieldError {
  in?: 'body' | 'query' | 'params' | 'headers';
  pointer: string;
  message: string;
}

/** The problem+json body (RFC 9457) with the platform's extension members. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  instance: string;
  request_id?: string;
  errors?: FieldError[];
  [extra: string]: unknown;
}

/** A domain error. Services throw it; the error handler renders it. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly errors?: FieldError[];
  readonly headers?: Record<string, string>;
  readonly extra?: Record<string, unknown>;

  constructor(
    code: ErrorCode,
    detail: string,
    opts: { errors?: FieldError[]; headers?: Record<string, string>; extra?: Record<string, unknown> } = {},
  ) {
    super(detail);
    this.code = code;
    this.status = CODES[code][0];
    this.errors = opts.errors;
    this.headers = opts.headers;
    this.extra = opts.extra;
  }
}

/** Shorthand for the very common 404 (also used for other accounts' objects: no existence leaks). */
export function notFound(what: string): AppError {
  return new AppError('not_found', `${what} not found`);
}

const TYPE_BASE = 'https://agent-platform.dev/problems/';

/** Build the problem body for `code`. */
export function problem(code: ErrorCode, detail: string, req: FastifyRequest, extra: Partial<Problem> = {}): Problem {
  const [status, title] = CODES[code];
  return {
    type: `${TYPE_BASE}${code.replaceAll('_', '-')}`,
    title,
    status,
    detail,
    code,
    instance: req.url.split('?')[0],
    request_id: String(req.id),
    ...extra,
  };
}

/** Send a problem response. */
export function sendProblem(reply: FastifyReply, body: Problem, headers?: Record<string, string>): FastifyReply {
  if (headers) reply.headers(headers);
  if (body.status === 401 && !reply.hasHeader('www-authenticate')) {
    // RFC 6750 §3: error="invalid_token" only when a token was presented and rejected.
    const tokenRejected = body.code === 'invalid_token' || body.code === 'token_expired';
    const err = tokenRejected ? ', error="invalid_token"' : '';
    const desc = body.detail.replace(/["\\]/g, "'").replace(/[^\x20-\x7e]/g, ' ');
    reply.header('www-authenticate', `Bearer realm="agent-platform"${err}, error_description="${desc}"`);
  }
  return reply.code(body.status).type('application/problem+json').send(body);
}

interface AjvLikeError {
  instancePath?: string;
  keyword?: string;
  message?: string;
  params?: Record<string, unknown>;
}

/** Translate fastify/ajv validation errors into field errors with JSON pointers. */
function fieldErrors(err: FastifyError): FieldError[] {
  const ctx = (err as { validationContext?: FieldError['in'] }).validationContext;
  const list = (err.validation ?? []) as AjvLikeError[];
  return list.map((v) => {
    let pointer = v.instancePath ?? '';
    if (v.keyword === 'required' && v.params?.missingProperty) pointer += `/${String(v.params.missingProperty)}`;
    if (v.keyword === 'additionalProperties' && v.params?.additionalProperty)
      pointer += `/${String(v.params.additionalProperty)}`;
    return { in: ctx, pointer: pointer || '/', message: v.message ?? 'is invalid' };
  });
}

/** Install the error and not-found handlers on `app`. */
export function registerErrorHandlers(app: FastifyInstance): void {
  app.setNotFoundHandler((req, reply) => {
    sendProblem(reply, problem('not_found', `No route for ${req.method} ${req.url.split('?')[0]}`, req));
  });

  app.setErrorHandler((err: FastifyError & { code?: string }, req, reply) => {
    if (err instanceof AppError) {
      return sendProblem(
        reply,
        problem(err.code, err.message, req, { ...(err.errors ? { errors: err.errors } : {}), ...err.extra }),
        err.headers,
      );
    }
    if (err.validation) {
      const errors = fieldErrors(err);
      const where = errors
        .map((e) => `${e.in ?? 'request'}${e.pointer === '/' ? '' : e.pointer} ${e.message}`)
        .join('; ');
      return sendProblem(reply, problem('validation_failed', `Request is invalid: ${where}`, req, { errors }));
    }
    switch (err.code) {
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return sendProblem(reply, problem('payload_too_large', 'Request body is too large', req));
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        return sendProblem(
          reply,
          problem('unsupported_media_type', `Unsupported Content-Type: ${req.headers['content-type'] ?? 'none'}`, req),
        );
      case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      case 'FST_ERR_CTP_INVALID_JSON_BODY':
        return sendProblem(
          reply,
          problem('validation_failed', 'Request body is not valid JSON', req, {
            errors: [{ in: 'body', pointer: '/', message: 'malformed JSON' }],
          }),
        );
      case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
        return sendProblem(reply, problem('bad_request', 'Content-Length does not match the body', req));
      case '23505': // unique_violation
        return sendProblem(reply, problem('conflict', 'A resource with the same unique value already exists', req));
      case '22P02': // invalid_text_representation
      case '22001': // string too long
      case '22003': // numeric out of range
      case '22007':
      case '22008': // datetime
        return sendProblem(reply, problem('validation_failed', 'A value is out of range or malformed', req));
    }
    if (err instanceof SyntaxError && (err as { statusCode?: number }).statusCode === 400) {
      return sendProblem(
        reply,
        problem('validation_failed', 'Request body is not valid JSON', req, {
          errors: [{ in: 'body', pointer: '/', message: 'malformed JSON' }],
        }),
      );
    }
    const status = err.statusCode ?? 500;
    if (status === 429) return sendProblem(reply, problem('rate_limited', err.message, req));
    if (status === 404) return sendProblem(reply, problem('not_found', err.message, req));
    if (status === 413) return sendProblem(reply, problem('payload_too_large', err.message, req));
    if (status === 415) return sendProblem(reply, problem('unsupported_media_type', err.message, req));
    if (status >= 400 && status < 500) return sendProblem(reply, problem('bad_request', err.message, req));
    req.log.error({ err }, 'unhandled error');
    return sendProblem(
      reply,
      problem('internal_error', 'An unexpected error occurred; the request id identifies it in our logs', req),
    );
  });
}
