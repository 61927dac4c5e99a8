/**
 * Tool export and call run as the caller: another account's names, sessions and subscriptions
 * give nothing, an agent sees only its own subscriptions, and a credential without
 * `tools:execute` neither calls nor creates a session (the check is the execute path's own).
 */
import { describe, expect, it } from 'vitest';
import { agentToken, createAgent, subscribeAgentTool } from '../../helpers/agents.js';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { startJsonApi } from '../../helpers/upstreams.js';
import { subscribedUser } from './fixture.js';

const { app, ctx } = await setupApp();
const api = await startJsonApi();

const weatherCalls = () => api.seen.filter((r) => r.url.startsWith('/weather')).length;

describe('tool export security', () => {
  it("does not run another account's subscribed tool, nor record in another account's session", async () => {
    const a = await subscribedUser(app, ctx, api);
    const stranger = await createUser(app);
    const name = `${a.service.name}__get_weather`;
    expect(
      (await call(app, { method: 'GET', url: '/v1/tools/export?format=openai', headers: stranger.headers }, 200)).body
        .tools,
    ).toEqual([]);
    const before = weatherCalls();
    await call(
      app,
      {
        method: 'POST',
        url: '/v1/tools/call',
        headers: stranger.headers,
        payload: { type: 'tool_use', id: 't', name, input: { city: 'Oslo' } },
      },
      404,
    );

    const { body: theirs } = await call(
      app,
      { method: 'POST', url: '/v1/agents', headers: a.user.headers, payload: {} },
      201,
    );
    const other = await subscribedUser(app, ctx, api);
    const otherName = `${other.service.name}__get_weather`;
    const foreign = await call(
      app,
      {
        method: 'POST',
        url: `/v1/tools/call?session_id=${theirs.id}`,
        headers: other.user.headers,
        payload: { type: 'tool_use', id: 't', name: otherName, input: { city: 'Oslo' } },
      },
      404,
    );
    expect(foreign.body.code).toBe('not_found');
    expect(weatherCalls()).toBe(before);
    expect(
      (await call(app, { method: 'GET', url: `/v1/sessions/${theirs.id}`, headers: a.user.headers }, 200)).body
        .execution_count,
    ).toBe(0);
  });

  it('drops a tool from the export and refuses its calls once the subscription is canceled', async () => {
    const { user, service } = await subscribedUser(app, ctx, api);
    const name = `${service.name}__get_weather`;
    const { body: subs } = await call(app, { method: 'GET', url: '/subscriptions', headers: user.headers }, 200);
    await call(app, { method: 'DELETE', url: `/subscriptions/${subs.data[0].id}`, headers: user.headers }, 200);
    expect(
      (await call(app, { method: 'GET', url: '/v1/tools/export?format=anthropic', headers: user.headers }, 200)).body
        .tools,
    ).toEqual([]);
    await call(
      app,
      {
        method: 'POST',
        url: '/v1/tools/call',
        headers: user.headers,
        payload: { type: 'tool_use', id: 't', name, input: { city: 'Oslo' } },
      },
      404,
    );
  });

  it("gives an agent only its own subscriptions, not its owner's", async () => {
    const { user, service } = await subscribedUser(app, ctx, api);
    const agent = await createAgent(app, user);
    const { headers } = await agentToken(app, agent);
    await call(
      app,
      {
        method: 'POST',
        url: '/v1/tools/call',
        headers,
        payload: { type: 'tool_use', id: 't', name: `${service.name}__get_weather`, input: { city: 'Oslo' } },
      },
      404,
    );
    await subscribeAgentTool(app, user, agent.id, service.name);
    const { body } = await call(
      app,
      {
        method: 'POST',
        url: '/v1/tools/call',
        headers,
        payload: { type: 'tool_use', id: 't', name: `${service.name}__get_weather`, input: { city: 'Oslo' } },
      },
      200,
    );
    const { body: session } = await call(app, { method: 'GET', url: `/v1/sessions/${body.session_id}`, headers }, 200);
    expect(session.agent_id).toBe(agent.id);
  });

  it('refuses an API key without tools:execute before creating a session or calling the upstream', async () => {
    const { user, service } = await subscribedUser(app, ctx, api);
    const { body: key } = await call(
      app,
      {
        method: 'POST',
        url: '/api-keys',
        headers: user.headers,
        payload: { name: 'read only', scopes: ['memory:read'] },
      },
      201,
    );
    const headers = { 'x-api-key': key.key };
    // Listing is reading: the key sees the tools it could not run.
    expect(
      (await call(app, { method: 'GET', url: '/v1/tools/export?format=openai', headers }, 200)).body.tools,
    ).toHaveLength(3);
    const before = weatherCalls();
    const { body } = await call(
      app,
      {
        method: 'POST',
        url: '/v1/tools/call',
        headers,
        payload: { type: 'tool_use', id: 't', name: `${service.name}__get_weather`, input: { city: 'Oslo' } },
      },
      403,
    );
    expect(body.code).toBe('insufficient_scope');
    expect(weatherCalls()).toBe(before);
    expect((await call(app, { method: 'GET', url: '/v1/sessions', headers: user.headers }, 200)).body.data).toEqual([]);
  });
});
