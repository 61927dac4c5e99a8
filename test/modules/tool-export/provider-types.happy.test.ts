/**
 * The export through the SDK against a listening server, typed by the providers' own SDKs: the
 * assignments below are what `npm run typecheck` checks (an export the provider's types refuse
 * fails the type check), and each provider's tool-call type, filled as its API would, runs through
 * `tools.call` to the real loopback upstream and back.
 */
import type { AddressInfo } from 'node:net';
import type Anthropic from '@anthropic-ai/sdk';
import type { FunctionCall as GeminiFunctionCall, Part as GeminiPart, Tool as GeminiTool } from '@google/genai';
import type OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { AgentPlatform } from '../../../packages/sdk/src/index.js';
import { setupApp } from '../../helpers/app.js';
import { startJsonApi } from '../../helpers/upstreams.js';
import { subscribedUser } from './fixture.js';

const { app, ctx } = await setupApp();
const api = await startJsonApi();
await app.listen({ port: 0, host: '127.0.0.1' });
const baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

describe('tool export typed by the providers’ SDKs', () => {
  it('is assignable to OpenAI, Anthropic and Gemini tool types, and their tool calls round-trip', async () => {
    const { user, service } = await subscribedUser(app, ctx, api);
    const sdk = new AgentPlatform({ baseUrl, env: {}, accessToken: user.token });

    const chat: OpenAI.Chat.Completions.ChatCompletionTool[] = (await sdk.tools.export('openai')).tools;
    const responses: OpenAI.Responses.FunctionTool[] = (await sdk.tools.export('openai-responses')).tools;
    const claude: Anthropic.Messages.Tool[] = (await sdk.tools.export('anthropic')).tools;
    const gemini: GeminiTool[] = (await sdk.tools.export('gemini')).tools;
    expect(chat).toHaveLength(3);
    expect(responses).toHaveLength(3);
    expect(claude).toHaveLength(3);
    expect(gemini[0].functionDeclarations).toHaveLength(3);

    const name = `${service.name}__get_weather`;
    const openaiCall: OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall = {
      id: 'call_1',
      type: 'function',
      function: { name, arguments: '{"city":"Oslo","units":null}' },
    };
    const responsesCall: OpenAI.Responses.ResponseFunctionToolCall = {
      type: 'function_call',
      call_id: 'call_2',
      name,
      arguments: '{"city":"Rome","units":"c"}',
    };
    const anthropicCall: Anthropic.Messages.ToolUseBlockParam = {
      type: 'tool_use',
      id: 'toolu_3',
      name,
      input: { city: 'Bergen' },
    };
    const geminiCall: GeminiFunctionCall = { name, args: { city: 'Lyon' } };
    const geminiPart: GeminiPart = { functionCall: { id: 'g5', name, args: { city: 'Nice' } } };

    const a1 = await sdk.tools.call(openaiCall);
    const toolMessage: OpenAI.Chat.Completions.ChatCompletionToolMessageParam = {
      role: 'tool',
      tool_call_id: 'call_1',
      content: JSON.stringify({ city: 'Oslo', temp_c: 21 }),
    };
    expect(a1.message).toEqual(toolMessage);
    const a2 = await sdk.tools.call(responsesCall, { sessionId: a1.session_id });
    const output: OpenAI.Responses.ResponseInputItem.FunctionCallOutput = {
      type: 'function_call_output',
      call_id: 'call_2',
      output: JSON.stringify({ city: 'Rome', temp_c: 21 }),
    };
    expect(a2.message).toEqual(output);
    const a3 = await sdk.tools.call(anthropicCall, { sessionId: a1.session_id });
    const result: Anthropic.Messages.ToolResultBlockParam = {
      type: 'tool_result',
      tool_use_id: 'toolu_3',
      content: JSON.stringify({ city: 'Bergen', temp_c: 21 }),
    };
    expect(a3.message).toEqual(result);
    const a4 = await sdk.tools.call(geminiCall, { sessionId: a1.session_id });
    const response: GeminiPart = { functionResponse: { name, response: { output: { city: 'Lyon', temp_c: 21 } } } };
    expect(a4.message).toEqual(response);
    const a5 = await sdk.tools.call(geminiPart, { sessionId: a1.session_id });
    expect(a5.message).toEqual({
      functionResponse: { id: 'g5', name, response: { output: { city: 'Nice', temp_c: 21 } } },
    });
    expect((await sdk.sessions.get(a1.session_id)).execution_count).toBe(5);
  });
});
