/**
 * The web console's agent and analytics pages in a real browser (Debian's chromium,
 * playwright-core) against a real server on loopback, one browser and one server for the file
 * (`environment.ts`), pages reached with the keyboard: deploy, watch, invoke, roll back, stop and
 * redeploy an agent, its live logs, tools, grants and KV memory; analytics as pro, as a user
 * refused (403) and as admin. The other pages: `console.e2e.test.ts`. Every page and state passes
 * axe-core with no moderate or worse violation, and a test fails on any error in the browser's
 * console but those it declares (`expectConsoleErrors`). Shots: test-results/console-*.png.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setServiceStatus } from '../../src/modules/registry/service.js';
import { call } from '../helpers/app.js';
import { tarball } from '../modules/deployments/fixtures.js';
import { checkConsoleAfterEach, startConsoleEnvironment, type ConsoleEnvironment } from './environment.js';
import { SHOTS, consoleUi, haveBrowser } from './ui.js';

/** The agent's bundle, written by the deploy test. */
const BUNDLE = path.join(SHOTS, 'agent.tgz');

/** The agent's code: two log lines (stdout, then stderr after a pause), then its answer. */
const HANDLER =
  "export async function handler(input) { console.log('started for ' + input.name); await new Promise((r) => setTimeout(r, 300)); console.error('almost done for ' + input.name); return { hello: input.name }; }\n";

