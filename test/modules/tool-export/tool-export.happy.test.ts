/**
 * Tool export: the caller's subscribed tools as OpenAI (Chat Completions and Responses),
 * Anthropic and Gemini function definitions, and each provider's tool-call object run through
 * `POST /v1/tools/call` to a real loopback upstream and back as the provider's result message.
 */
import { describe, expect, it } from 'vitest';
import { agentToken, createAgent, subscribeAgentTool } from '../../helpers/agents.js';
import { call, setupApp } from '../../helpers/app.js';
import { startJsonApi } from '../../helpers/upstreams.js';
import { subscribedUser } from './fixture.js';

const { app, ctx } = await setupApp();
const api = await startJsonApi();

describe('GET /v1/tools/export', () => {
  it('exports OpenAI strict definitions: every property required, optionals nullable, no extra keys', async () => {
    const { user, service } = await subscribedUser(app, ctx, api);
    const { body } = await call(
      app,
      { method: 'GET', url: '/v1/tools/export?format=openai', headers: user.headers },
      200,
    );
    expect(body.format).toBe('openai');
    const byName = Object.fromEntries(body.tools.map((t: any) => [t.function.name, t]));
    const weather = byName[`${service.name}__get_weather`];
    expect(weather).toEqual({
      type: 'function',
      function: {
        name: `${service.name}__get_weather`,
        description: 'Current weather for a city',
        strict: true,
        parameters: {
          type: 'object',
          properties: {
            city: { type: 'string', description: 'city name' },
            units: { type: ['string', 'null'], enum: ['c', 'f', null] },
          },
          required: ['city', 'units'],
          additionalProperties: false,
        },
      },
    });
    // A free-form object has no strict-mode equivalent: exported as registered, strict false.
    expect(byName[`${service.name}__echo`].function).toMatchObject({
      strict: false,
      parameters: { type: 'object', required: ['message'] },
    });
    expect(byName[`${service.name}__ping`].function).toMatchObject({
      strict: true,
      parameters: { type: 'object', properties: {}, required: [], additionalProperties: false },
    });
    expect(body.functions).toContainEqual({ name: `${service.name}__echo`, service: service.name, tool: 'echo' });
    for (const t of body.tools) expect(t.function.name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
  });

  it('exports the Responses API, Anthropic and Gemini shapes', async () => {
    const { user, service } = await subscribedUser(app, ctx, api);
    const get = async (format: string) =>
      (await call(app, { method: 'GET', url: `/v1/tools/export?format=${format}`, headers: user.headers }, 200)).body;
    const responses = await get('openai-responses');
    expect(responses.tools.find((t: any) => t.name === `${service.name}__get_weather`)).toMatchObject({
      type: 'function',
      strict: true,
      parameters: { additionalProperties: false },
    });
    const anthropic = await get('anthropic');
    expect(anthropic.tools.find((t: any) => t.name === `${service.name}__echo`)).toEqual({
      name: `${service.name}__echo`,
      description: 'Echo the body',
      input_schema: {
        type: 'object',
        properties: { message: { type: 'string' }, count: { type: 'integer' }, meta: { type: 'object' } },
        required: ['message'],
      },
    });
    const gemini = await get('gemini');
    expect(gemini.tools).toHaveLength(1);
    const decls = Object.fromEntries(gemini.tools[0].functionDeclarations.map((d: any) => [d.name, d]));
    expect(decls[`${service.name}__get_weather`].parameters).toEqual({
      type: 'OBJECT',
      properties: {
        city: { type: 'STRING', description: 'city name', minLength: 1 },
        units: { type: 'STRING', format: 'enum', enum: ['c', 'f'] },
      },
      required: ['city'],
      propertyOrdering: ['city', 'units'],
    });
    // Gemini refuses an OBJECT without properties: a tool without arguments has no parameters.
    expect(decls[`${service.name}__ping`]).toEqual({ name: `${service.name}__ping`, description: 'Health' });
    expect(decls[`${service.name}__echo`].parameters.properties.meta).toEqual({ type: 'OBJECT' });
  });

  it('lists nothing for a caller without subscriptions, and an agent only its own subscriptions', async () => {
    const { user, service } = await subscribedUser(app, ctx, api);
    const agent = await createAgent(app, user);
    const { headers } = await agentToken(app, agent);
    expect((await call(app, { method: 'GET', url: '/v1/tools/export?format=anthropic', headers }, 200)).body).toEqual({
      format: 'anthropic',
      tools: [],
      functions: [],
    });
    expect(
      (await call(app, { method: 'GET', url: '/v1/tools/export?format=gemini', headers }, 200)).body.tools,
    ).toEqual([]);
    await subscribeAgentTool(app, user, agent.id, service.id);
    const { body } = await call(app, { method: 'GET', url: '/v1/tools/export?format=anthropic', headers }, 200);
    expect(body.tools.map((t: any) => t.name).sort()).toEqual([
      `${service.name}__echo`,
      `${service.name}__get_weather`,
      `${service.name}__ping`,
    ]);
  });
});

describe('POST /v1/tools/call', () => {
  it('runs an OpenAI tool call (JSON string arguments, null for an optional) and answers the tool message', async () => {
    const { user, service } = await subscribedUser(app, ctx, api);
    const toolCall = {
      id: 'call_abc',
      type: 'function',
      function: { name: `${service.name}__get_weather`, arguments: JSON.stringify({ city: 'Oslo', units: null }) },
    };
    const { body, res } = await call(
      app,
      { method: 'POST', url: '/v1/tools/call', headers: user.headers, payload: toolCall },
      200,
    );
    expect(body).toMatchObject({
      format: 'openai',
      service: service.name,
      tool: 'get_weather',
      result: { status: 'succeeded', http_status: 200, output: { city: 'Oslo', temp_c: 21 } },
    });
    expect(body.message).toEqual({
      role: 'tool',
      tool_call_id: 'call_abc',
      content: JSON.stringify({ city: 'Oslo', temp_c: 21 }),
    });
    expect(res.headers['x-quota-limit']).toBeDefined();
    // The call was recorded in the session it created, like any execution.
    const { body: session } = await call(
      app,
      { method: 'GET', url: `/v1/sessions/${body.session_id}`, headers: user.headers },
      200,
    );
    expect(session).toMatchObject({
      name: 'tools.call',
      execution_count: 1,
      metadata: { via: 'tools.call', format: 'openai' },
    });
    expect(session.executions[0]).toMatchObject({
      id: body.result.execution_id,
      tool_name: 'get_weather',
      arguments: { city: 'Oslo' },
    });
  });

  it('runs Responses, Anthropic and Gemini calls in a given session and answers each in its own shape', async () => {
    const { user, service } = await subscribedUser(app, ctx, api);
    const { body: s } = await call(
      app,
      { method: 'POST', url: '/v1/agents', headers: user.headers, payload: { name: 'chat' } },
      201,
    );
    const run = async (payload: object) =>
      (
        await call(
          app,
          { method: 'POST', url: `/v1/tools/call?session_id=${s.id}`, headers: user.headers, payload },
          200,
        )
      ).body;
    const echo = `${service.name}__echo`;

    const responses = await run({
      type: 'function_call',
      id: 'fc_1',
      call_id: 'call_r1',
      name: echo,
      arguments: '{"message":"hi","count":2}',
    });
    expect(responses.message).toEqual({
      type: 'function_call_output',
      call_id: 'call_r1',
      output: JSON.stringify({ message: 'hi', count: 2 }),
    });

    const anthropic = await run({
      type: 'tool_use',
      id: 'toolu_1',
      name: echo,
      input: { message: 'from claude', meta: { a: 1 } },
    });
    expect(anthropic.message).toEqual({
      type: 'tool_result',
      tool_use_id: 'toolu_1',
      content: JSON.stringify({ message: 'from claude', meta: { a: 1 } }),
    });

    const gemini = await run({ functionCall: { name: echo, args: { message: 'from gemini' } } });
    expect(gemini.message).toEqual({
      functionResponse: { name: echo, response: { output: { message: 'from gemini' } } },
    });
    const bare = await run({ name: `${service.name}__ping`, args: {} });
    expect(bare).toMatchObject({ format: 'gemini', tool: 'ping' });

    for (const r of [responses, anthropic, gemini, bare]) expect(r.session_id).toBe(s.id);
    expect(
      (await call(app, { method: 'GET', url: `/v1/sessions/${s.id}`, headers: user.headers }, 200)).body
        .execution_count,
    ).toBe(4);
  });

  it('gives a failed upstream call back to the model as an error result', async () => {
    const owner = await subscribedUser(app, ctx, api);
    const { user, service } = owner;
    const anthropic = await call(
      app,
      {
        method: 'POST',
        url: '/v1/tools/call',
        headers: user.headers,
        payload: { type: 'tool_use', id: 'toolu_x', name: `${service.name}__get_weather`, input: { city: '' } },
      },
      400,
    );
    expect(anthropic.body.code).toBe('validation_failed');
    // GET /weather without a city answers 400 upstream: the execution fails, the model is told.
    const { body } = await call(
      app,
      {
        method: 'POST',
        url: '/v1/tools/call',
        headers: user.headers,
        payload: { type: 'tool_use', id: 'toolu_y', name: `${service.name}__ping`, input: {} },
      },
      200,
    );
    expect(body.result).toMatchObject({ status: 'failed', http_status: 400 });
    expect(body.message).toMatchObject({ type: 'tool_result', tool_use_id: 'toolu_y', is_error: true });
    expect(JSON.parse(body.message.content)).toMatchObject({ http_status: 400, output: { error: 'city is required' } });
  });
});
