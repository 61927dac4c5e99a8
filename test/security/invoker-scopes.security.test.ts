/**
 * Deployed code never holds more than the credential that started it: an invocation started with a
 * `memory:read`-only API key (or agent token) runs with a broker identity narrowed to that scope, both
 * synchronously and when queued (the job reads the scopes stored on the invocation), while the
 * owner's own token keeps every agent scope.
 */
import { describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../helpers/app.js';
import { createAgent, deployReady, tarball, waitFor } from '../modules/deployments/fixtures.js';

const { app } = await setupApp();

const HANDLER = `export default async function (input, context) {
  try { await context.memory.put('k', { n: 1 }); return { wrote: true }; }
  catch (e) { return { wrote: false, code: e.code, status: e.status }; }
}`;

async function invoke(headers: Record<string, string>, agentId: string, asyncRun: boolean): Promise<any> {
  if (!asyncRun)
    return (
      await call(app, { method: 'POST', url: `/v2/agents/${agentId}/invoke`, headers, payload: { input: null } }, 200)
    ).body.output;
  const { body: q } = await call(
    app,
    { method: 'POST', url: `/v2/agents/${agentId}/invoke`, headers, payload: { input: null, async: true } },
    202,
  );
  const done = await waitFor(
    async () => {
      const { body } = await call(
        app,
        { method: 'GET', url: `/v2/agents/${agentId}/executions/${q.id}`, headers },
        200,
      );
      return ['succeeded', 'failed', 'timed_out'].includes(body.status) ? body : null;
    },
    20_000,
    'the queued invocation',
  );
  expect(done.status).toBe('succeeded');
  return done.output;
}

describe('invoker scopes bound deployed code', () => {
  it('a memory:read key invokes code that cannot write memory (sync and queued); the owner token can', async () => {
    const owner = await createUser(app);
    const agent = await createAgent(app, owner);
    await deployReady(app, owner.headers, agent.id, await tarball({ 'index.mjs': HANDLER }));
    const { body: key } = await call(
      app,
      {
        method: 'POST',
        url: '/api-keys',
        headers: owner.headers,
        payload: { name: 'read-only', scopes: ['memory:read'] },
      },
      201,
    );
    const narrow = { 'x-api-key': key.key };

    for (const asyncRun of [false, true]) {
      expect(await invoke(narrow, agent.id, asyncRun)).toMatchObject({
        wrote: false,
        code: 'insufficient_scope',
        status: 403,
      });
      expect(await invoke(owner.headers, agent.id, asyncRun)).toEqual({ wrote: true });
    }
  });

  it('an agent token without memory:write invokes its own code, which cannot write either', async () => {
    const owner = await createUser(app);
    const agent = await createAgent(app, owner);
    await deployReady(app, owner.headers, agent.id, await tarball({ 'index.mjs': HANDLER }));
    const { body: tok } = await call(
      app,
      {
        method: 'POST',
        url: '/auth/agent/token',
        payload: {
          grant_type: 'client_credentials',
          client_id: agent.clientId,
          client_secret: agent.clientSecret,
          scope: 'memory:read',
        },
      },
      200,
    );
    const headers = { authorization: `Bearer ${tok.access_token}` };
    for (const asyncRun of [false, true]) {
      expect(await invoke(headers, agent.id, asyncRun)).toMatchObject({ wrote: false, code: 'insufficient_scope' });
    }
  });
});
