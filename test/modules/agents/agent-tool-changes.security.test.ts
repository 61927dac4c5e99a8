/**
 * Who may read and accept an agent's pending tool-definition changes (ADR 0972): the owner with
 * `agents:manage` reads and accepts; the agent reads only its own and never accepts (403, the
 * change stays pending); a sibling agent and another account get 404; a key without
 * `agents:manage` is refused as on accept-changes, which also needs `approvals:decide`. Runs on PGlite and PostgreSQL.
 */
import type { InjectOptions } from 'fastify';
import { describe, expect, it } from 'vitest';
import { agentToken, createAgent } from '../../helpers/agents.js';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { AGENT, keyOf } from '../api-keys/fixtures.js';
import { agentWithChangedTool } from './tool-changes-fixture.js';

const { app, ctx } = await setupApp();

/** `app.inject` expecting a problem with `status` and `code`. */
async function refused(opts: InjectOptions, status: number, code: string): Promise<void> {
  const res = await app.inject(opts);
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.json().code).toBe(code);
}

describe('agent tool changes — access', () => {
  it('another account, its agents and a sibling agent get 404', async () => {
    const { owner, agent } = await agentWithChangedTool(app, ctx);
    const url = `/v2/agents/${agent.id}/tools/changes`;
    const other = await createUser(app);
    await refused({ method: 'GET', url, headers: other.headers }, 404, 'not_found');
    const stranger = await createAgent(app, other);
    await refused({ method: 'GET', url, headers: (await agentToken(app, stranger)).headers }, 404, 'not_found');
    const sibling = await createAgent(app, owner);
    await refused({ method: 'GET', url, headers: (await agentToken(app, sibling)).headers }, 404, 'not_found');
    // The sibling reads its own (nothing subscribed, nothing pending).
    const { body } = await call(
      app,
      {
        method: 'GET',
        url: `/v2/agents/${sibling.id}/tools/changes`,
        headers: (await agentToken(app, sibling)).headers,
      },
      200,
    );
    expect(body).toEqual({ data: [], next_cursor: null });
  });

  it('an agent never accepts its own changes: 403, and the change stays pending', async () => {
    const { agent, agentHeaders, svc } = await agentWithChangedTool(app, ctx);
    await refused(
      {
        method: 'POST',
        url: `/v2/agents/${agent.id}/tools/accept-changes`,
        headers: agentHeaders,
        payload: { service: svc.name },
      },
      403,
      'forbidden',
    );
    const { body } = await call(
      app,
      { method: 'GET', url: `/v2/agents/${agent.id}/tools/changes`, headers: agentHeaders },
      200,
    );
    expect(body.data[0].pending_changes).toMatchObject([{ tool: 'echo', change: 'changed' }]);
  });

  it('a key without agents:manage is refused on the read and on accept-changes; accepting also needs approvals:decide', async () => {
    const { owner, agent, svc } = await agentWithChangedTool(app, ctx);
    const url = `/v2/agents/${agent.id}/tools/changes`;
    const accept = {
      method: 'POST',
      url: `/v2/agents/${agent.id}/tools/accept-changes`,
      payload: { service: svc.name },
    } as const;
    const none = await keyOf(app, owner.headers, { scopes: [...AGENT] });
    await refused({ method: 'GET', url, headers: none.headers }, 403, 'insufficient_scope');
    await refused({ ...accept, headers: none.headers }, 403, 'insufficient_scope');
    const manage = await keyOf(app, owner.headers, { scopes: ['agents:manage'] });
    const { body } = await call(app, { method: 'GET', url, headers: manage.headers }, 200);
    expect(body.data[0].pending_changes).toHaveLength(1);
    // Trusting a changed definition is a person's decision (ADR 0973): a default key lacks it too.
    await refused({ ...accept, headers: manage.headers }, 403, 'insufficient_scope');
    const plain = await keyOf(app, owner.headers, {});
    await refused({ ...accept, headers: plain.headers }, 403, 'insufficient_scope');
    const decider = await keyOf(app, owner.headers, { scopes: ['agents:manage', 'approvals:decide'] });
    await call(app, { ...accept, headers: decider.headers }, 200);
  });
});
