/**
 * `POST /mcp` envelope (Streamable HTTP, MCP spec 2025-06-18 "Transports"): a single JSON-RPC
 * request takes the direct path (mcp/direct.ts), everything else the SDK's web-standard transport.
 * The two must answer alike, and every transport-level fault must still be the SDK's answer.
 */
import { describe, expect, it } from 'vitest';
import { directRequest } from '../../../src/modules/mcp/direct.js';
import { createUser, setupApp } from '../../helpers/app.js';
import { listen } from '../../helpers/exec.js';

const { app, ctx } = await setupApp();
const base = await listen(app);
const user = await createUser(app);
const VERSION = '2025-06-18';
const ACCEPT = 'application/json, text/event-stream';

async function post(
  headers: Record<string, string>,
  body: unknown,
): Promise<{ status: number; type: string | null; json: any }> {
  const res = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { ...user.headers, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, type: res.headers.get('content-type'), json: text ? JSON.parse(text) : undefined };
}

const initRes = await fetch(`${base}/mcp`, {
  method: 'POST',
  headers: { ...user.headers, 'content-type': 'application/json', accept: ACCEPT },
  body: JSON.stringify({
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'envelope-test', version: '1' } },
  }),
});
await initRes.text();
const session = {
  'content-type': 'application/json',
  accept: ACCEPT,
  'mcp-protocol-version': VERSION,
  'mcp-session-id': initRes.headers.get('mcp-session-id') ?? '',
};
const list = { jsonrpc: '2.0', id: 7, method: 'tools/list' };

describe(`MCP POST envelope (${ctx.database.engine})`, () => {
  it('picks only single, non-initialize requests with the required headers for the direct path', () => {
    const h = { accept: ACCEPT, 'content-type': 'application/json; charset=utf-8', 'mcp-protocol-version': VERSION };
    expect(directRequest(h, list)).toEqual(list);
    expect(directRequest({ ...h, 'mcp-protocol-version': undefined }, list)).toEqual(list);
    expect(directRequest({ ...h, accept: 'application/json' }, list)).toBeUndefined();
    expect(directRequest({ ...h, accept: undefined }, list)).toBeUndefined();
    expect(directRequest({ ...h, 'content-type': 'text/plain' }, list)).toBeUndefined();
    expect(directRequest({ ...h, 'mcp-protocol-version': '1999-01-01' }, list)).toBeUndefined();
    expect(directRequest(h, { ...list, method: 'initialize' })).toBeUndefined();
    expect(directRequest(h, { jsonrpc: '2.0', method: 'notifications/initialized' })).toBeUndefined();
    expect(directRequest(h, [list])).toBeUndefined();
    expect(directRequest(h, { ...list, jsonrpc: '1.0' })).toBeUndefined();
    expect(directRequest(h, { ...list, extra: true })).toBeUndefined();
    expect(directRequest(h, null)).toBeUndefined();
  });

  it('answers a direct request exactly as the SDK transport answers the same request', async () => {
    expect(initRes.status).toBe(200);
    const direct = await post(session, list);
    expect(direct.status).toBe(200);
    expect(direct.type).toBe('application/json');
    expect(direct.json.id).toBe(7);
    expect(direct.json.result.tools.map((t: { name: string }) => t.name)).toContain('execute_tool');
    // A batch of one goes through the SDK transport, which answers it with the single response.
    const viaSdk = await post(session, [list]);
    expect(viaSdk.status).toBe(200);
    expect(viaSdk.type).toBe('application/json');
    expect(viaSdk.json).toEqual(direct.json);
    // Unknown tool: the same JSON-RPC error on both paths.
    const call = { jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'no_such_tool', arguments: {} } };
    const directError = await post(session, call);
    expect(directError.status).toBe(200);
    expect(directError.json.error.code).toBe(-32602);
    expect((await post(session, [call])).json).toEqual(directError.json);
  });

  it('leaves transport faults, notifications and batches to the SDK transport', async () => {
    const notAcceptable = await post({ ...session, accept: 'application/json' }, list);
    expect(notAcceptable.status).toBe(406);
    expect(notAcceptable.json.error.code).toBe(-32000);
    const badVersion = await post({ ...session, 'mcp-protocol-version': '1999-01-01' }, list);
    expect(badVersion.status).toBe(400);
    expect(badVersion.json.error.message).toMatch(/Unsupported protocol version/);
    const invalid = await post(session, { jsonrpc: '2.0', id: 9, method: 'tools/list', bogus: 1 });
    expect(invalid.status).toBe(400);
    expect(invalid.json.error.code).toBe(-32700);
    const notification = await post(session, { jsonrpc: '2.0', method: 'notifications/initialized' });
    expect(notification.status).toBe(202);
    const batch = await post(session, [list, { ...list, id: 10 }]);
    expect(batch.status).toBe(200);
    expect(batch.json.map((m: { id: number }) => m.id).sort()).toEqual([10, 7].sort());
  });
});
