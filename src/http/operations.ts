/**
 * Route declaration helpers shared by the modules' `routes.ts` files: what every
 * operation of a scope repeats in its OpenAPI description (tags, security) is given once, and the
 * two answers that are not "200 with the service's result" — 201 created, 204 no content — are one
 * call each. A route stays one `r.get(path, op(…), handler)` call, greppable by path and operation id.
 */
import type { FastifyInstance, FastifyReply, FastifySchema } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { requireAuth, type AuthOptions, type AuthRegistry } from './auth.js';

/** An OpenAPI security requirement list (`USER_SECURITY`, `BEARER_SECURITY`, … in `schemas.ts`). */
export type Security = Array<Record<string, string[]>>;

/** The OpenAPI fields of one operation besides its request and response schemas. */
interface OperationDoc {
  tags: string[];
  security: Security;
  operationId: string;
  summary: string;
}

/**
 * The route options maker of one scope: `op(operationId, summary, schema)` answers
 * `{ schema: { tags, security, operationId, summary, ...schema } }`. `schema` holds the request
 * schemas (`params`, `querystring`, `body`), `response` and any other OpenAPI field
 * (`description`, `consumes`); it keeps its literal type, so the TypeBox type provider still types
 * the request and the reply from it.
 */
export function operations(tags: string[], security: Security) {
  return <S extends FastifySchema>(operationId: string, summary: string, schema: S): { schema: OperationDoc & S } => ({
    schema: { tags, security, operationId, summary, ...schema },
  });
}

/**
 * Answer 201 with the awaited `body`. `noStore` (an answer that shows a secret once, or starts a
 * flow that must not be replayed from a cache) adds `Cache-Control: no-store`.
 */
export async function created(
  reply: FastifyReply,
  body: Promise<unknown>,
  opts: { noStore?: boolean } = {},
): Promise<FastifyReply> {
  if (opts.noStore) reply.header('cache-control', 'no-store');
  return reply.code(201).send(await body);
}

/** Answer 204 with no body once `work` is done (deletes and revocations). Its rejection propagates. */
export async function noContent(reply: FastifyReply, work: Promise<unknown>): Promise<FastifyReply> {
  await work;
  return reply.code(204).send(null);
}

/**
 * Open an authenticated route scope in one call: {@link requireAuth} with `auth` options (which
 * principals, roles), the TypeBox type provider, and the {@link operations} maker whose OpenAPI
 * `tags` and `security` describe that same requirement. Use inside `app.register(async (scope) => …)`
 * (or on a plugin's own instance).
 * @returns `r` (the typed instance to declare routes on) and `op`.
 */
export function authScope(
  scope: FastifyInstance,
  registry: AuthRegistry,
  opts: AuthOptions & { tags: string[]; security: Security },
) {
  const { tags, security, ...auth } = opts;
  requireAuth(scope, registry, auth);
  return { r: scope.withTypeProvider<TypeBoxTypeProvider>(), op: operations(tags, security) };
}
