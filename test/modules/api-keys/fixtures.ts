/** Shared by the API key scope tests: creating a key and the scope vocabulary. */
import type { FastifyInstance } from 'fastify';
import { call } from '../../helpers/app.js';

/** The scopes an agent token can hold (docs/identity.md), in vocabulary order. */
export const AGENT = ['memory:read', 'memory:write', 'permissions:manage', 'tools:execute'];

/** A created API key (`POST /api-keys` 201 body) with the headers that present it. */
export interface CreatedKey {
  id: string;
  key: string;
  scopes: string[];
  expires_at: string | null;
  headers: { 'x-api-key': string };
}

/** Create an API key named "k" as `headers` (a user or a key), with `payload` (scopes, expires_at…); expects 201. */
export async function keyOf(
  app: FastifyInstance,
  headers: Record<string, string>,
  payload: Record<string, unknown>,
): Promise<CreatedKey> {
  const { body } = await call(
    app,
    { method: 'POST', url: '/api-keys', headers, payload: { name: 'k', ...payload } },
    201,
  );
  return { ...body, headers: { 'x-api-key': body.key } };
}
