/**
 * Accounts with one of every kind of object, for the authorization matrix and the fuzzer, plus
 * the credentials the matrix forges (expired, re-signed, `alg: none`) and the OpenAPI helpers
 * both read routes with.
 *
 * Every object an account creates carries its `marker` (names, content, values), so "never
 * another account's data in a body" is a substring check on the marker.
 */
import { generateKeyPair, SignJWT, decodeJwt, decodeProtectedHeader } from 'jose';
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../src/context.js';
import type { Role } from '../../src/config.js';
import { loadKeySet } from '../../src/modules/identity/keys.js';
import { setServiceStatus } from '../../src/modules/registry/service.js';
import { agentToken, createAgent, type TestAgent } from '../helpers/agents.js';
import { call, createUser, type TestUser } from '../helpers/app.js';

/** E-mail that gets `admin` at sign-up: pass `ADMIN_EMAILS: ROOT_EMAIL` to setupApp (unique per process: test files share a PostgreSQL database). */
export const ROOT_EMAIL = `root-${randomBytes(6).toString('hex')}@security.test`;
const ROOT_PASSWORD = `pw-${randomBytes(12).toString('hex')}`;

/** The bootstrap admin (needs `ADMIN_EMAILS: ROOT_EMAIL`), signed up and in with a password; it grants the other roles through the admin API. */
export async function rootAdmin(app: FastifyInstance): Promise<TestUser> {
  const password = ROOT_PASSWORD;
  // Test files of one worker share this module (and, on PostgreSQL, one database): the second
  // file finds the admin already registered (409) and signs in with the same password.
  const registered = await app.inject({
    method: 'POST',
    url: '/auth/register',
    payload: { email: ROOT_EMAIL, password },
  });
  if (registered.statusCode !== 201 && registered.statusCode !== 409)
    throw new Error(`POST /auth/register: ${registered.statusCode} ${registered.body}`);
  const { body } = await call(
    app,
    { method: 'POST', url: '/auth/login', payload: { email: ROOT_EMAIL, password } },
    200,
  );
  const headers = { authorization: `Bearer ${body.access_token}` };
  const me = await call(app, { method: 'GET', url: '/v1/auth/me', headers }, 200);
  if (!me.body.roles?.includes('admin'))
    throw new Error(`ADMIN_EMAILS did not make ${ROOT_EMAIL} an admin: ${JSON.stringify(me.body)}`);
  const userId = JSON.parse(Buffer.from(body.access_token.split('.')[1], 'base64url').toString()).sub;
  return {
    userId,
    subject: me.body.user_id,
    email: ROOT_EMAIL,
    token: body.access_token,
    refreshToken: body.refresh_token,
    headers,
  };
}

/** A user of `role`: roles set by `admin` through `PUT /admin/users/:id/roles`, then the token refreshed. */
export async function userWithRole(app: FastifyInstance, admin: TestUser | null, role: Role): Promise<TestUser> {
  const u = await createUser(app);
  if (role === 'user') return u;
  if (!admin) throw new Error('userWithRole: an admin is needed for roles above user');
  await call(
    app,
    { method: 'PUT', url: `/admin/users/${u.userId}/roles`, headers: admin.headers, payload: { roles: [role] } },
    200,
  );
  const { body } = await call(
    app,
    { method: 'POST', url: '/v1/auth/refresh', payload: { refresh_token: u.refreshToken } },
    200,
  );
  return {
    ...u,
    token: body.access_token,
    refreshToken: body.refresh_token,
    headers: { authorization: `Bearer ${body.access_token}` },
  };
}

/** One account with one object of each kind. */
export interface Account {
  marker: string;
  user: TestUser;
  apiKey: string;
  apiKeyId: string;
  /** Holds the account's agent token. */
  agent: TestAgent;
  agentHeaders: { authorization: string };
  /** A second agent: grantee of {@link permissionId}, and the target of agent-scoped paths. */
  other: TestAgent;
  permissionId: string;
  memoryKey: string;
  sessionId: string;
  memoryId: string;
  /** A draft service with a bearer upstream secret. */
  serviceId: string;
  toolId: string;
  subscriptionId: string;
  /** An outbound webhook endpoint (`whk_…`). */
  webhookId: string;
  /** A policy (`pol_…`) holding the account's calls of its own tool for approval. */
  policyId: string;
  /** The pending approval (`apr_…`) of one such call. */
  approvalId: string;
}

