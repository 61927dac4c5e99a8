/**
 * Shared TypeBox schemas: problem+json, list envelopes, pagination query, id params.
 * One schema validates input, serialises output, feeds OpenAPI and types the handler (STYLE.md).
 */
import { Type, type TSchema } from 'typebox';

/** RFC 9457 problem details with the platform's `code` (DESIGN.md §5). */
export const ProblemSchema = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    code: Type.String(),
    instance: Type.String(),
    request_id: Type.Optional(Type.String()),
    errors: Type.Optional(
      Type.Array(Type.Object({ in: Type.Optional(Type.String()), pointer: Type.String(), message: Type.String() })),
    ),
  },
  { $id: 'Problem', additionalProperties: true },
);

/** Reference to {@link ProblemSchema} for route `response` maps. */
export const ProblemRef = Type.Unsafe<Record<string, unknown>>({ $ref: 'Problem#' });

/** `?limit=&cursor=` (DESIGN.md §5: default 20, max 100). */
export const PageQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
});

/** `{ data: [...], next_cursor }` */
export function ListOf<T extends TSchema>(item: T) {
  return Type.Object({ data: Type.Array(item), next_cursor: Type.Union([Type.String(), Type.Null()]) });
}

/** `:id` path parameter. */
export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });

/** ISO 8601 UTC timestamp string. */
export const Timestamp = Type.String({ format: 'date-time' });

/**
 * `T | null`. Null is listed first on purpose: with ajv's type coercion (on for query strings)
 * the first matching branch wins, and `[T, null]` would coerce a JSON `null` into `""` or `0`.
 */
export function Nullable<T extends TSchema>(t: T, options?: { description?: string }) {
  return Type.Union([Type.Null(), t], options);
}

/** OpenAPI security requirement of public routes: an empty list, so the document says "no credentials" explicitly (OpenAPI 3.1 §4.8.10). */
export const PUBLIC_SECURITY: Array<Record<string, string[]>> = [];
/** OpenAPI security requirement of routes that take a user token or API key. */
export const USER_SECURITY: Array<Record<string, string[]>> = [{ bearerAuth: [] }, { apiKey: [] }];
/** OpenAPI security requirement of routes that take a bearer token (user or agent). */
export const BEARER_SECURITY: Array<Record<string, string[]>> = [{ bearerAuth: [] }];

/** Standard error responses to merge into a route's `response` map. */
export function errorResponses(...statuses: number[]): Record<number, typeof ProblemRef> {
  const out: Record<number, typeof ProblemRef> = {};
  for (const s of [400, 401, 429, ...statuses]) out[s] = ProblemRef;
  return out;
}
