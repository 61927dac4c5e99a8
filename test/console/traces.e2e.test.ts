/**
 * The console's trace waterfall in a real browser (Debian's chromium, playwright-core) against a
 * real server on loopback (`environment.ts`): with tracing off the page says so; with the
 * in-process store on (switched on the running server, as `TRACES_STORE=on` would at start), a
 * deployed agent's run that calls a tool is opened from the agent's runs ("Trace" link), the
 * waterfall shows the `invoke_agent` and `execute_tool` rows nested under the request, and a
 * row opens its attributes. Every state passes axe-core (no moderate or worse violation) and the
 * browser's console shows no error but those declared. Shots: test-results/console-traces-*.png.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setServiceStatus } from '../../src/modules/registry/service.js';
import { configureTelemetry } from '../../src/telemetry/sdk.js';
import { call } from '../helpers/app.js';
import { deployedToolAgent } from '../modules/deployments/fixtures.js';
import { checkConsoleAfterEach, startConsoleEnvironment, type ConsoleEnvironment } from './environment.js';
import { consoleUi, haveBrowser } from './ui.js';

/** The agent's code: one tool call through the platform, then its answer. */
const HANDLER = `export default async function (input, context) {
  console.log('asking for the weather in ' + input.city);
  const r = await context.tools.execute(input.service, 'get_weather', { city: input.city });
  return { status: r.status };
}
`;

describe.skipIf(!haveBrowser)('web console in chromium: trace waterfall', () => {
  let env: ConsoleEnvironment | undefined;
  let page: Page;
  let base: string;
  let built: ConsoleEnvironment['built'];
  const creds = {
    email: `console-traces-${Date.now().toString(36)}@example.test`,
    password: 'correct horse battery staple',
  };
  const s = { headers: {} as Record<string, string>, service: '' };
  const { check, nav, tenantSignIn, tab, text, choose } = consoleUi(() => page, creds);
  const tracing = (on: boolean) =>
    configureTelemetry({ ...built.ctx.config.telemetry, store: on }, Boolean(built.ctx.config.databaseUrl));

  beforeAll(async () => {
    env = await startConsoleEnvironment(creds);
    ({ page, base, built } = env);
    const { body: tokens } = await call(built.app, { method: 'POST', url: '/auth/login', payload: creds }, 200);
    s.headers = { authorization: `Bearer ${tokens.access_token}` };
    s.service = `weather-traces-${Date.now().toString(36)}`;
    const { body: service } = await call(
      built.app,
      {
        method: 'POST',
        url: '/owner/services',
        headers: s.headers,
        payload: {
          name: s.service,
          description: 'Current weather by city',
          base_url: env.upstream.url,
          tools: [
            {
              name: 'get_weather',
              description: 'Current weather for a city',
              method: 'GET',
              path: '/weather',
              input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
            },
          ],
        },
      },
      201,
    );
    await setServiceStatus(built.ctx, service.id, 'published');
  }, 180_000);
  afterAll(async () => {
    // The telemetry switch is the process's: leave it as the app's configuration had it.
    if (built) await configureTelemetry(built.ctx.config.telemetry, Boolean(built.ctx.config.databaseUrl));
    await env?.close();
  });

  checkConsoleAfterEach(() => env);

  it('says that tracing is off when the server keeps no traces', async () => {
    await tracing(false);
    env!.expectConsoleErrors(/ 404 \(Not Found\) @ \S+\/v1\/traces\/[0-9a-f]{32}$/);
    await page.goto(`${base}/console/traces/${'ab'.repeat(16)}`);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await tenantSignIn();
    await page.getByTestId('tracing-off').waitFor();
    expect(await text('tracing-off')).toContain('TRACES_STORE=on');
    await check('traces-off');
  }, 60_000);

  it('opens a deployed agent’s run from its runs and shows the execute_tool span in the waterfall', async () => {
    await tracing(true);
    const user = { headers: s.headers } as Parameters<typeof deployedToolAgent>[1];
    const agent = await deployedToolAgent(built.app, user, s.service, HANDLER);
    const { body: inv } = await call(
      built.app,
      {
        method: 'POST',
        url: `/v2/agents/${agent.id}/invoke`,
        headers: s.headers,
        payload: { input: { service: s.service, city: 'Oslo' } },
      },
      200,
    );
    expect(inv.output).toEqual({ status: 'succeeded' });

    await nav('Agents');
    await choose('Agent', /^agent-/);
    await tab('Invoke and runs');
    await page.getByRole('link', { name: `Trace of run ${inv.id}` }).click();
    await page.waitForURL(/\/console\/traces\/[0-9a-f]{32}$/);
    const rows = page.getByTestId('waterfall').getByTestId('span-row');
    await rows.filter({ hasText: 'execute_tool get_weather' }).waitFor();
    const names = await rows.getByRole('button').allTextContents();
    expect(names[0]).toBe('POST /v2/agents/:id/invoke');
    expect(names).toEqual(
      expect.arrayContaining([`invoke_agent ${agent.id}`, 'context.tools.execute', 'execute_tool get_weather', 'GET']),
    );
    // Nested: execute_tool sits deeper than invoke_agent, which sits under the request.
    const indent = async (name: string) =>
      rows
        .filter({ hasText: name })
        .first()
        .getByRole('cell')
        .first()
        .evaluate((td) => Number.parseFloat(getComputedStyle(td).paddingLeft));
    expect(await indent('execute_tool get_weather')).toBeGreaterThan(await indent(`invoke_agent ${agent.id}`));
    expect(await indent(`invoke_agent ${agent.id}`)).toBeGreaterThan(await indent('POST /v2/agents/:id/invoke'));

    await rows.filter({ hasText: 'execute_tool get_weather' }).getByRole('button').click();
    const detail = page.getByTestId('span-detail');
    await detail.waitFor();
    expect(await text('span-attributes')).toContain('gen_ai.tool.name');
    expect(await text('span-attributes')).toContain('platform.execution_id');
    await check('traces-waterfall');
    // The invoke_agent row holds the handler's console line as an event.
    await rows
      .filter({ hasText: `invoke_agent ${agent.id}` })
      .getByRole('button')
      .click();
    await expect.poll(() => text('span-events')).toContain('asking for the weather in Oslo');
  }, 120_000);
});
