/**
 * Authorization matrix generated from `/openapi.json` (issue #11 §2.1).
 *
 * Who may call a route is declared by the scope it is registered in: `requireAuth(scope, …,
 * { principals, roles })` stamps `x-auth` on every route of the scope (src/http/auth.ts). Routes
 * outside any such scope must be listed in {@link PUBLIC} below with the reason. A route with
 * neither fails this file: adding a route means deciding who may call it.
 *
 * Every declared route is called with: no credentials, malformed/foreign/tampered/unsigned/expired
 * tokens (401), an unknown API key (401), the wrong principal kind (403), each role below the need
 * (403), an allowed principal (not 401/403), and another account's object ids in the path (404, or
 * 403 where {@link GRANT_CHECKED} says agents may be granted access across accounts). No answer
 * may hold another account's marker.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Role } from '../../src/config.js';
import { AUTH_EXTENSION, type AuthDeclaration } from '../../src/http/auth.js';
import { agentToken } from '../helpers/agents.js';
import { setupApp } from '../helpers/app.js';
import {
  ROOT_EMAIL,
  createAccount,
  fillPath,
  forge,
  operations,
  ownedId,
  pathParams,
  publishedService,
  rootAdmin,
  userWithRole,
  type Account,
  type Forged,
  type Operation,
} from './fixtures.js';
import { SchemaArbitraries } from './schema-arbitrary.js';

/**
 * Routes anyone may call (no principal needed), keyed by operationId, with the reason. A route
 * here is still called with every bad credential: it must not answer 5xx nor leak another
 * account's data.
 */
const PUBLIC: Record<string, string> = {
  'auth.config': 'OIDC client configuration for sign-in (spec /v1/auth/config)',
  'auth.info': 'describes how to sign in',
  'auth.startLogin': 'starts the authorization-code flow',
  'auth.callback': 'finishes the authorization-code flow (state + PKCE)',
  'auth.register': 'sign-up',
  'auth.login': 'sign-in with a password',
  'auth.test': 'throwaway test users (only its own accounts)',
  'auth.refresh': 'refresh-token grant: the refresh token is the credential',
  'auth.validate': 'token introspection: the token in the request is the subject, not a credential',
  'agents.token': 'client_credentials grant (RFC 6749 §4.4): client id and secret are the credential',
  'auth.session.create':
    'browser sign-in (step 4): the single-use state and the code are the credential, as for auth.callback',
  'auth.session.refresh': 'the HttpOnly SameSite=Strict refresh cookie is the credential (Origin checked)',
  'auth.session.delete': 'sign-out: revokes the cookie it is sent with, nothing else',
  'connections.callback':
    "the upstream's browser redirect: the single-use state bound to the user who started the connection is the credential",
  'mcp.resourceMetadata':
    'OAuth 2.0 Protected Resource Metadata (RFC 9728) must be public for MCP clients to discover sign-in',
  'mcp.resourceMetadataRoot': 'the same metadata at the root well-known location (RFC 9728 §3)',
  'a2a.card':
    'A2A discovery (agent card at the well-known path): public while the owner has published the agent over A2A, 404 otherwise',
  'triggers.deliver':
    "an inbound trigger's URL: the delivery's signature (or bearer secret) made with the trigger's own secret is the credential",
};

/**
 * Routes where an agent may hold a grant on another account's agent (permissions are agent to
 * agent, DESIGN.md §7): without one, an agent gets 403 `permission_required` (DESIGN.md §5: 403 is
 * for role/grant); users still get 404 for another account's agent.
 */
const GRANT_CHECKED = new Set(['agentMemory.listOf', 'agentMemory.putOf', 'agentMemory.audit']);

const ROLES: Role[] = ['user', 'pro', 'enterprise', 'admin'];

let app: Awaited<ReturnType<typeof setupApp>>['app'];
let ctx: Awaited<ReturnType<typeof setupApp>>['ctx'];
let doc: any;
let ops: Operation[];
let attacker: Account;
let victim: Account;
const byRole = new Map<Role, { headers: { authorization: string }; apiKey?: string }>();
let userForged: Forged;
let agentForged: Forged;
let arbs: SchemaArbitraries;
let calls = 0;

