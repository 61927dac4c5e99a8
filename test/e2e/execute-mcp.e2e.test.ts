/** Executing tools of an MCP server (Streamable HTTP) registered through the registry API. */
import { describe, expect, it } from 'vitest';
import { createUser, setupApp } from '../helpers/app.js';
import { execute, expectHttp, listen, newSession, publish, registerService, subscribe } from '../helpers/exec.js';
import { startMcpUpstream, verifyAgentPlatform } from '../helpers/tool-upstream.js';

const { app, ctx } = await setupApp();
const base = await listen(app);

describe('execute — MCP tools', () => {
  it('calls tools/call and returns the structured result; tool errors are failed executions', async () => {
    const mcp = await startMcpUpstream();
    const owner = await createUser(app);
    const user = await createUser(app);
    const svc = await registerService(base, owner, {
      name: `mcp-${Date.now().toString(36)}`,
      description: 'mcp',
      mcp_url: mcp.url,
      auth: { type: 'bearer', secret: 'mcp-token' },
    });
    expect(svc.tools.map((t) => t.name).sort()).toEqual(['add', 'explode']);
    await publish(ctx, svc.id);
    await subscribe(base, user, svc.id);
    const sid = await newSession(base, user.headers);

    const a = await execute(base, user.headers, sid, { service: svc.name, tool: 'add', arguments: { a: 2, b: 40 } });
    expect(a.status).toBe(200);
    expect(a.body).toMatchObject({ status: 'succeeded', output: { sum: 42 } });
    expect(a.body.http_status).toBeUndefined();
    expect(mcp.calls.at(-1)).toEqual({ name: 'add', args: { a: 2, b: 40 } });
    const call = mcp.seen.filter((r) => r.body.toString().includes('"tools/call"')).at(-1)!;
    expect(call.headers.authorization).toBe('Bearer mcp-token');
    expect(call.headers['x-agent-platform-request-id']).toBe(a.body.execution_id);
    expect(call.headers['x-agent-platform-user']).toMatch(/^psu_/);
    // Every request of the call is signed over its own method, path and JSON-RPC body (docs/upstream-signing.md).
    const ofCall = mcp.seen.filter((r) => r.headers['x-agent-platform-request-id'] === a.body.execution_id);
    expect(ofCall.length).toBeGreaterThanOrEqual(2); // initialize, tools/call, …
    for (const r of ofCall)
      expect(verifyAgentPlatform({ method: r.method, url: r.url, headers: r.headers }, r.body, svc.signingSecret)).toBe(
        true,
      );
    expect(
      verifyAgentPlatform({ method: 'POST', url: call.url, headers: call.headers }, call.body, 'whsec_other'),
    ).toBe(false);
    // The body is bound: the same headers do not verify another JSON-RPC body.
    expect(
      verifyAgentPlatform(
        { method: 'POST', url: call.url, headers: call.headers },
        Buffer.from(call.body.toString().replace('"a":2', '"a":3')),
        svc.signingSecret,
      ),
    ).toBe(false);

    const e = await execute(base, user.headers, sid, { service: svc.name, tool: 'explode' });
    expect(e.status).toBe(200);
    expect(e.body).toMatchObject({ status: 'failed', error: { code: 'tool_error', message: 'it exploded' } });

    // Schema-failing arguments never reach the MCP server.
    const before = mcp.seen.length;
    const bad = await execute(base, user.headers, sid, { service: svc.name, tool: 'add', arguments: { a: 'two' } });
    expect(bad.status).toBe(400);
    expect(bad.body.errors.map((x: { pointer: string }) => x.pointer).sort()).toEqual(['/arguments/a', '/arguments/b']);
    expect(mcp.seen.length).toBe(before);

    const { body: s } = await expectHttp(base, 'GET', `/v1/agents/${sid}`, 200, { headers: user.headers });
    expect(s.executions.map((x: { tool_name: string; status: string }) => [x.tool_name, x.status])).toEqual([
      ['explode', 'failed'],
      ['add', 'succeeded'],
    ]);
  });

  it('answers 502 when the MCP server is gone', async () => {
    const mcp = await startMcpUpstream();
    const owner = await createUser(app);
    const svc = await registerService(base, owner, {
      name: `mcp-gone-${Date.now().toString(36)}`,
      description: 'mcp',
      mcp_url: mcp.url,
    });
    await mcp.close();
    const sid = await newSession(base, owner.headers);
    const a = await execute(base, owner.headers, sid, { service: svc.name, tool: 'add', arguments: { a: 1, b: 2 } });
    expect(a.status).toBe(502);
    expect(a.body.code).toBe('upstream_error');
    expect(a.body.execution_id).toMatch(/^exe_/);
  });
});
