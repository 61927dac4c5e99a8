/**
 * User memory needs the `memory:read` / `memory:write` scopes on every face (memory/access.ts):
 * REST (`/memory…`), the MCP `recall` / `remember` tools, the deployed-agent broker
 * (`userMemory.search` / `userMemory.add`) and the unified `/search`. The hole this guards: an agent
 * token or API key holding only `tools:execute` read (and wrote) its owner's user memory on all of
 * them. A user's own access token holds every scope; a key made without `scopes` too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/http/ids.js';
import { brokerFor } from '../../../src/modules/deployments/broker.js';
import { flushMemoryWrites } from '../../../src/modules/memory/runtime.js';
import { agentToken, createAgent, type TestAgent } from '../../helpers/agents.js';
import { call, createUser, setupApp, type TestUser } from '../../helpers/app.js';
import { httpCall, listen } from '../../helpers/exec.js';
import { connectMcp, type McpConnection } from '../../helpers/mcp.js';
import { seedSession } from './helpers.js';

const { app, ctx } = await setupApp();
const SECRET = 'The vault code for the Lisbon office is 4417';

let base: string;
let owner: TestUser;
let agent: TestAgent;
let session: string;
const mcp: McpConnection[] = [];

/** Credential headers: an agent token of `agent` or an API key of `owner` with exactly `scopes`. */
async function credential(kind: 'agent' | 'key', scopes: string[]): Promise<Record<string, string>> {
  if (kind === 'agent') return (await agentToken(app, agent, scopes.join(' '))).headers;
  const { body } = await call(
    app,
    { method: 'POST', url: '/api-keys', headers: owner.headers, payload: { name: scopes.join(' ') || 'none', scopes } },
    201,
  );
  return { 'x-api-key': body.key };
}

beforeAll(async () => {
  base = await listen(app);
  owner = await createUser(app);
  agent = await createAgent(app, owner);
  session = await seedSession(ctx, owner.userId, { agentId: agent.id, name: 'vault' });
  // the agent's own memory (an agent sees only the memories carrying its id), in its session
  await call(
    app,
    {
      method: 'POST',
      url: '/memory',
      headers: owner.headers,
      payload: { content: SECRET, agent_id: agent.id, session_id: session },
    },
    201,
  );
  await flushMemoryWrites(ctx);
}, 60_000);

afterAll(async () => {
  for (const c of mcp) await c.close().catch(() => undefined);
});

/** Every `/memory` operation: method, path, body, and the scope it needs. */
const REST: Array<{ name: string; method: string; url: () => string; body?: unknown; needs: string }> = [
  { name: 'search', method: 'GET', url: () => '/memory/search?q=vault%20code', needs: 'memory:read' },
  { name: 'list', method: 'GET', url: () => '/memory', needs: 'memory:read' },
  { name: 'paginated', method: 'GET', url: () => '/memory/paginated', needs: 'memory:read' },
  { name: 'stats', method: 'GET', url: () => '/memory/stats', needs: 'memory:read' },
  { name: 'agent context', method: 'GET', url: () => '/memory/context/agent?q=vault', needs: 'memory:read' },
  { name: 'timeline', method: 'GET', url: () => `/memory/sessions/${session}/timeline`, needs: 'memory:read' },
  { name: 'summary', method: 'GET', url: () => `/memory/sessions/${session}`, needs: 'memory:read' },
  { name: 'add', method: 'POST', url: () => '/memory', body: { content: 'a note' }, needs: 'memory:write' },
  { name: 'summarize', method: 'POST', url: () => `/memory/sessions/${session}/summarize`, needs: 'memory:write' },
  { name: 'delete', method: 'DELETE', url: () => `/memory?session_id=${newId('ses')}`, needs: 'memory:write' },
];