beforeAll(async () => {
  ({ app, ctx } = await setupApp({ ADMIN_EMAILS: ROOT_EMAIL }));
  doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
  ops = operations(doc);
  arbs = new SchemaArbitraries(doc);
  const root = await rootAdmin(app);
  const shared = await publishedService(app, ctx, root);
  attacker = await createAccount(app, shared);
  victim = await createAccount(app, shared);
  for (const role of ROLES) {
    const u = await userWithRole(app, root, role);
    const key = await app.inject({ method: 'POST', url: '/api-keys', headers: u.headers, payload: { name: 'k' } });
    byRole.set(role, { headers: u.headers, apiKey: key.json().key });
  }
  userForged = await forge(ctx, attacker.user.token);
  agentForged = await forge(ctx, attacker.agentHeaders.authorization.slice('Bearer '.length));
}, 300_000);

/**
 * Body fields fixed over the sample where a field value has a role rule of its own (the route is
 * for users, but only admins may choose that value): the matrix checks the route's declaration;
 * the field rule has its own test (`global` policies: test/security/policies.security.test.ts).
 */
const FIELD_RULES: Record<string, Record<string, unknown>> = { 'policies.create': { scope: 'account' } };

/** A schema-valid body for `op` (fixed seed), so the handler — not validation — answers. */
function sampleBody(op: Operation): unknown {
  const schema = op.op.requestBody?.content?.['application/json']?.schema;
  if (!schema) return undefined;
  const body = fc.sample(arbs.valid(schema), { seed: 11, numRuns: 1 })[0];
  return FIELD_RULES[op.key] && body && typeof body === 'object' ? { ...body, ...FIELD_RULES[op.key] } : body;
}

const BOUNDARY = 'matrixboundary';
/** A multipart body with a small (not even gzip) `artifact` file: the handler must refuse another account's id before reading it. */
const MULTIPART = `--${BOUNDARY}\r\ncontent-disposition: form-data; name="artifact"; filename="a.tar.gz"\r\ncontent-type: application/gzip\r\n\r\nnot a tarball\r\n--${BOUNDARY}--\r\n`;

