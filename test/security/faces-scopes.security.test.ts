/**
 * One enforcement point for every face: ONE table of operations × principals (with their scopes)
 * drives the four faces of the platform — REST, the MCP meta tools (`execute_tool`, `memory_*`),
 * the MCP exposed tools (`<service>__<tool>` with `expose_tools`), and the deployed-agent runtime's
 * broker (called as the invocation runtime calls it: `brokerFor` with the invoking principal's
 * roles and scopes) — and asserts the same outcome on each, computed by one rule ({@link expected}).
 * A refused execution must not reach the upstream on any face.
 *
 * The bug this guards: an agent token scoped `memory:read` got 403 `insufficient_scope` from REST
 * and `execute_tool`, but the exposed MCP tool ran and reached the upstream (the check lived in
 * the faces, and one face forgot it). The checks now live in `executeTool` and
 * `agent-memory/access.ts`; the last test keeps the faces from growing their own again.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/http/ids.js';
import { brokerFor } from '../../src/modules/deployments/broker.js';
import { putEntry } from '../../src/modules/agent-memory/service.js';
import { agentToken, createAgent, type TestAgent } from '../helpers/agents.js';
import { call, createUser, setupApp, type TestUser } from '../helpers/app.js';
import { httpCall, listen, newSession, publish, registerService, subscribe } from '../helpers/exec.js';
import { connectMcp, type McpConnection } from '../helpers/mcp.js';
import { startToolUpstream, type ToolUpstream } from '../helpers/tool-upstream.js';

const { app, ctx } = await setupApp({ QUOTA_FREE_DAY: '100000', QUOTA_FREE_MONTH: '100000' });

type Op = 'execute' | 'memory.get' | 'memory.list' | 'memory.put' | 'memory.delete';
type Face = 'rest' | 'mcp' | 'exposed' | 'broker';
const OPS: Op[] = ['execute', 'memory.get', 'memory.list', 'memory.put', 'memory.delete'];
const NEEDS: Record<Op, string> = {
  execute: 'tools:execute',
  'memory.get': 'memory:read',
  'memory.list': 'memory:read',
  'memory.put': 'memory:write',
  'memory.delete': 'memory:write',
};
const EVERY = [
  'memory:read',
  'memory:write',
  'permissions:manage',
  'tools:execute',
  'agents:manage',
  'api_keys:manage',
  'approvals:decide',
  'policies:manage',
];

/**
 * Who calls, and how it relates to agent A and user U's session: `owner` (U's own token or keys),
 * `self` (A's tokens), `other-user` (another account's user), `other-agent` (another account's agent).
 */
type Relation = 'owner' | 'self' | 'other-user' | 'other-agent';
interface PrincipalCase {
  name: string;
  relation: Relation;
  scopes: string[];
  /** The credential headers, filled in `beforeAll`. */
  headers?: Record<string, string>;
}

const agentSubsets = [
  ['memory:read'],
  ['memory:write'],
  ['tools:execute'],
  ['memory:read', 'memory:write'],
  ['memory:read', 'tools:execute'],
  ['memory:write', 'tools:execute'],
  ['memory:read', 'memory:write', 'tools:execute'],
  ['permissions:manage'],
];
const PRINCIPALS: PrincipalCase[] = [
  { name: 'user token', relation: 'owner', scopes: EVERY },
  {
    name: 'API key without scopes (every scope but the opt-in ones)',
    relation: 'owner',
    scopes: EVERY.filter((s) => s !== 'approvals:decide' && s !== 'policies:manage'),
  },
  { name: 'API key [tools:execute]', relation: 'owner', scopes: ['tools:execute'] },
  { name: 'API key [memory:read]', relation: 'owner', scopes: ['memory:read'] },
  { name: 'API key [memory:read memory:write]', relation: 'owner', scopes: ['memory:read', 'memory:write'] },
  { name: 'API key []', relation: 'owner', scopes: [] },
  ...agentSubsets.map((s): PrincipalCase => ({ name: `agent token [${s.join(' ')}]`, relation: 'self', scopes: s })),
  { name: "another account's user", relation: 'other-user', scopes: EVERY },
  {
    name: "another account's agent (every scope)",
    relation: 'other-agent',
    scopes: ['memory:read', 'memory:write', 'permissions:manage', 'tools:execute'],
  },
];

/** THE rule: the credential's scope first, then who the caller is to the object. */
function expected(op: Op, p: PrincipalCase): string {
  if (!p.scopes.includes(NEEDS[op])) return 'insufficient_scope';
  if (p.relation === 'other-user') return 'not_found';
  if (p.relation === 'other-agent') return op === 'execute' ? 'not_found' : 'permission_required';
  return 'ok';
}