/** A one-tool service owned by `owner`, published directly in the store (no verification run). */
export async function publishedService(app: FastifyInstance, ctx: AppContext, owner: TestUser): Promise<string> {
  const { body } = await call(
    app,
    {
      method: 'POST',
      url: '/owner/services',
      headers: owner.headers,
      payload: serviceBody(`pub-${randomBytes(4).toString('hex')}`),
    },
    201,
  );
  await setServiceStatus(ctx, body.id, 'published');
  return body.id;
}

function serviceBody(name: string, marker = name) {
  return {
    name,
    display_name: `${marker} service`,
    description: `${marker} description`,
    base_url: 'http://127.0.0.1:9',
    auth: { type: 'bearer', secret: `${marker}-upstream-secret` },
    tools: [
      { name: 'ping', description: `${marker} tool`, method: 'POST', path: '/ping', input_schema: { type: 'object' } },
    ],
  };
}

/** Create an account of `role` with every kind of object, all marked; `subscribeTo` is a published service id. */
export async function createAccount(
  app: FastifyInstance,
  subscribeTo: string,
  opts: { role?: Role; admin?: TestUser } = {},
): Promise<Account> {
  const marker = `mark${randomBytes(6).toString('hex')}`;
  const user = await userWithRole(app, opts.admin ?? null, opts.role ?? 'user');
  const h = user.headers;
  const key = (
    await call(app, { method: 'POST', url: '/api-keys', headers: h, payload: { name: `${marker} key` } }, 201)
  ).body;
  const agent = await createAgent(app, user, { name: `${marker} agent`, description: marker });
  const other = await createAgent(app, user, { name: `${marker} other`, description: marker });
  const { headers: agentHeaders } = await agentToken(app, agent);
  const memoryKey = `k-${randomBytes(6).toString('hex')}`;
  await call(
    app,
    { method: 'PUT', url: `/v2/memory/${memoryKey}`, headers: agentHeaders, payload: { value: { marker } } },
    201,
  );
  await call(
    app,
    { method: 'PUT', url: `/v2/agents/${other.id}/memory/${memoryKey}`, headers: h, payload: { value: { marker } } },
    201,
  );
  const perm = (
    await call(
      app,
      {
        method: 'POST',
        url: `/v2/agents/${agent.id}/permissions`,
        headers: agentHeaders,
        payload: { grantee_agent_id: other.id, access: 'read', key_prefix: marker },
      },
      201,
    )
  ).body;
  const session = (
    await call(
      app,
      { method: 'POST', url: '/v1/agents', headers: h, payload: { name: `${marker} session`, metadata: { marker } } },
      201,
    )
  ).body;
  const memory = (
    await call(
      app,
      {
        method: 'POST',
        url: '/memory',
        headers: h,
        payload: { content: `${marker} remembers`, session_id: session.id },
      },
      201,
    )
  ).body;
  const svc = (
    await call(
      app,
      { method: 'POST', url: '/owner/services', headers: h, payload: serviceBody(`svc-${marker}`, marker) },
      201,
    )
  ).body;
  const sub = (
    await call(app, { method: 'POST', url: '/subscriptions', headers: h, payload: { service_id: subscribeTo } }, 201)
  ).body;
  const webhook = (
    await call(
      app,
      {
        method: 'POST',
        url: '/v2/webhooks',
        headers: h,
        payload: { url: `https://example.com/${marker}`, events: ['*'], description: marker },
      },
      201,
    )
  ).body;
  const policy = (
    await call(
      app,
      {
        method: 'POST',
        url: '/v1/policies',
        headers: h,
        payload: {
          source: `@approval("required") forbid(principal, action, resource == Platform::Tool::"svc-${marker}/ping");`,
          description: marker,
        },
      },
      201,
    )
  ).body;
  const held = (
    await call(
      app,
      {
        method: 'POST',
        url: `/v1/agents/${session.id}/execute`,
        headers: h,
        payload: { service: svc.id, tool: 'ping', arguments: { marker } },
      },
      202,
    )
  ).body;
  return {
    marker,
    user,
    apiKey: key.key,
    apiKeyId: key.id,
    agent,
    agentHeaders,
    other,
    permissionId: perm.id,
    memoryKey,
    sessionId: session.id,
    memoryId: memory.id,
    serviceId: svc.id,
    toolId: svc.tools?.[0]?.id ?? 'tool_none',
    subscriptionId: sub.id,
    webhookId: webhook.id,
    policyId: policy.id,
    approvalId: held.approval_id,
  };
}

