/** Tool export and call: malformed tool calls, unknown names and formats, and closed sessions answer 4xx problems, never a 500. */
import { describe, expect, it } from 'vitest';
import { call, setupApp } from '../../helpers/app.js';
import { startJsonApi } from '../../helpers/upstreams.js';
import { subscribedUser } from './fixture.js';

const { app, ctx } = await setupApp();
const api = await startJsonApi();
const { user, service } = await subscribedUser(app, ctx, api);
const weather = `${service.name}__get_weather`;
const post = (payload: object, status: number, query = '') =>
  call(app, { method: 'POST', url: `/v1/tools/call${query}`, headers: user.headers, payload }, status);

describe('tool export errors', () => {
  it('refuses a missing or unknown format', async () => {
    expect((await call(app, { method: 'GET', url: '/v1/tools/export', headers: user.headers }, 400)).body.code).toBe(
      'validation_failed',
    );
    expect(
      (await call(app, { method: 'GET', url: '/v1/tools/export?format=llama', headers: user.headers }, 400)).body.code,
    ).toBe('validation_failed');
  });

  it('names what is wrong with a body that is not a tool call', async () => {
    const cases: Array<[object, string]> = [
      [{ hello: 'world' }, '/'],
      [{ id: 'c', type: 'function', function: { arguments: '{}' } }, '/function/name'],
      [{ id: 'c', type: 'function', function: { name: weather, arguments: '{"city":' } }, '/function/arguments'],
      [{ id: 'c', type: 'function', function: { name: weather, arguments: '[1,2]' } }, '/function/arguments'],
      [{ type: 'function_call', call_id: 'c', name: '', arguments: '{}' }, '/name'],
      [{ type: 'tool_use', id: 't', name: weather, input: 'Oslo' }, '/input'],
      [{ functionCall: { args: { city: 'Oslo' } } }, '/functionCall/name'],
    ];
    for (const [payload, pointer] of cases) {
      const { body } = await post(payload, 400);
      expect(body.code, JSON.stringify(payload)).toBe('validation_failed');
      expect(body.errors[0]).toMatchObject({ in: 'body', pointer });
    }
    expect(
      (
        await call(
          app,
          {
            method: 'POST',
            url: '/v1/tools/call',
            headers: { ...user.headers, 'content-type': 'application/json' },
            payload: '[]',
          },
          400,
        )
      ).body.code,
    ).toBe('validation_failed');
  });

  it('answers 404 for a name the caller was not given and for an unknown session', async () => {
    const unknown = await post({ type: 'tool_use', id: 't', name: `${service.name}__nope`, input: {} }, 404);
    expect(unknown.body.detail).toMatch(/GET \/v1\/tools\/export/);
    // The MCP spelling with a dot is not an exported name.
    await post({ type: 'tool_use', id: 't', name: `${service.name}.get_weather`, input: { city: 'Oslo' } }, 404);
    expect(
      (
        await post(
          { type: 'tool_use', id: 't', name: weather, input: { city: 'Oslo' } },
          404,
          '?session_id=ses_doesnotexist',
        )
      ).body.code,
    ).toBe('not_found');
  });

  it('refuses arguments that do not match the registered schema, and a closed session', async () => {
    const bad = await post({ type: 'tool_use', id: 't', name: weather, input: { city: 'Oslo', units: 'kelvin' } }, 400);
    expect(bad.body.errors[0].pointer).toBe('/arguments/units');
    // A null for a required property is not "not given": it is refused.
    expect(
      (
        await post(
          { id: 'c', type: 'function', function: { name: weather, arguments: '{"city":null,"units":null}' } },
          400,
        )
      ).body.errors[0].pointer,
    ).toBe('/arguments/city');
    const { body: s } = await call(app, { method: 'POST', url: '/v1/agents', headers: user.headers, payload: {} }, 201);
    await call(app, { method: 'POST', url: `/v1/sessions/${s.id}/close`, headers: user.headers }, 200);
    expect(
      (await post({ type: 'tool_use', id: 't', name: weather, input: { city: 'Oslo' } }, 409, `?session_id=${s.id}`))
        .body.code,
    ).toBe('session_closed');
  });
});
