import { afterAll, describe, expect, it } from 'vitest';
import { resolveExecutableTool } from '../../../src/modules/registry/executable.js';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { createAgent, agentToken } from '../../helpers/agents.js';
import { startJsonApi } from '../../helpers/upstreams.js';
import { publishService, registerService, weatherManifest } from './helpers.js';

// Published services after publication: reports that degrade a tool, and renames with aliases.
const { app, ctx } = await setupApp();
const api = await startJsonApi();
afterAll(async () => {
  await api.close();
});

describe('publishing — reports', () => {
  it('degrades a tool when REPORT_THRESHOLD distinct users have open reports; the owner sees it', async () => {
    const owner = await createUser(app);
    const svc = await publishService(app, owner, api, weatherManifest(api.url), [
      { tool: 'get_user', arguments: { id: '1' } },
    ]);
    const toolId = svc.tools[0].id;
    const reporters = [await createUser(app), await createUser(app), await createUser(app)];
    const r1 = await call(
      app,
      {
        method: 'POST',
        url: `/v1/services/${svc.id}/report`,
        headers: reporters[0].headers,
        payload: { tool_id: toolId, reason: 'broken', details: 'times out' },
      },
      201,
    );
    expect(r1.body).toMatchObject({
      service_id: svc.id,
      tool_id: toolId,
      reason: 'broken',
      details: 'times out',
      status: 'open',
      tool_status: 'active',
    });
    expect(r1.body.id).toMatch(/^rep_/);
    // One open report per user per tool.
    await call(
      app,
      {
        method: 'POST',
        url: `/v1/services/${svc.id}/report`,
        headers: reporters[0].headers,
        payload: { tool_id: toolId, reason: 'other' },
      },
      409,
    );
    const r2 = await call(
      app,
      {
        method: 'POST',
        url: `/v1/services/${svc.id}/report`,
        headers: reporters[1].headers,
        payload: { tool_id: 'get_weather', reason: 'wrong_output' },
      },
      201,
    );
    expect(r2.body.tool_status).toBe('active');
    const r3 = await call(
      app,
      {
        method: 'POST',
        url: `/v1/services/${svc.id}/report`,
        headers: reporters[2].headers,
        payload: { tool_id: toolId, reason: 'security' },
      },
      201,
    );
    expect(r3.body.tool_status).toBe('degraded');
    // A service-level report does not count toward a tool.
    await call(
      app,
      {
        method: 'POST',
        url: `/v1/services/${svc.id}/report`,
        headers: reporters[0].headers,
        payload: { reason: 'other' },
      },
      201,
    );

    const { body: detail } = await call(
      app,
      { method: 'GET', url: `/owner/services/${svc.id}`, headers: owner.headers },
      200,
    );
    expect(detail.reports).toEqual({ open: 4, degraded_tools: 1 });
    expect(detail.tools[0]).toMatchObject({ id: toolId, status: 'degraded', open_reports: 3 });
    expect(detail.tools[1]).toMatchObject({ status: 'active', open_reports: 0 });
    expect((await resolveExecutableTool(ctx, svc.id, toolId))!.tool.status).toBe('degraded');
    const { body: man } = await call(
      app,
      { method: 'GET', url: `/services/${svc.id}/manifest`, headers: reporters[0].headers },
      200,
    );
    expect(man.tools[0].status).toBe('degraded');

    const { body: reports } = await call(
      app,
      { method: 'GET', url: `/owner/services/${svc.id}/reports?status=open`, headers: owner.headers },
      200,
    );
    expect(reports.data).toHaveLength(4);
    const { body: resolved } = await call(
      app,
      { method: 'POST', url: `/owner/services/${svc.id}/reports/${r1.body.id}/resolve`, headers: owner.headers },
      200,
    );
    expect(resolved).toMatchObject({ status: 'resolved', tool_status: 'active' });
    // The reporter may report again once the earlier report is resolved.
    await call(
      app,
      {
        method: 'POST',
        url: `/v1/services/${svc.id}/report`,
        headers: reporters[0].headers,
        payload: { tool_id: toolId, reason: 'broken' },
      },
      201,
    );
  });

  it('lets agents report for their owner account', async () => {
    const owner = await createUser(app);
    const svc = await publishService(app, owner, api, weatherManifest(api.url), [
      { tool: 'get_user', arguments: { id: '1' } },
    ]);
    const user = await createUser(app);
    const agent = await agentToken(app, await createAgent(app, user));
    await call(
      app,
      {
        method: 'POST',
        url: `/v1/services/${svc.id}/report`,
        headers: agent.headers,
        payload: { tool_id: 'get_user', reason: 'broken' },
      },
      201,
    );
    await call(
      app,
      {
        method: 'POST',
        url: `/v1/services/${svc.id}/report`,
        headers: user.headers,
        payload: { tool_id: 'get_user', reason: 'broken' },
      },
      409,
    );
  });
});

describe('publishing — rename with alias', () => {
  it('renames a tool, keeps the old name as an alias for execution, and refuses clashes', async () => {
    const owner = await createUser(app);
    const svc = await registerService(app, owner, weatherManifest(api.url));
    const weather = svc.tools[0];
    const { body: renamed } = await call(
      app,
      {
        method: 'PATCH',
        url: `/v1/services/${svc.id}/tools/${weather.id}/rename`,
        headers: owner.headers,
        payload: { name: 'weather_now' },
      },
      200,
    );
    expect(renamed).toMatchObject({ id: weather.id, name: 'weather_now', aliases: ['get_weather'] });
    const viaAlias = await resolveExecutableTool(ctx, svc.id, 'get_weather');
    expect(viaAlias!.tool).toMatchObject({ id: weather.id, name: 'weather_now' });
    expect((await resolveExecutableTool(ctx, svc.name, 'weather_now'))!.tool.id).toBe(weather.id);

    const clash = await call(
      app,
      {
        method: 'PATCH',
        url: `/v1/services/${svc.id}/tools/get_user/rename`,
        headers: owner.headers,
        payload: { name: 'weather_now' },
      },
      409,
    );
    expect(clash.body.code).toBe('conflict');
    const aliasClash = await call(
      app,
      {
        method: 'PATCH',
        url: `/v1/services/${svc.id}/tools/get_user/rename`,
        headers: owner.headers,
        payload: { name: 'get_weather' },
      },
      409,
    );
    expect(aliasClash.body.detail).toMatch(/former name/);
    await call(
      app,
      {
        method: 'PATCH',
        url: `/v1/services/${svc.id}/tools/${weather.id}/rename`,
        headers: owner.headers,
        payload: { name: 'bad name' },
      },
      400,
    );

    // Renaming back drops the alias; the intermediate name becomes one.
    const { body: back } = await call(
      app,
      {
        method: 'PATCH',
        url: `/v1/services/${svc.id}/tools/weather_now/rename`,
        headers: owner.headers,
        payload: { name: 'get_weather' },
      },
      200,
    );
    expect(back).toMatchObject({ name: 'get_weather', aliases: ['weather_now'] });
    expect((await resolveExecutableTool(ctx, svc.id, 'weather_now'))!.tool.name).toBe('get_weather');
  });
});