/** The faces an operation has for a principal (MCP memory tools are for agents; the broker runs as the invoker's own agent). */
function facesOf(op: Op, p: PrincipalCase): Face[] {
  const agent = p.relation === 'self' || p.relation === 'other-agent';
  const invokes =
    p.relation === 'owner' || p.relation === 'self' || (p.relation === 'other-agent' && op === 'memory.get');
  const faces: Face[] = [];
  if (op !== 'memory.get' && op !== 'memory.delete') faces.push('rest');
  else if (p.relation === 'self') faces.push('rest');
  // memory_delete has no agent_id: it only ever deletes the caller's own keys.
  if (op === 'execute' || (agent && (op !== 'memory.delete' || p.relation === 'self'))) faces.push('mcp');
  if (op === 'execute' && (p.relation === 'owner' || p.relation === 'self')) faces.push('exposed');
  if (invokes && !(p.relation === 'other-agent' && op === 'execute')) faces.push('broker');
  return faces;
}

let base: string;
let upstream: ToolUpstream;
let service: { id: string; name: string };
let owner: TestUser;
let stranger: TestUser;
let agentA: TestAgent;
let agentB: TestAgent;
let userSession: string;
let agentSession: string;
const mcp = new Map<string, McpConnection>();

beforeAll(async () => {
  base = await listen(app);
  upstream = await startToolUpstream();
  const publisher = await createUser(app);
  service = await registerService(base, publisher, {
    name: `faces-${Date.now().toString(36)}`,
    description: 'faces',
    base_url: upstream.url,
    tools: [{ name: 'fast', description: 'fast', method: 'GET', path: '/fast', input_schema: { type: 'object' } }],
  });
  await publish(ctx, service.id);
  owner = await createUser(app);
  stranger = await createUser(app);
  await subscribe(base, owner, service.id);
  await subscribe(base, stranger, service.id);
  agentA = await createAgent(app, owner);
  agentB = await createAgent(app, stranger);
  for (const [u, a] of [
    [owner, agentA],
    [stranger, agentB],
  ] as const) {
    await call(
      app,
      {
        method: 'POST',
        url: `/v2/agents/${a.id}/tools/subscribe`,
        headers: u.headers,
        payload: { service: service.name },
      },
      201,
    );
  }
  userSession = await newSession(base, owner.headers);
  agentSession = await newSession(base, (await agentToken(app, agentA)).headers);
  await putEntry(ctx, agentA.id, 'k', { value: 'v' });
  for (const p of PRINCIPALS) {
    if (p.relation === 'owner') {
      if (p.name === 'user token') p.headers = owner.headers;
      else {
        const payload = p.name.includes('without scopes') ? { name: p.name } : { name: p.name, scopes: p.scopes };
        const { body } = await call(app, { method: 'POST', url: '/api-keys', headers: owner.headers, payload }, 201);
        expect(body.scopes).toEqual(EVERY.filter((s) => p.scopes.includes(s)));
        p.headers = { 'x-api-key': body.key };
      }
    } else if (p.relation === 'self') p.headers = (await agentToken(app, agentA, p.scopes.join(' '))).headers;
    else if (p.relation === 'other-user') p.headers = stranger.headers;
    else p.headers = (await agentToken(app, agentB)).headers;
    mcp.set(p.name, await connectMcp(base, p.headers!, { query: '?expose_tools=true' }));
  }
}, 120_000);

afterAll(async () => {
  for (const c of mcp.values()) await c.close().catch(() => undefined);
  await upstream.close();
});

/** A REST answer as an outcome: `ok`, or the problem's code. */
async function rest(method: string, url: string, p: PrincipalCase, body?: unknown): Promise<string> {
  const a = await httpCall(base, method, url, { headers: p.headers, body });
  return a.status < 300 ? 'ok' : String(a.body?.code);
}

/** An MCP tool result as an outcome; a JSON-RPC error (unknown tool) is `unknown_tool`. */
async function tool(p: PrincipalCase, name: string, args: Record<string, unknown>): Promise<string> {
  try {
    const r = await mcp.get(p.name)!.call(name, args);
    return r.isError ? String(r.structuredContent?.code) : 'ok';
  } catch (err) {
    return /Unknown tool/.test(String(err)) ? 'unknown_tool' : `threw ${String(err)}`;
  }
}

/** The broker of an invocation `p` starts (its own agent, or A for A's owner), as invocations.ts builds it. */
async function broker(p: PrincipalCase, op: string, args: Record<string, unknown>): Promise<string> {
  const principal = await ctx.auth.authenticate(
    p.headers!['x-api-key'] ?? p.headers!.authorization.slice('Bearer '.length),
  );
  const agentId = p.relation === 'other-agent' ? agentB.id : agentA.id;
  const inv = { id: newId('inv'), agentId, ownerId: principal.kind === 'agent' ? principal.ownerId : principal.userId };
  try {
    await brokerFor(ctx, inv, Date.now() + 60_000, [], principal.roles, principal.scopes)(op, args);
    return 'ok';
  } catch (err) {
    return String((err as { code?: string }).code ?? err);
  }
}

