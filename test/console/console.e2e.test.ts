/**
 * The web console in a real browser (Debian's chromium, playwright-core) against a real server on
 * loopback, one browser and one server for the file, pages reached with the keyboard: sign-in (the
 * spec's 5 steps) and a first load that asks nothing that fails, also from another loopback origin;
 * empty pages and "needs pro"; API keys; register, publish, search, try, report and rename
 * services (manifest, OpenAPI, MCP); memory search and session summaries; a connected account at a
 * real OAuth upstream, expired and removed; quota bars; a phone viewport; sign-out, a sign-out
 * elsewhere and an expired session. Agents and analytics: `console-agents.e2e.test.ts`. Every page
 * and state passes axe-core with no moderate or worse violation, and a test fails on any error in
 * the browser's console but those it declares (`expectConsoleErrors`). Shots: test-results/console-*.png.
 */
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createUser } from '../helpers/app.js';
import {
  registerNotesService,
  setExpiry,
  storedConnection,
  type ConnectionsFixture,
} from '../modules/connections/fixture.js';
import { checkConsoleAfterEach, startConsoleEnvironment, type ConsoleEnvironment } from './environment.js';
import { SHOTS, consoleUi, haveBrowser } from './ui.js';

describe.skipIf(!haveBrowser)('web console in chromium', () => {
  let env: ConsoleEnvironment | undefined;
  let page: Page;
  let base: string;
  let built: ConsoleEnvironment['built'];
  const creds = { email: `console-${Date.now().toString(36)}@example.test`, password: 'correct horse battery staple' };
  /** What the tests hand on to the next ones. */
  const s = { apiKey: '', weather: '', notes: '' };

  beforeAll(async () => {
    env = await startConsoleEnvironment(creds);
    ({ page, base, built } = env);
  }, 180_000);
  afterAll(() => env?.close());

  /** Declare the console errors the running test causes on purpose (refused requests whose problem the page shows). */
  const expectConsoleErrors = (...patterns: RegExp[]) => env!.expectConsoleErrors(...patterns);

  checkConsoleAfterEach(() => env);

  const setRoles = (roles: string[]) => env!.setRoles(roles);
  const { check, nav, tenantSignIn, tab, text, field, choose, closeDrawer } = consoleUi(() => page, creds);

  it('signs in through the 5-step flow, with the refresh token only in an HttpOnly cookie', async () => {
    // Opened at another loopback name of the same server: the page load goes to the public origin, where the browser session works.
    const requests: string[] = [],
      onRequest = (r: { url(): string }) => requests.push(new URL(r.url()).pathname);
    page.on('request', onRequest);
    await page.goto(`http://localhost:${new URL(base).port}/console/marketplace`);
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    expect(page.url()).toBe(`${base}/console/marketplace`);
    // A first visit asks for no session renewal (there is none) and finds its icon.
    await expect.poll(() => requests).toContain('/console/favicon.svg');
    expect(requests).not.toContain('/v1/auth/session/refresh');
    page.off('request', onRequest);
    await check('signin');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('#email').fill(creds.email);
    await page.locator('#password').fill(creds.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByTestId('whoami').textContent()).toContain(creds.email);
    expect(await page.getByTestId('whoami').textContent()).not.toContain('pro');
    await expect.poll(() => page.url()).toBe(`${base}/console/marketplace`);
    const cookie = (await page.context().cookies()).find((c) => c.name === 'ap_refresh');
    expect(cookie).toMatchObject({ httpOnly: true, secure: true, sameSite: 'Strict', path: '/v1/auth/session' });
    expect(await page.evaluate(() => document.cookie)).not.toContain('ap_refresh');
    expect(
      await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage })),
    ).not.toMatch(/rt_|eyJ/);
    // A reload restores the session from the cookie (the access token lived only in memory).
    await page.reload();
    await expect.poll(() => page.getByTestId('whoami').textContent()).toContain(creds.email);
  }, 90_000);

  it('shows a new user the empty pages and that analytics need the pro plan', async () => {
    const empty: Array<[page: string, text: string, shot: string]> = [
      ['API keys', 'No API keys yet: create one above.', 'api-keys-empty'],
      ['My services', 'No services yet: register one above.', 'services-empty'],
      [
        'Subscriptions',
        'No subscriptions yet: running a tool in the marketplace subscribes you to its free plan.',
        'subscriptions-empty',
      ],
      ['Connected accounts', 'No connected accounts yet.', 'connections-empty'],
      ['Agents', 'No agents yet: create one above.', 'agents-empty'],
    ];
    for (const [label, message, shot] of empty) {
      await nav(label);
      await page.getByText(message, { exact: true }).waitFor();
      await check(shot);
    }
    await nav('Memory');
    await tab('Sessions');
    await page.getByText('No sessions yet: running a tool in the marketplace starts one.').waitFor();
    await nav('Analytics');
    await expect.poll(() => text('needs-pro')).toContain('Your roles: user');
    expect(await page.locator('.recharts-surface').count()).toBe(0);
    await check('analytics-needs-pro');
    // Promoted by an admin: the next page load sees the new role.
    await setRoles(['user', 'pro']);
    await page.reload();
    await expect.poll(() => page.getByTestId('whoami').textContent()).toContain('pro');
    await page.getByTestId('chart-usage').waitFor();
  }, 90_000);

  it('creates an API key and shows its secret once', async () => {
    await nav('API keys');
    // With the keyboard: type the name, Tab past the scopes (default) to the button, Enter.
    await page.getByLabel('Key name').fill('laptop');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Escape');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Create key');
    await page.keyboard.press('Enter');
    await page.getByTestId('secret').waitFor();
    s.apiKey = (await page.getByTestId('secret').textContent())!;
    expect(s.apiKey).toMatch(/^apk_/);
    await check('api-keys');
    await page.reload();
    await page.getByRole('cell', { name: 'laptop', exact: true }).waitFor();
    expect(await page.getByTestId('secret').count()).toBe(0);
    expect(await page.content()).not.toContain(s.apiKey);
    // The default leaves out the opt-in scopes; a key that may decide approvals names it.
    const row = (name: string) => page.getByRole('row').filter({ has: page.getByRole('cell', { name, exact: true }) });
    expect(await row('laptop').textContent()).not.toContain('approvals:decide');
    await page.getByLabel('Key name').fill('approver');
    await page.getByPlaceholder(/^default: all but/).click();
    await page.getByRole('option', { name: /^approvals:decide/ }).click();
    await page.keyboard.press('Escape');
    await page.getByRole('button', { name: 'Create key' }).click();
    await row('approver').waitFor();
    expect(await row('approver').textContent()).toContain('approvals:decide');
  }, 90_000);

  it('registers and publishes a service, then runs its tool from the try-it form and reports it', async () => {
    const upstream = env!.upstream;
    s.weather = `weather-${Date.now().toString(36)}`;
    await nav('My services');
    // A manifest the platform refuses: its problem detail and the failing fields are shown.
    expectConsoleErrors(/ 400 \(Bad Request\) @ \S+\/owner\/services$/);
    await page.getByLabel('Manifest (JSON)').fill(JSON.stringify({ name: 'broken service', tools: [] }));
    await page.getByRole('button', { name: 'Register', exact: true }).click();
    const problem = page.getByRole('alert');
    await problem.waitFor();
    expect(await problem.textContent()).toMatch(/base_url/);
    await check('services-error');
    const manifest = {
      name: s.weather,
      description: 'Current weather by city',
      base_url: upstream.url,
      category: 'weather',
      tools: [
        {
          name: 'get_weather',
          description: 'Current weather for a city',
          method: 'GET',
          path: '/weather',
          input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
      ],
    };
    await page.getByLabel('Manifest (JSON)').fill(JSON.stringify(manifest));
    await page.getByRole('button', { name: 'Register', exact: true }).click();
    await page.getByText('Signing secret').waitFor();
    await page.getByRole('button', { name: 'Verify domain' }).click();
    const method = await page.getByText(/\.well-known\/agent-platform-verification\.txt containing/).textContent();
    upstream.verificationToken = /containing (\S+)/.exec(method!)![1];
    await page.getByRole('button', { name: 'Verify domain' }).click();
    await expect.poll(() => text('check-domain_verified')).toBe('passed');
    await page
      .getByLabel('Test calls (verification config)')
      .fill(JSON.stringify([{ tool: 'get_weather', arguments: { city: 'Oslo' } }]));
    await page.getByRole('button', { name: 'Save test calls' }).click();
    await page.getByRole('button', { name: 'Publish', exact: true }).click();
    await expect.poll(() => text('check-functional_verification'), { timeout: 20_000 }).toBe('passed');
    await expect.poll(() => page.getByText('Service status: published').count()).toBe(1);
    await check('services');
    await nav('Marketplace');
    // Categories: one narrows the services listed, "all" lists them all again.
    const categories = page.getByRole('group', { name: 'Categories' });
    await categories.getByText('weather', { exact: true }).click();
    await expect.poll(() => categories.getByRole('radio', { name: 'weather' }).isChecked()).toBe(true);
    await page.getByRole('button', { name: `1 tool of ${s.weather}` }).waitFor();
    await categories.getByText('all', { exact: true }).click();
    await expect.poll(() => categories.getByRole('radio', { name: 'all' }).isChecked()).toBe(true);
    // Search as you type: suggestions while typing, results for the query.
    await page.getByPlaceholder('weather forecast, send email…').pressSequentially('weat');
    await page
      .getByRole('option', { name: /weather/i })
      .first()
      .waitFor();
    await page.getByPlaceholder('weather forecast, send email…').fill('weather city');
    // The button names the service: on PostgreSQL other test files' weather services are listed too.
    await page.getByRole('button', { name: `Details and try it: get_weather of ${s.weather}` }).click();
    await page.getByLabel('city').fill('Bergen');
    await page.getByRole('button', { name: 'Run tool' }).click();
    await expect.poll(() => text('tool-result')).toContain('"temp_c": 21');
    expect(await text('tool-result')).toContain('Bergen');
    // Report the tool to its owner (here: ourselves) from the same drawer.
    await choose('Reason', 'Wrong output');
    await field('Details').fill('Bergen is never 21 degrees');
    await page.getByRole('button', { name: 'Send report' }).click();
    await page.getByText(/^Reported \(/).waitFor();
    await page.screenshot({ path: path.join(SHOTS, 'console-marketplace-try-it.png'), fullPage: true });
    // axe reads the page under a modal's overlay as low-contrast text: check the page with the drawer closed.
    await closeDrawer();
    await check('marketplace');
  }, 90_000);

  it('lists the report on the owner’s service, resolves it, and renames the service and its tool', async () => {
    await nav('My services');
    await page.getByRole('button', { name: `Manage ${s.weather}` }).click();
    const reports = page.getByTestId('reports');
    await expect.poll(() => reports.textContent()).toContain('Bergen is never 21 degrees');
    expect(await reports.textContent()).toContain('get_weather');
    expect(await reports.textContent()).toContain('wrong output');
    await page.getByRole('button', { name: /^Resolve report / }).click();
    await page.getByText('No open reports.').waitFor();
    await page.getByText('Resolved', { exact: true }).click();
    await expect.poll(() => reports.textContent()).toContain('resolved');
    await field('Display name').fill('Weather Now');
    await page.getByRole('button', { name: 'Rename service' }).click();
    await page.getByText('Display name is now “Weather Now”.').waitFor();
    await expect.poll(() => page.getByRole('cell', { name: /Weather Now/ }).count()).toBe(1);
    await expect.poll(() => text('managed-service')).toBe('Managing Weather Now');
    await page.getByLabel('New name for get_weather').fill('current_weather');
    await page.getByRole('button', { name: 'Rename get_weather' }).click();
    await page.getByText('also: get_weather').waitFor();
    await check('services-manage');
  }, 90_000);

  it('registers services from an OpenAPI document and from an MCP server', async () => {
    const suffix = Date.now().toString(36);
    await page.getByText('OpenAPI URL', { exact: true }).click();
    await field('Name').fill(`pets-${suffix}`);
    await field('OpenAPI document URL').fill(`${env!.openapi.url}/openapi.json`);
    await page.getByRole('button', { name: 'Register', exact: true }).click();
    await page.getByRole('button', { name: `Manage pets-${suffix}` }).waitFor();
    await page.getByText(/^list_?pets$/i).waitFor(); // the tools table of the new service
    await page.getByText('MCP server URL', { exact: true }).click();
    await field('Name').fill(`calc-${suffix}`);
    await field('MCP endpoint URL (Streamable HTTP)').fill(env!.mcp.mcpUrl);
    await page.getByRole('button', { name: 'Register', exact: true }).click();
    await page.getByRole('button', { name: `Manage calc-${suffix}` }).waitFor();
    await page.getByText('explode', { exact: true }).waitFor();
    await check('services-mcp');
  }, 60_000);

  it('searches memory with the threshold slider, summarizes a session and shows its timeline', async () => {
    await nav('Memory');
    await page.getByLabel('Remember').fill('The deploy window for the payments service is Tuesday at noon');
    await page.getByRole('button', { name: 'Add memory' }).click();
    await page.getByText(/^Remembered \(/).waitFor();
    await page.getByLabel('Search memory').fill('payments deploy window');
    await expect
      .poll(
        async () => {
          await page.getByRole('button', { name: 'Search', exact: true }).click();
          return text('memory-hits');
        },
        { timeout: 15_000 },
      )
      .toContain('Tuesday at noon');
    expect(await page.getByText(/similarity 0\.\d\d|similarity 1\.00/).count()).toBeGreaterThan(0);
    await check('memory');
    await page.getByRole('slider').focus();
    await page.keyboard.press('End'); // threshold 1.00
    await page.getByText('No memory at this threshold.').waitFor();
    // The try-it run above happened in the console's session "console".
    await tab('Sessions');
    await choose('Session', /^console · 1 call ·/);
    await page.getByText('No summary yet: summarize the session to build one.').waitFor();
    await expect.poll(() => text('session-timeline')).toContain('get_weather');
    await page.getByRole('button', { name: 'Summarize', exact: true }).click();
    await expect.poll(() => text('session-summary')).toMatch(/get_weather|current_weather/);
    await expect.poll(() => text('session-timeline')).toContain('summary');
    await check('memory-sessions');
  }, 90_000);

  it('connects an account at an OAuth upstream, runs its tool, shows the expired connection and disconnects', async () => {
    const up = env!.oauth;
    const f: ConnectionsFixture = { app: built.app, ctx: built.ctx, up, callbackUri: `${base}/connections/callback` };
    const notes = await registerNotesService(f, await createUser(built.app));
    const account = `ada-${Date.now().toString(36)}@notes.test`;
    await nav('Connected accounts');
    await page.getByText('No connected accounts yet.').waitFor();
    // Problems the page shows (an unknown service, running an expired connection's tool); the upstream's page has no icon.
    expectConsoleErrors(
      / 404 \(Not Found\) @ \S+\/connections$/,
      / 409 \(Conflict\) @ \S+\/execute$/,
      new RegExp(` 404 \\(Not Found\\) @ (?!${base})\\S+/favicon\\.ico$`),
    );
    await field('Service to connect').fill('no-such-service');
    await page.getByRole('button', { name: 'Connect', exact: true }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('Not found');
    await field('Service to connect').fill(notes.name);
    await page.getByRole('button', { name: 'Connect', exact: true }).click();
    // The upstream's own consent page (another origin), then back through the platform's callback.
    await page.locator('input[name=email]').fill(account);
    await page.getByRole('button', { name: 'Sign in and allow' }).click();
    // Back on the console's page (its query may say which connection and how it went).
    await expect
      .poll(() => page.url(), { timeout: 15_000 })
      .toMatch(new RegExp(`^${base.replace(/[.]/g, '\\.')}/console/connections(\\?|$)`));
    await expect.poll(() => text('connect-result')).toMatch(/is active/);
    await expect.poll(() => text(`connection-${notes.name}`)).toBe('active');
    await check('connections');

    await nav('Marketplace');
    await page.getByRole('button', { name: `1 tool of ${notes.name}` }).click();
    await page.getByRole('button', { name: 'Run tool' }).click();
    await expect.poll(() => text('tool-result')).toContain(`first note of ${account}`);

    // The upstream revokes the grant; the next call's refresh is refused and the connection expires.
    const { body: listed } = await call(
      built.app,
      { method: 'GET', url: '/connections', headers: { 'x-api-key': s.apiKey } },
      200,
    );
    const id = listed.data[0].id as string;
    await up.revoke((await storedConnection(f, id)).refreshToken!);
    await setExpiry(f, id, 30_000);
    await page.getByRole('button', { name: 'Run tool' }).click();
    await page.getByText('Connect your account first').waitFor();
    await closeDrawer();
    await nav('Connected accounts');
    await expect.poll(() => text(`connection-${notes.name}`)).toContain('expired');
    await page.getByRole('button', { name: `Reconnect ${notes.name}` }).waitFor();
    await check('connections-expired');
    await page.getByRole('button', { name: `Disconnect ${notes.name}` }).click();
    await page.getByText(`${notes.name} disconnected (upstream revocation:`).waitFor();
    await page.getByText('No connected accounts yet.').waitFor();
    s.notes = notes.name;
  }, 90_000);

  it('shows the subscriptions the try-it runs made, with quota bars', async () => {
    await nav('Subscriptions');
    // Calls to one's own service are not counted; the other owner's notes service counted ours.
    const own = page.getByRole('progressbar', { name: 'Weather Now: day quota used' });
    await own.waitFor({ state: 'attached' });
    expect(await own.getAttribute('aria-valuenow')).toBe('0');
    const notes = page.getByRole('progressbar', { name: `${s.notes}: day quota used` });
    await notes.waitFor();
    expect(Number(await notes.getAttribute('aria-valuenow'))).toBeGreaterThan(0);
    await page.getByRole('progressbar', { name: `${s.notes}: month quota used` }).waitFor();
    expect(await page.getByText(/^Today: [1-9]\d* \/ 100/).count()).toBe(1);
    await check('subscriptions');
  }, 60_000);

  it('fits a phone: the navigation opens from the menu button', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      await page.getByRole('button', { name: 'Toggle navigation' }).click();
      await page.getByRole('navigation').getByRole('link', { name: 'Memory', exact: true }).click();
      const heading = page.getByRole('heading', { level: 2, name: 'Memory', exact: true });
      await heading.waitFor();
      // The navigation closed: the page's title is what is at its place on the screen.
      await expect
        .poll(() =>
          heading.evaluate((h) => {
            const r = h.getBoundingClientRect();
            return h.contains(document.elementFromPoint(r.left + 4, r.top + r.height / 2));
          }),
        )
        .toBe(true);
      // Nothing wider than the screen.
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
      await check('phone-memory');
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
    }
  }, 60_000);

  it('signs out and the refresh cookie no longer works', async () => {
    const before = (await page.context().cookies()).find((c) => c.name === 'ap_refresh')!;
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    const res = await fetch(`${base}/v1/auth/session/refresh`, {
      method: 'POST',
      headers: { cookie: `ap_refresh=${before.value}` },
    });
    expect(res.status).toBe(401);
  });

  it('goes back to sign-in when the session ends elsewhere or expires, and back to the page after signing in', async () => {
    // The page's clock (Date, timers) is Playwright's: it runs in real time until a test jumps it forward.
    await page.clock.install();
    await page.goto(`${base}/console/subscriptions`);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await tenantSignIn();
    await expect.poll(() => page.url()).toBe(`${base}/console/subscriptions`);

    // Signed out in another tab: this tab's access token is dropped too.
    const other = await page.context().newPage();
    await other.goto(`${base}/console/api-keys`);
    await other.getByTestId('whoami').waitFor();
    await other.getByRole('button', { name: 'Sign out' }).click();
    await other.getByRole('button', { name: 'Sign in' }).waitFor();
    await other.close();
    await page.getByTestId('session-notice').waitFor();
    await check('session-ended');

    // Signed in again; a day later (the access token lives 24 h) the console renews it through the cookie by itself.
    await page.getByRole('button', { name: 'Sign in' }).click();
    await tenantSignIn();
    await expect.poll(() => page.url()).toBe(`${base}/console/subscriptions`);
    const refreshes: number[] = [];
    page.on('response', (r) => r.url().endsWith('/v1/auth/session/refresh') && refreshes.push(r.status()));
    await page.clock.fastForward('25:00:00');
    await nav('API keys');
    await page.getByRole('cell', { name: 'laptop', exact: true }).waitFor();
    expect(refreshes).toEqual([200]);

    // The refresh token is revoked elsewhere; the next day the renewal is refused: back to sign-in, on the same page.
    expectConsoleErrors(/ 401 \(Unauthorized\) @ \S+\/v1\/auth\/session\/refresh$/);
    const cookie = (await page.context().cookies()).find((c) => c.name === 'ap_refresh')!;
    expect(
      (await fetch(`${base}/v1/auth/session`, { method: 'DELETE', headers: { cookie: `ap_refresh=${cookie.value}` } }))
        .status,
    ).toBe(204);
    await page.clock.fastForward('25:00:00');
    await page.getByRole('navigation').getByRole('link', { name: 'Agents', exact: true }).click();
    await page.getByTestId('session-notice').waitFor();
    expect(refreshes).toHaveLength(2);
    expect(refreshes[1]).toBeGreaterThanOrEqual(400);
    expect(page.url()).toBe(`${base}/console/agents`);
  }, 90_000);
});