describe.skipIf(!haveBrowser)('web console in chromium: agents and analytics', () => {
  let env: ConsoleEnvironment | undefined;
  let page: Page;
  let base: string;
  let built: ConsoleEnvironment['built'];
  const creds = {
    email: `console-agents-${Date.now().toString(36)}@example.test`,
    password: 'correct horse battery staple',
  };
  /** What the tests hand on to the next ones: the user's API key, the name of its published service. */
  const s = { apiKey: '', service: '', headers: {} as Record<string, string>, session: '' };

  const setRoles = (roles: string[]) => env!.setRoles(roles);
  const { check, nav, tenantSignIn, tab, text, field, choose, closeDrawer } = consoleUi(() => page, creds);

  beforeAll(async () => {
    env = await startConsoleEnvironment(creds);
    ({ page, base, built } = env);
    // What the other file's first tests build through the pages: a pro user with an API key and a
    // published service of its own, whose tool it ran once (analytics list it), signed in to the console.
    await setRoles(['user', 'pro']);
    const { body: tokens } = await call(built.app, { method: 'POST', url: '/auth/login', payload: creds }, 200);
    const headers = { authorization: `Bearer ${tokens.access_token}` };
    s.apiKey = (
      await call(built.app, { method: 'POST', url: '/api-keys', headers, payload: { name: 'agents' } }, 201)
    ).body.key;
    s.service = `weather-${Date.now().toString(36)}`;
    const tool = {
      name: 'get_weather',
      description: 'Current weather for a city',
      method: 'GET',
      path: '/weather',
      input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    };
    const payload = {
      name: s.service,
      description: 'Current weather by city',
      base_url: env.upstream.url,
      category: 'weather',
      tools: [tool],
    };
    const { body: service } = await call(built.app, { method: 'POST', url: '/owner/services', headers, payload }, 201);
    await setServiceStatus(built.ctx, service.id, 'published');
    const { body: session } = await call(
      built.app,
      { method: 'POST', url: '/v1/agents', headers, payload: { name: 'console' } },
      201,
    );
    [s.headers, s.session] = [headers, session.id];
    await call(
      built.app,
      {
        method: 'POST',
        url: `/v1/agents/${session.id}/execute`,
        headers,
        payload: { service: s.service, tool: 'get_weather', arguments: { city: 'Oslo' } },
      },
      200,
    );
    await page.goto(`${base}/console/agents`);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await tenantSignIn();
  }, 180_000);
  afterAll(() => env?.close());

  /** Declare the console errors the running test causes on purpose (refused requests whose problem the page shows). */
  const expectConsoleErrors = (...patterns: RegExp[]) => env!.expectConsoleErrors(...patterns);

  checkConsoleAfterEach(() => env);

  it('deploys an agent, follows its logs live, reads one run’s logs and invokes it', async () => {
    await nav('Agents');
    await page.getByLabel('Agent name').fill('helper');
    await page.getByRole('button', { name: 'Create agent' }).click();
    expect(await page.getByTestId('secret').textContent()).toBeTruthy();
    fs.writeFileSync(BUNDLE, await tarball({ 'index.mjs': HANDLER }));
    await page.locator('input[type=file]').setInputFiles(BUNDLE);
    await page.getByRole('button', { name: 'Deploy', exact: true }).click();
    await expect.poll(() => text('deployment-v1'), { timeout: 30_000 }).toBe('active');
    await check('agents');
    // Live: a run started elsewhere (the API key, async) shows its lines as it writes them.
    await tab('Live logs');
    await expect.poll(() => text('logs-state')).toBe('live');
    const agents = await fetch(`${base}/v2/agents`, { headers: { 'x-api-key': s.apiKey } }).then((r) => r.json());
    const agentId = agents.data.find((a: { name: string }) => a.name === 'helper').id;
    const queued = await fetch(`${base}/v2/agents/${agentId}/invoke`, {
      method: 'POST',
      headers: { 'x-api-key': s.apiKey, 'content-type': 'application/json' },
      body: JSON.stringify({ input: { name: 'Live' }, async: true }),
    });
    expect(queued.status).toBe(202);
    await expect.poll(() => text('live-logs'), { timeout: 20_000 }).toContain('started for Live');
    await expect.poll(() => text('live-logs'), { timeout: 20_000 }).toContain('almost done for Live');
    expect(await page.getByTestId('live-logs').getByText('stderr').count()).toBeGreaterThan(0);
    await check('agents-logs');
    await tab('Invoke and runs');
    await page
      .getByRole('button', { name: /^Logs of run / })
      .first()
      .click();
    await expect.poll(() => text('run-logs')).toContain('almost done for Live');
    await closeDrawer();
    await page.getByLabel('Input (JSON)').fill('{"name":"Ada"}');
    await page.getByRole('button', { name: 'Invoke', exact: true }).click();
    await expect.poll(() => text('invocation-output')).toContain('"hello": "Ada"');
    expect(await text('invocation-logs')).toContain('started for Ada');
    await expect.poll(() => page.getByTestId('runs').getByRole('row').count()).toBe(3); // header + 2 runs
  }, 90_000);

  it('subscribes the agent to a service, shares its memory with another agent and puts a key', async () => {
    await tab('Tools');
    await field('Service').fill(s.service);
    await page.getByRole('button', { name: 'Subscribe agent' }).click();
    await expect.poll(() => text('agent-tools')).toContain(s.service);
    await page.getByLabel('Agent name').fill('reader');
    await page.getByRole('button', { name: 'Create agent' }).click();
    await expect
      .poll(() => page.getByRole('combobox', { name: 'Agent', exact: true }).inputValue(), { timeout: 15_000 })
      .toMatch(/^reader/); // the new agent is selected
    await choose('Agent', /^helper/);
    await tab('Grants');
    await choose('With agent', 'reader');
    await field('Key prefix').fill('notes/');
    await page.getByRole('button', { name: 'Grant', exact: true }).click();
    await expect.poll(() => text('grants-given')).toMatch(/reader\s*read\s*notes\/\*/);
    await check('agents-grants');
    await choose('Agent', /^reader/);
    await tab('Grants');
    await expect.poll(() => text('grants-received')).toMatch(/helper\s*read\s*notes\/\*/);
    await choose('Agent', /^helper/);
    await tab('Key/value memory');
    await field('Key').fill('notes/today');
    await field('Value (JSON)').fill('{"sky":"clear"}');
    await page.getByRole('button', { name: 'Save entry' }).click();
    await expect.poll(() => text('kv-entries')).toContain('{"sky":"clear"}');
  }, 90_000);

  it('deploys a second version, rolls back, stops, redeploys and rotates the secret', async () => {
    await tab('Deployments');
    await page.locator('input[type=file]').setInputFiles(BUNDLE);
    await page.getByRole('button', { name: 'Deploy', exact: true }).click();
    await expect.poll(() => text('deployment-v2'), { timeout: 30_000 }).toBe('active');
    expect(await text('deployment-v1')).toBe('superseded');
    await page.getByRole('button', { name: 'Roll back' }).click();
    await expect.poll(() => text('deployment-v1')).toBe('active');
    expect(await text('deployment-v2')).toBe('rolled_back');
    await page.getByRole('button', { name: 'Stop' }).click();
    await expect.poll(() => text('deployment-v1')).toBe('stopped');
    await page.getByRole('button', { name: 'Redeploy' }).click();
    await expect.poll(() => text('deployment-v1'), { timeout: 30_000 }).toBe('active');
    // Nothing earlier to go back to: the platform's 409 problem is shown with its detail.
    expectConsoleErrors(/ 409 \(Conflict\) @ \S+\/deployments\/rollback$/);
    await page.getByRole('button', { name: 'Roll back' }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: 'No earlier good version to roll back to from version 1' })
      .waitFor();
    await check('agents-deployments');
    const before = await text('secret');
    await field('Grace period for the old secret (s)').fill('600');
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await expect.poll(() => text('secret'), { timeout: 15_000 }).not.toBe(before);
    expect(await text('secret')).toMatch(/^ags_/);
  }, 90_000);

  it('shows analytics charts (error rate included) to a pro user, and system analytics to an admin', async () => {
    // Demoted while signed in: the page still asks, and shows the platform's 403 problem.
    expectConsoleErrors(/ 403 \(Forbidden\) @ \S+\/analytics\/\S+$/);
    await setRoles(['user']);
    await nav('Analytics');
    await expect.poll(() => page.getByRole('alert').first().textContent()).toContain('Not allowed for your role');
    await check('analytics-403');
    await setRoles(['user', 'pro']);
    await page.reload();
    await page.getByTestId('chart-usage').waitFor();
    await page.getByTestId('chart-errors').waitFor();
    await expect.poll(() => page.locator('.recharts-surface').count()).toBeGreaterThanOrEqual(4);
    expect(await page.getByText('Calls', { exact: true }).count()).toBe(1);
    expect(await page.getByRole('tab', { name: 'System' }).count()).toBe(0);
    await check('analytics');
    await setRoles(['user', 'pro', 'admin']);
    await page.reload();
    await expect.poll(() => page.getByTestId('whoami').textContent()).toContain('admin');
    await tab('System');
    await page.getByTestId('system-analytics').waitFor();
    await page.getByTestId('chart-endpoints').locator('.recharts-surface').waitFor();
    await page.getByText('Slowest (p95)', { exact: true }).click(); // the runs above slept 300 ms
    // The table lists the 25 slowest routes of the whole database: on PGlite that is this file's
    // traffic (its invoke slept 300 ms, so it is listed); the PostgreSQL pass shares one database
    // with every other suite, whose slower routes can fill the 25 rows.
    if (built.ctx.database.engine === 'pglite')
      await expect.poll(() => text('endpoints')).toContain('POST /v2/agents/:id/invoke');
    else await expect.poll(() => text('endpoints')).toMatch(/(GET|POST|PUT|PATCH|DELETE) \/\S+/);
    await check('analytics-admin');
  }, 90_000);
  it('opens a held call at its approval_url, shows its arguments and approves it; the retry runs once', async () => {
    const { app } = built;
    await call(
      app,
      {
        method: 'POST',
        url: '/v1/policies',
        headers: s.headers,
        payload: {
          description: 'Paris needs a person',
          source: `@approval("required") forbid(principal, action, resource == Platform::Tool::"${s.service}/get_weather") when { context.arguments.hasTag("city") && context.arguments.getTag("city") == "Paris" };`,
        },
      },
      201,
    );
    const run = { service: s.service, tool: 'get_weather', arguments: { city: 'Paris' } };
    const url = `/v1/agents/${s.session}/execute`;
    const { body: held } = await call(app, { method: 'POST', url, headers: s.headers, payload: run }, 202);
    expect(held.code).toBe('approval_required');
    await page.goto(held.approval_url.replace(/^https?:\/\/[^/]+/, base));
    await page.getByText(`${s.service}/get_weather`).first().waitFor();
    await page.getByText('"city": "Paris"').first().waitFor();
    await check('approvals');
    const approve = page.getByRole('button', { name: `Approve ${held.approval_id}` });
    await approve.first().click();
    await approve.first().waitFor({ state: 'detached' }); // decided: no buttons left for it
    const payload = { ...run, approval_id: held.approval_id };
    const { body: ran } = await call(app, { method: 'POST', url, headers: s.headers, payload }, 200);
    expect(ran.status).toBe('succeeded');
    const { body: again } = await call(app, { method: 'POST', url, headers: s.headers, payload }, 409);
    expect(again.code).toBe('approval_invalid');
  });
});
