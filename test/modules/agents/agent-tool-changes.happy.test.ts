/**
 * `GET /v2/agents/:id/tools/changes` (issue #40, docs/governance.md "Pinned tool definitions"): the
 * owner reads an agent's pending tool-definition changes in the shape `GET /subscriptions/:id`
 * gives an account, the agent reads its own (ADR 0972), `?service=` narrows to one service, and
 * the owner's accept-changes clears them. Runs on PGlite and PostgreSQL.
 */
import { describe, expect, it } from 'vitest';
import { agentToken } from '../../helpers/agents.js';
import { call, setupApp } from '../../helpers/app.js';
import { agentWithChangedTool, POISONED } from './tool-changes-fixture.js';

const { app, ctx } = await setupApp();

describe('agent tool changes — reads', () => {
  it('the owner and the agent itself read the pending change, with the shape of GET /subscriptions/:id', async () => {
    const { owner, agent, agentHeaders, svc, subscriptionId } = await agentWithChangedTool(app, ctx);
    const url = `/v2/agents/${agent.id}/tools/changes`;

    const { body: byOwner } = await call(app, { method: 'GET', url, headers: owner.headers }, 200);
    expect(byOwner).toEqual({
      data: [
        {
          service_id: svc.id,
          service: svc.name,
          subscribed_at: expect.any(String),
          pending_changes: [
            {
              tool_id: expect.any(String),
              tool: 'echo',
              change: 'changed',
              pinned_hash: expect.stringMatching(/^[0-9a-f]{64}$/),
              current_hash: expect.stringMatching(/^[0-9a-f]{64}$/),
              diff: [{ op: 'replace', path: '/description', value: POISONED }],
              pinned_definition: expect.objectContaining({ name: 'echo', description: 'echo' }),
            },
          ],
        },
      ],
      next_cursor: null,
    });
    // The account pinned the same definition: its subscription lists the very same change.
    const { body: sub } = await call(
      app,
      { method: 'GET', url: `/subscriptions/${subscriptionId}`, headers: owner.headers },
      200,
    );
    expect(byOwner.data[0].pending_changes).toEqual(sub.pending_changes);

    // The agent reads its own changes with its own token, with any of its scopes.
    const { body: byAgent } = await call(app, { method: 'GET', url, headers: agentHeaders }, 200);
    expect(byAgent).toEqual(byOwner);
    const narrow = (await agentToken(app, agent, 'memory:read')).headers;
    expect((await call(app, { method: 'GET', url, headers: narrow }, 200)).body).toEqual(byOwner);
  });

  it('?service= reads one service; after the owner accepts, nothing is pending', async () => {
    const { owner, agent, agentHeaders, svc } = await agentWithChangedTool(app, ctx);
    const url = `/v2/agents/${agent.id}/tools/changes`;
    for (const ref of [svc.name, svc.id]) {
      const { body } = await call(app, { method: 'GET', url: `${url}?service=${ref}`, headers: agentHeaders }, 200);
      expect(body.data).toHaveLength(1);
      expect(body.data[0]).toMatchObject({ service_id: svc.id, pending_changes: [{ tool: 'echo' }] });
    }
    const { body: missing } = await call(
      app,
      { method: 'GET', url: `${url}?service=no-such-service`, headers: owner.headers },
      404,
    );
    expect(missing.code).toBe('not_found');

    const { body: accepted } = await call(
      app,
      {
        method: 'POST',
        url: `/v2/agents/${agent.id}/tools/accept-changes`,
        headers: owner.headers,
        payload: { service: svc.name },
      },
      200,
    );
    expect(accepted).toEqual({ pinned: ['echo'], pending_changes: [] });
    const { body: after } = await call(app, { method: 'GET', url, headers: agentHeaders }, 200);
    expect(after.data).toEqual([
      { service_id: svc.id, service: svc.name, subscribed_at: expect.any(String), pending_changes: [] },
    ]);
  });
});
