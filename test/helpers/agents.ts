/** Test helpers for agents: create an agent through the API and get its access token. */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { call, type TestUser } from './app.js';

export interface TestAgent {
  id: string;
  clientId: string;
  clientSecret: string;
  owner: TestUser;
}

/** Create an agent of `owner` via `POST /v2/agents`. */
export async function createAgent(
  app: FastifyInstance,
  owner: TestUser,
  body: Record<string, unknown> = {},
): Promise<TestAgent> {
  const res = await app.inject({
    method: 'POST',
    url: '/v2/agents',
    headers: owner.headers,
    payload: { name: 'test agent', ...body },
  });
  if (res.statusCode !== 201) throw new Error(`createAgent failed: ${res.statusCode} ${res.body}`);
  const a = res.json();
  return { id: a.id, clientId: a.client_id, clientSecret: a.client_secret, owner };
}

/** `Authorization: Basic` value for client_secret_basic (RFC 6749 §2.3.1: form-urlencode, then base64). */
export function basicAuth(clientId: string, clientSecret: string): string {
  const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${enc(clientId)}:${enc(clientSecret)}`).toString('base64')}`;
}

/** Get an access token for `agent` (client_secret_post, JSON) and return bearer headers. */
export async function agentToken(
  app: FastifyInstance,
  agent: { clientId: string; clientSecret: string },
  scope?: string,
): Promise<{ token: string; headers: { authorization: string } }> {
  const res = await app.inject({
    method: 'POST',
    url: '/auth/agent/token',
    payload: {
      grant_type: 'client_credentials',
      client_id: agent.clientId,
      client_secret: agent.clientSecret,
      ...(scope !== undefined ? { scope } : {}),
    },
  });
  if (res.statusCode !== 200) throw new Error(`agentToken failed: ${res.statusCode} ${res.body}`);
  const token = res.json().access_token as string;
  return { token, headers: { authorization: `Bearer ${token}` } };
}

/** Register a one-tool manifest service of `owner` (status draft). */
export async function registerToolService(
  target: FastifyInstance,
  owner: TestUser,
): Promise<{ id: string; name: string }> {
  const name = `svc-${randomBytes(4).toString('hex')}`;
  const { body } = await call(
    target,
    {
      method: 'POST',
      url: '/owner/services',
      headers: owner.headers,
      payload: {
        name,
        display_name: 'Echo',
        description: 'echo',
        base_url: 'http://127.0.0.1:9',
        tools: [{ name: 'echo', description: 'echo', method: 'POST', path: '/echo', input_schema: { type: 'object' } }],
      },
    },
    201,
  );
  return { id: body.id, name: body.name };
}

/**
 * Subscribe `agentId` to a service (its name or id) as `owner`, via `POST
 * /v2/agents/:id/tools/subscribe`; expects 201 (a new subscription).
 */
export async function subscribeAgentTool(
  target: FastifyInstance,
  owner: Pick<TestUser, 'headers'>,
  agentId: string,
  service: string,
): Promise<void> {
  await call(
    target,
    { method: 'POST', url: `/v2/agents/${agentId}/tools/subscribe`, headers: owner.headers, payload: { service } },
    201,
  );
}