async function send(o: Operation, headers: Record<string, string>, ids: Record<string, string>) {
  calls++;
  const multipart = o.op.requestBody?.content?.['multipart/form-data'] !== undefined;
  const body = multipart ? undefined : sampleBody(o);
  const res = await app.inject({
    method: o.method as 'GET',
    url: fillPath(o.path, ids),
    headers: {
      ...headers,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(multipart ? { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` } : {}),
    },
    ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
    ...(multipart ? { payload: MULTIPART } : {}),
  });
  const label = `${o.key} (${o.method} ${o.path})`;
  expect(res.statusCode, `${label}: ${res.body.slice(0, 300)}`).toBeLessThan(500);
  expect(res.body.includes(victim.marker), `${label} answered another account's data: ${res.body.slice(0, 300)}`).toBe(
    false,
  );
  return { status: res.statusCode, code: safeCode(res.body), label, body: res.body };
}

function safeCode(body: string): string | undefined {
  try {
    return JSON.parse(body).code;
  } catch {
    return undefined;
  }
}

/**
 * Whether an answer is the authorization layer refusing the caller (as opposed to the handler
 * answering, e.g. 403 for an agent writing under another agent's id, or 404 for a fake id).
 */
function authRefusal(r: { status: number; code?: string; body: string }): boolean {
  if (r.status === 401) return true;
  if (r.status !== 403) return false;
  return (
    r.code === 'insufficient_role' || r.code === 'agent_token_required' || r.body.includes('is for users, not agents')
  );
}

function declaration(o: Operation): AuthDeclaration | undefined {
  return o.op[AUTH_EXTENSION] as AuthDeclaration | undefined;
}

/** Fake ids of the right shape, so allowed calls reach the handler without touching fixtures. */
function fakeIds(o: Operation): Record<string, string> {
  return Object.fromEntries(
    pathParams(o.path).map((n) => [n, n === 'key' ? 'no-such-key' : 'zzz_00000000000000000000000000']),
  );
}

describe('authorization matrix', () => {
  it('every route declares who may call it', () => {
    const undeclared = ops.filter((o) => !declaration(o) && !(o.key in PUBLIC));
    const message = undeclared
      .map(
        (o) =>
          `  ${o.key} (${o.method} ${o.path}): register it inside a requireAuth(scope, ctx.auth, { principals, roles }) scope, or add '${o.key}': '<why anyone may call it>' to PUBLIC in test/security/access.test.ts`,
      )
      .join('\n');
    expect(undeclared, `Routes without a declared access rule:\n${message}`).toEqual([]);
    const stale = Object.keys(PUBLIC).filter((k) => !ops.some((o) => o.key === k));
    expect(stale, 'PUBLIC lists operations that no longer exist: remove them').toEqual([]);
    const both = ops.filter((o) => declaration(o) && o.key in PUBLIC).map((o) => o.key);
    expect(both, 'declared by requireAuth and listed in PUBLIC: remove them from PUBLIC').toEqual([]);
  });

  it("an agent reading its own memory never sees another agent's entry under the same key", async () => {
    const res = await app.inject({
      method: 'GET',
      url: `/v2/memory/${victim.memoryKey}`,
      headers: attacker.agentHeaders,
    });
    expect(res.statusCode).toBe(404);
    const { headers } = await agentToken(app, victim.other);
    const own = await app.inject({ method: 'GET', url: `/v2/agents/${victim.agent.id}/memory`, headers });
    // victim.other holds a read grant on victim.agent's keys under the marker prefix: same account, allowed.
    expect(own.statusCode).toBe(200);
  });

  it('OpenAPI security matches the declaration (API keys are user credentials)', () => {
    const wrong: string[] = [];
    for (const o of ops) {
      const d = declaration(o);
      if (!d) continue;
      const schemes = new Set((o.op.security ?? []).flatMap((s: object) => Object.keys(s)));
      if (!schemes.has('bearerAuth')) wrong.push(`${o.key}: security lacks bearerAuth`);
      if (d.principals.includes('user') !== schemes.has('apiKey'))
        wrong.push(
          `${o.key}: security ${d.principals.includes('user') ? 'lacks' : 'lists'} apiKey but the route ${d.principals.includes('user') ? 'admits' : 'refuses'} user principals`,
        );
    }
    expect(wrong).toEqual([]);
  });

  it('bad, forged and expired credentials → 401 on every declared route', { timeout: 180_000 }, async () => {
    for (const o of ops.filter((x) => declaration(x))) {
      const ids = fakeIds(o);
      const cases: Array<[string, Record<string, string>, string?]> = [
        ['none', {}, 'unauthenticated'],
        ['malformed', { authorization: 'Bearer not-a-jwt' }, 'invalid_token'],
        ['basic', { authorization: 'Basic dXNlcjpwYXNz' }, 'invalid_token'],
        ['unknown api key', { 'x-api-key': `apk_${'0'.repeat(40)}` }, 'invalid_token'],
        ['foreign key', { authorization: `Bearer ${userForged.foreignKey}` }, 'invalid_token'],
        ['tampered', { authorization: `Bearer ${userForged.tampered}` }, 'invalid_token'],
        ['alg none', { authorization: `Bearer ${userForged.unsigned}` }, 'invalid_token'],
        ['expired user token', { authorization: `Bearer ${userForged.expired}` }, 'token_expired'],
        ['expired agent token', { authorization: `Bearer ${agentForged.expired}` }, 'token_expired'],
        ['tampered agent token', { authorization: `Bearer ${agentForged.tampered}` }, 'invalid_token'],
      ];
      for (const [name, headers, code] of cases) {
        const r = await send(o, headers, ids);
        expect(r.status, `${r.label} with ${name} credentials: ${r.body.slice(0, 200)}`).toBe(401);
        if (code) expect(r.code, `${r.label} with ${name} credentials`).toBe(code);
      }
    }
  });

  it('public routes survive every credential (no 5xx, no data of another account)', { timeout: 120_000 }, async () => {
    for (const o of ops.filter((x) => !declaration(x) && x.key in PUBLIC)) {
      for (const headers of [
        {},
        { authorization: 'Bearer not-a-jwt' },
        { authorization: `Bearer ${userForged.expired}` },
        { authorization: `Bearer ${userForged.unsigned}` },
        attacker.user.headers,
        attacker.agentHeaders,
      ]) {
        await send(o, headers, fakeIds(o));
      }
    }
  });

  it('wrong principal kind and roles below the need → 403; allowed principals pass', { timeout: 180_000 }, async () => {
    for (const o of ops.filter((x) => declaration(x))) {
      const d = declaration(o)!;
      const ids = fakeIds(o);
      const allowedRoles = d.roles ?? ROLES;
      if (!d.principals.includes('agent')) {
        const r = await send(o, attacker.agentHeaders, ids);
        expect([r.status, r.code], `${r.label} with an agent token`).toEqual([403, 'forbidden']);
      }
      for (const role of ROLES) {
        const cred = byRole.get(role)!;
        for (const [name, headers] of [
          ['token', cred.headers],
          ['API key', { 'x-api-key': cred.apiKey! }],
        ] as const) {
          const r = await send(o, headers, ids);
          const what = `${r.label} with a ${role} ${name}`;
          if (!d.principals.includes('user')) expect([r.status, r.code], what).toEqual([403, 'agent_token_required']);
          else if (!allowedRoles.includes(role)) expect([r.status, r.code], what).toEqual([403, 'insufficient_role']);
          else expect(authRefusal(r), `${what}: ${r.body.slice(0, 200)}`).toBe(false);
        }
      }
      if (d.principals.includes('agent') && !d.roles) {
        const r = await send(o, attacker.agentHeaders, ids);
        expect(authRefusal(r), `${r.label} with an agent token: ${r.body.slice(0, 200)}`).toBe(false);
      }
    }
  });

  it("another account's object ids in the path → 404 (never its data)", { timeout: 120_000 }, async () => {
    const covered: string[] = [];
    for (const o of ops.filter((x) => declaration(x) && pathParams(x.path).length > 0)) {
      const d = declaration(o)!;
      if (d.roles?.includes('admin') && !d.roles.includes('user')) continue; // admins act on any account by design
      if (o.path.startsWith('/v2/memory/')) continue; // keys name entries of the caller's own namespace (see the next test)
      if (o.path.startsWith('/connections/')) continue; // a connection needs a real OAuth upstream: another account's id → 404 is in test/modules/connections/security.test.ts
      const ids: Record<string, string> = {};
      for (const n of pathParams(o.path)) {
        const id = ownedId(victim, o.path, n);
        if (id === null && !['exeId', 'reportId', 'scheduleId', 'triggerId', 'messageId'].includes(n))
          throw new Error(
            `${o.key}: no fixture for path parameter {${n}}: add it to ownedId() in test/security/fixtures.ts`,
          );
        ids[n] = id ?? 'zzz_00000000000000000000000000';
      }
      // Agent-scoped paths name the account's second agent for agent callers (own memory keys are per agent).
      const principals: Array<[string, Record<string, string>]> = [];
      if (d.principals.includes('user'))
        principals.push(['user token', attacker.user.headers], ['API key', { 'x-api-key': attacker.apiKey }]);
      if (d.principals.includes('agent')) principals.push(['agent token', attacker.agentHeaders]);
      for (const [name, headers] of principals) {
        const r = await send(o, headers, ids);
        const allowed = name === 'agent token' && GRANT_CHECKED.has(o.key) ? [403, 404] : [404];
        expect(
          allowed,
          `${r.label} with the attacker's ${name} and the victim's ids: ${r.status} ${r.body.slice(0, 200)}`,
        ).toContain(r.status);
        covered.push(o.key);
      }
    }
    expect(covered.length).toBeGreaterThan(30);
  });

  it('reports its size', () => {
    const declared = ops.filter((o) => declaration(o)).length;
    console.log(
      `authorization matrix: ${ops.length} operations (${declared} declared by scope, ${ops.length - declared} public), ${calls} calls`,
    );
    expect(calls).toBeGreaterThan(ops.length * 5);
  });
});