async function run(face: Face, op: Op, p: PrincipalCase): Promise<string> {
  const session = p.relation === 'self' ? agentSession : userSession;
  const A = agentA.id;
  if (op === 'memory.delete') await putEntry(ctx, A, 'd', { value: 1 });
  switch (`${face} ${op}`) {
    case 'rest execute':
      return rest('POST', `/v1/agents/${session}/execute`, p, { service: service.name, tool: 'fast' });
    case 'mcp execute':
      return tool(p, 'execute_tool', { service: service.name, tool: 'fast', session_id: session });
    case 'exposed execute':
      return tool(p, `${service.name}__fast`, {});
    case 'broker execute':
      return broker(p, 'tools.execute', { service: service.name, tool: 'fast' });
    case 'rest memory.get':
      return rest('GET', '/v2/memory/k', p);
    case 'mcp memory.get':
      return tool(p, 'memory_get', { key: 'k', agent_id: A });
    case 'broker memory.get':
      return p.relation === 'other-agent'
        ? broker(p, 'memory.read', { agentId: A, key: 'k' })
        : broker(p, 'memory.get', { key: 'k' });
    case 'rest memory.list':
      return rest('GET', `/v2/agents/${A}/memory`, p);
    case 'mcp memory.list':
      return tool(p, 'memory_list', { agent_id: A });
    case 'broker memory.list':
      return broker(p, 'memory.list', {});
    case 'rest memory.put':
      return rest('PUT', `/v2/agents/${A}/memory/p`, p, { value: 1 });
    case 'mcp memory.put':
      return tool(p, 'memory_put', { key: 'p', value: 1, agent_id: A });
    case 'broker memory.put':
      return broker(p, 'memory.put', { key: 'p', value: 1 });
    case 'rest memory.delete':
      return rest('DELETE', '/v2/memory/d', p);
    case 'mcp memory.delete':
      return tool(p, 'memory_delete', { key: 'd' });
    case 'broker memory.delete':
      return broker(p, 'memory.delete', { key: 'd' });
  }
  throw new Error(`no ${face} face for ${op}`);
}

describe('every face answers the same (operations × principals × scopes)', () => {
  for (const p of PRINCIPALS) {
    for (const op of OPS) {
      const want = expected(op, p);
      const faces = facesOf(op, p);
      // No face lets another account's user name agent A's single key (get, delete): nothing to call.
      if (faces.length === 0) continue;
      it(`${op} by ${p.name} → ${want} on ${faces.join(', ')}`, async () => {
        const got: Record<string, string> = {};
        for (const face of faces) {
          const before = upstream.seenAt('/fast').length;
          got[face] = await run(face, op, p);
          if (op === 'execute')
            expect(upstream.seenAt('/fast').length - before, `${face}: upstream calls`).toBe(want === 'ok' ? 1 : 0);
        }
        expect(got).toEqual(Object.fromEntries(faces.map((f) => [f, want])));
      });
    }
  }

  it('the reported case: a memory:read agent token is refused by the exposed MCP tool, and nothing reaches the upstream', async () => {
    const p = PRINCIPALS.find((x) => x.name === 'agent token [memory:read]')!;
    const listed = (await mcp.get(p.name)!.client.listTools()).tools.map((t) => t.name);
    expect(listed).toContain(`${service.name}__fast`);
    const before = upstream.seenAt('/fast').length;
    const r = await mcp.get(p.name)!.call(`${service.name}__fast`, {});
    expect(r.isError).toBe(true);
    expect(r.structuredContent).toMatchObject({
      code: 'insufficient_scope',
      status: 403,
      required_scope: 'tools:execute',
    });
    expect(upstream.seenAt('/fast').length).toBe(before);
  });
});

describe('the faces stay adapters', () => {
  const FACES = [
    'src/modules/sessions/routes.ts',
    'src/modules/mcp/server.ts',
    'src/modules/mcp/tools.ts',
    'src/modules/deployments/broker.ts',
    'src/modules/agent-memory/routes.ts',
  ];
  it('no face checks a scope itself or reaches agent memory storage without the principal', () => {
    for (const file of FACES) {
      const src = fs.readFileSync(path.join(process.cwd(), file), 'utf8');
      expect(src, `${file} checks a scope itself: move the check into the service function it calls`).not.toMatch(
        /\b(requireScope|hasScope)\(/,
      );
      expect(src, `${file} calls agent-memory storage directly: call agent-memory/access.ts`).not.toMatch(
        /\b(getEntry|putEntry|deleteEntry|listEntries)\(/,
      );
    }
  });
});
