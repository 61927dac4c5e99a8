/**
 * What every resource group shares: the typed openapi-fetch client and the transport. Also the
 * helper types that name an operation's query, body and result by its `operationId`.
 */
import type { Client } from 'openapi-fetch';
import { AgentPlatformError } from './errors.js';
import type { operations, paths } from './generated/openapi.js';
import { CursorList, type Page } from './pagination.js';

/** The shared state handed to each resource group. */
export interface Core {
  http: Client<paths>;
  /** The authenticated, retrying fetch (for requests openapi-fetch does not shape, e.g. streams). */
  fetch: (request: Request) => Promise<Response>;
  baseUrl: string;
}

type Op = keyof operations;
/** Query parameters of operation `K`. */
export type Query<K extends Op> = operations[K]['parameters'] extends { query?: infer Q } ? NonNullable<Q> : never;
/** JSON request body of operation `K`. */
export type Body<K extends Op> = operations[K] extends { requestBody?: { content: { 'application/json': infer B } } }
  ? B
  : never;
type Ok<R> = R extends { 200: { content: { 'application/json': infer B } } }
  ? B
  : R extends { 201: { content: { 'application/json': infer B } } }
    ? B
    : R extends { 202: { content: { 'application/json': infer B } } }
      ? B
      : never;
/** The JSON answer of operation `K` on success (its first 2xx with a body). */
export type Result<K extends Op> = Ok<operations[K]['responses']>;
/** The item type of a cursor-list operation `K`. */
export type Item<K extends Op> = Result<K> extends { data: Array<infer T> } ? T : never;

/**
 * The data of an openapi-fetch result, or throw its error as an {@link AgentPlatformError}.
 * 204 answers give `undefined`; a 2xx `application/problem+json` answer (202 `approval_required`)
 * throws too, its problem members in the error's `body` (`approval_id`, `approval_url`, `expires_at`).
 */
export async function unwrap<D>(p: Promise<{ data?: D; error?: unknown; response: Response }>): Promise<D> {
  const { data, error, response } = await p;
  if (!response.ok || error !== undefined) throw AgentPlatformError.fromResponse(response, error);
  // A 2xx problem (202 approval_required: the call is held, nothing ran) is not a result either.
  if (response.headers.get('content-type')?.startsWith('application/problem+json'))
    throw AgentPlatformError.fromResponse(response, data);
  return data as D;
}

/** A {@link CursorList} over a list operation: `call(cursor)` fetches one page. */
export function cursorList<T>(call: (cursor: string | undefined) => Promise<Page<T>>): CursorList<T> {
  return new CursorList<T>(call);
}