/**
 * The value of path parameter `name` of `path` that names `acct`'s own object, or null when no
 * object of the account fits. A route whose parameter is not here fails the matrix: add it.
 */
export function ownedId(acct: Account, path: string, name: string): string | null {
  switch (name) {
    case 'permId':
      return acct.permissionId;
    case 'key':
      return acct.memoryKey;
    case 'serviceId':
      return acct.serviceId;
    case 'toolId':
      return acct.toolId;
    case 'agent_id':
      return acct.agent.id;
    case 'exeId':
    case 'reportId':
    case 'scheduleId':
    case 'triggerId':
    case 'messageId':
      return null; // no such object in the fixture: the parent id decides
    case 'trace_id':
      return '4bf92f3577b34da6a3ce929d0e0e4736'; // a well-formed id the store never held (it is off here, TRACES_STORE unset); owner-only 404 of a kept trace: test/telemetry/otlp.test.ts
  }
  if (name !== 'id') return null;
  if (path.startsWith('/admin/users/')) return acct.user.userId;
  if (path.startsWith('/api-keys/')) return acct.apiKeyId;
  if (path.startsWith('/v2/agents/')) return acct.agent.id;
  if (path.startsWith('/v2/webhooks/')) return acct.webhookId;
  if (path.startsWith('/v1/policies/')) return acct.policyId;
  if (path.startsWith('/v1/approvals/')) return acct.approvalId;
  if (/^\/(memory\/sessions|v1\/agents|v1\/sessions)\//.test(path)) return acct.sessionId;
  if (path.startsWith('/subscriptions/')) return acct.subscriptionId;
  if (/^\/(owner\/services|services|v1\/services)\//.test(path)) return acct.serviceId;
  return null;
}

/** Credentials the matrix forges from a genuine token. */
export interface Forged {
  /** Same claims, `exp` an hour ago, signed with the platform key: expired, not invalid. */
  expired: string;
  /** Same header and claims, signed with another RSA key under the same `kid`. */
  foreignKey: string;
  /** Last signature characters changed. */
  tampered: string;
  /** `alg: none`, no signature (RFC 7519 §6 unsecured JWT). */
  unsigned: string;
}

/** Forge {@link Forged} variants of `token` (a user or agent access token of this app). */
export async function forge(ctx: AppContext, token: string): Promise<Forged> {
  const claims = decodeJwt(token);
  const header = decodeProtectedHeader(token);
  const now = Math.floor(Date.now() / 1000);
  const keys = await loadKeySet(ctx.db);
  const expired = await new SignJWT({ ...claims, iat: now - 7200, exp: now - 3600 })
    .setProtectedHeader({ ...header, alg: 'RS256' })
    .sign(keys.signingKey);
  const { privateKey } = await generateKeyPair('RS256');
  const foreignKey = await new SignJWT({ ...claims }).setProtectedHeader({ ...header, alg: 'RS256' }).sign(privateKey);
  const [h, p, s] = token.split('.');
  const tampered = `${h}.${p}.${s.slice(0, -6)}${s.slice(-6) === 'AAAAAA' ? 'BBBBBB' : 'AAAAAA'}`;
  const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const unsigned = `${b64({ alg: 'none', typ: header.typ })}.${p}.`;
  return { expired, foreignKey, tampered, unsigned };
}

// ------------------------------------------------------------------ OpenAPI

/** One operation of `/openapi.json`. */
export interface Operation {
  method: string;
  /** OpenAPI path template (`/v2/agents/{id}`). */
  path: string;
  /** `operationId`, or `METHOD path` when the route has none. */
  key: string;
  op: Record<string, any>;
}

/** Every operation of the document, in document order. */
export function operations(doc: { paths: Record<string, Record<string, any>> }): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!['get', 'put', 'post', 'delete', 'patch'].includes(method)) continue;
      out.push({ method: method.toUpperCase(), path, key: op.operationId ?? `${method.toUpperCase()} ${path}`, op });
    }
  }
  return out;
}

/** Names of the path parameters of a template. */
export function pathParams(path: string): string[] {
  return [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
}

/** Fill a path template with URL-encoded values. */
export function fillPath(path: string, values: Record<string, string>): string {
  return path.replace(/\{(\w+)\}/g, (_, n: string) => encodeURIComponent(values[n] ?? 'x'));
}
