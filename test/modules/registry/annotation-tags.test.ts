/**
 * MCP tool annotations become policy tags (issue #40 §1, docs/governance.md "Tool tags", ADR 0976):
 * an MCP server's `destructiveHint: true` tool is denied by a `forbid … resource.tags.contains("destructive")`
 * policy of the subscriber, its read-only and unannotated tools are not; a re-sync that drops the
 * hint changes the pinned definition, so the subscriber gets 409 `tool_definition_changed` instead of
 * a silently allowed call. Runs on PGlite and PostgreSQL (TEST_DATABASE_URL).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { toolPolicyTags } from '../../../src/modules/registry/tool-tags.js';
import { createUser, setupApp } from '../../helpers/app.js';
import { execute, expectHttp, listen, newSession, publish, registerService, subscribe } from '../../helpers/exec.js';
import { type ExtraMcpTool, startMcpUpstream } from '../../helpers/tool-upstream.js';

const { app, ctx } = await setupApp();
const base = await listen(app);
afterAll(async () => {
  await app.close();
});

describe('toolPolicyTags', () => {
  it('maps HTTP methods and MCP annotations (explicit hints only)', () => {
    expect(toolPolicyTags('GET', null)).toEqual(['idempotent', 'read_only']);
    expect(toolPolicyTags('POST', null)).toEqual(['write']);
    expect(toolPolicyTags('PUT', null)).toEqual(['idempotent', 'write']);
    expect(toolPolicyTags('delete', null)).toEqual(['destructive', 'idempotent']);
    expect(toolPolicyTags('MCP', null)).toEqual(['write']);
    expect(toolPolicyTags('MCP', { destructiveHint: true, idempotentHint: true, openWorldHint: true })).toEqual([
      'destructive',
      'idempotent',
      'open_world',
    ]);
    // destructiveHint only means something when the tool is not read-only (MCP spec).
    expect(toolPolicyTags('MCP', { readOnlyHint: true, destructiveHint: true })).toEqual(['idempotent', 'read_only']);
    expect(toolPolicyTags('MCP', { destructiveHint: false, openWorldHint: false })).toEqual(['write']);
    // Only `true` counts: a string is not a hint.
    expect(toolPolicyTags('MCP', { destructiveHint: 'yes' })).toEqual(['write']);
  });
});

describe('MCP annotations → policy tags', () => {
  it('a forbid on "destructive" denies the destructiveHint tool only, and dropping the hint needs acceptance', async () => {
    const extra: ExtraMcpTool[] = [
      { name: 'wipe', description: 'Delete everything', annotations: { destructiveHint: true, readOnlyHint: false } },
      { name: 'peek', description: 'Look', annotations: { readOnlyHint: true } },
      { name: 'plain', description: 'No annotations' },
    ];
    const mcp = await startMcpUpstream(extra);
    const owner = await createUser(app);
    const user = await createUser(app);
    const svc = await registerService(base, owner, {
      name: `mcptags-${Date.now().toString(36)}`,
      description: 'annotated MCP tools',
      mcp_url: mcp.url,
    });
    await publish(ctx, svc.id);
    const sub = await subscribe(base, user, svc.id);
    const { body: policy } = await expectHttp(base, 'POST', '/v1/policies', 201, {
      headers: user.headers,
      body: {
        description: 'no destructive tools',
        source: 'forbid(principal, action, resource) when { resource.tags.contains("destructive") };',
      },
    });
    const sid = await newSession(base, user.headers);
    const run = (tool: string) => execute(base, user.headers, sid, { service: svc.name, tool, arguments: {} });

    const denied = await run('wipe');
    expect(denied.status).toBe(403);
    expect(denied.body).toMatchObject({ code: 'policy_denied', policy_ids: [policy.id] });
    expect(mcp.calls.some((c) => c.name === 'wipe')).toBe(false);
    for (const t of ['peek', 'plain']) {
      const ok = await run(t);
      expect(ok.status).toBe(200);
      expect(ok.body).toMatchObject({ status: 'succeeded', output: { ok: true, tool: t } });
    }

    // The dry run shows the same decision (the tags come from the registry on both paths).
    const { body: dry } = await expectHttp(base, 'POST', '/v1/policies/evaluate', 200, {
      headers: user.headers,
      body: { service: svc.name, tool: 'wipe', arguments: {} },
    });
    expect(dry).toMatchObject({ decision: 'deny', policy_ids: [policy.id] });

    // The server drops the hint and the owner re-syncs: the subscriber does not silently get an
    // allowed call — the definition it pinned (with destructiveHint) changed.
    extra[0]!.annotations = { readOnlyHint: false };
    await expectHttp(base, 'POST', `/owner/services/${svc.id}/sync`, 200, { headers: owner.headers });
    const changed = await run('wipe');
    expect(changed.status).toBe(409);
    expect(changed.body).toMatchObject({
      code: 'tool_definition_changed',
      tool: 'wipe',
      diff: [{ op: 'remove', path: '/annotations/destructiveHint' }],
    });
    await expectHttp(base, 'POST', `/subscriptions/${sub.id}/accept-changes`, 200, {
      headers: user.headers,
      body: { tools: ['wipe'] },
    });
    const accepted = await run('wipe');
    expect(accepted.status).toBe(200);
    expect(accepted.body).toMatchObject({ status: 'succeeded', output: { ok: true, tool: 'wipe' } });
  });
});