describe('user memory — scopes on REST', () => {
  for (const kind of ['agent', 'key'] as const) {
    it(`${kind === 'agent' ? 'an agent token' : 'an API key'} with only tools:execute reaches no /memory operation`, async () => {
      const headers = await credential(kind, ['tools:execute']);
      for (const op of REST) {
        const a = await httpCall(base, op.method, op.url(), { headers, body: op.body });
        expect(a.status, `${op.method} ${op.name}`).toBe(403);
        expect(a.body.code).toBe('insufficient_scope');
        expect(a.body.required_scope).toBe(op.needs);
        expect(a.headers.get('www-authenticate')).toContain(`scope="${op.needs}"`);
        expect(JSON.stringify(a.body)).not.toContain('4417');
      }
    });

    it(`${kind === 'agent' ? 'an agent token' : 'an API key'} with memory:read reads but does not write`, async () => {
      const headers = await credential(kind, ['memory:read']);
      const found = await httpCall(base, 'GET', '/memory/search?q=vault%20code', { headers });
      expect(found.status).toBe(200);
      expect(found.body.data.map((m: { content: string }) => m.content)).toContain(SECRET);
      for (const op of REST) {
        const a = await httpCall(base, op.method, op.url(), { headers, body: op.body });
        if (op.needs === 'memory:read') expect(a.status, op.name).not.toBe(403);
        else expect([a.status, a.body.code], op.name).toEqual([403, 'insufficient_scope']);
      }
    });
  }

  it('a memory:write key adds but does not read; the owner’s own token and an unscoped key do everything', async () => {
    const writer = await credential('key', ['memory:write']);
    await call(app, { method: 'POST', url: '/memory', headers: writer, payload: { content: 'written by key' } }, 201);
    await call(app, { method: 'GET', url: '/memory', headers: writer }, 403);
    const { body: unscoped } = await call(
      app,
      { method: 'POST', url: '/api-keys', headers: owner.headers, payload: { name: 'all' } },
      201,
    );
    for (const headers of [owner.headers, { 'x-api-key': unscoped.key }, (await agentToken(app, agent)).headers]) {
      const { body } = await call(app, { method: 'GET', url: '/memory/search?q=vault%20code', headers }, 200);
      expect(body.data[0].content).toBe(SECRET);
      await call(app, { method: 'GET', url: `/memory/sessions/${session}/timeline`, headers }, 200);
    }
  });
});

describe('user memory — scopes on MCP, the broker and /search', () => {
  it('MCP recall / remember need memory:read / memory:write', async () => {
    const outcome = async (scopes: string[]) => {
      const c = await connectMcp(base, await credential('agent', scopes));
      mcp.push(c);
      const recall = await c.call('recall', { query: 'vault code' });
      const remember = await c.call('remember', { content: 'remembered over MCP' });
      expect(JSON.stringify(recall.structuredContent ?? recall.content)).toMatch(
        scopes.includes('memory:read') ? /4417/ : /insufficient_scope/,
      );
      if (!scopes.includes('memory:read')) expect(JSON.stringify(recall)).not.toContain('4417');
      return [
        recall.isError ? recall.structuredContent?.code : 'ok',
        remember.isError ? remember.structuredContent?.code : 'ok',
      ];
    };
    expect(await outcome(['tools:execute'])).toEqual(['insufficient_scope', 'insufficient_scope']);
    expect(await outcome(['memory:read'])).toEqual(['ok', 'insufficient_scope']);
    expect(await outcome(['memory:write'])).toEqual(['insufficient_scope', 'ok']);
    expect(await outcome(['memory:read', 'memory:write'])).toEqual(['ok', 'ok']);
  });

  it('the deployed-agent broker (userMemory.search / .add) runs with the invoker’s scopes', async () => {
    const outcome = async (scopes: string[], op: string, args: Record<string, unknown>) => {
      const principal = await ctx.auth.authenticate((await agentToken(app, agent, scopes.join(' '))).token);
      const inv = { id: newId('inv'), agentId: agent.id, ownerId: owner.userId };
      try {
        const r = await brokerFor(ctx, inv, Date.now() + 60_000, [], principal.roles, principal.scopes)(op, args);
        return JSON.stringify(r).includes('4417') ? 'ok, found' : 'ok';
      } catch (err) {
        return String((err as { code?: string }).code ?? err);
      }
    };
    expect(await outcome(['tools:execute'], 'userMemory.search', { query: 'vault code' })).toBe('insufficient_scope');
    expect(await outcome(['tools:execute'], 'userMemory.add', { content: 'from the broker' })).toBe(
      'insufficient_scope',
    );
    expect(await outcome(['memory:read'], 'userMemory.search', { query: 'vault code' })).toBe('ok, found');
    expect(await outcome(['memory:read'], 'userMemory.add', { content: 'from the broker' })).toBe('insufficient_scope');
    expect(await outcome(['memory:write'], 'userMemory.add', { content: 'from the broker' })).toBe('ok');
  });

  it('/search leaves memories out without memory:read, and refuses type=memory', async () => {
    const headers = await credential('key', ['tools:execute']);
    const all = await httpCall(base, 'GET', '/search?q=vault%20code', { headers });
    expect(all.status).toBe(200);
    expect(all.body.results.memories).toBeUndefined();
    expect(JSON.stringify(all.body)).not.toContain('4417');
    const only = await httpCall(base, 'GET', '/search?q=vault%20code&type=memory', { headers });
    expect([only.status, only.body.code]).toEqual([403, 'insufficient_scope']);
    const reader = await credential('key', ['memory:read']);
    const mine = await httpCall(base, 'GET', '/search?q=vault%20code&type=memory', { headers: reader });
    expect(mine.status).toBe(200);
    expect(JSON.stringify(mine.body)).toContain('4417');
  });
});
