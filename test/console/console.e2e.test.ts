/**
 * The web console in a real browser (Debian's chromium driven by playwright-core) against a real
 * server on loopback: sign in through the spec's 5-step flow, reveal an API key once, register and
 * publish a service against a loopback upstream, run a tool from the try-it form, deploy an agent
 * and watch it become active, search memory with the threshold slider, see analytics charts as a
 * pro user, sign out (the session cookie is revoked). Every page passes axe-core with no serious
 * or critical violation; screenshots go to test-results/console-*.png.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../helpers/app.js';
import { freePort } from '../helpers/net.js';
import { startJsonApi } from '../helpers/upstreams.js';
import { tarball } from '../modules/deployments/fixtures.js';

const CHROMIUM = '/usr/bin/chromium';
const ROOT = path.resolve(import.meta.dirname, '../..');
const SHOTS = path.join(ROOT, 'test-results');
const haveBrowser = fs.existsSync(CHROMIUM);
if (!haveBrowser && process.env.CI) throw new Error(`${CHROMIUM} is missing: .ci/run installs Debian's chromium`);

// Build the console before the app reads console/dist (npm start does the same through prestart).
if (haveBrowser) {
  const ensure = await import(path.join(ROOT, 'scripts/ensure-console.mjs'));
  if (ensure.consoleStale()) {
    const r = ensure.buildConsole();
    if (r.status !== 0) throw new Error('console build failed');
  }
}
const axeSource = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

describe.skipIf(!haveBrowser)('web console in chromium', () => {
  let browser: Browser;
  let page: Page;
  let base: string;
  let app: Awaited<ReturnType<typeof setupApp>>['app'];
  const creds = { email: `console-${Date.now().toString(36)}@example.test`, password: 'correct horse battery staple' };
  const api = { upstream: null as Awaited<ReturnType<typeof startJsonApi>> | null };

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    ({ app } = await setupApp({ PUBLIC_URL: base, PORT: String(port) }));
    await app.listen({ port, host: '127.0.0.1' });
    api.upstream = await startJsonApi();
    // A pro user of the tenant (registered with a password, promoted by an admin).
    const { body: user } = await call(app, { method: 'POST', url: '/auth/register', payload: { ...creds, name: 'Console User' } }, 201);
    const admin = await createUser(app, { roles: ['admin'] });
    await call(app, { method: 'PUT', url: `/admin/users/${encodeURIComponent(user.user_id.split('|').pop())}/roles`, headers: admin.headers, payload: { roles: ['user', 'pro'] } }, 200);
    fs.mkdirSync(SHOTS, { recursive: true });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'] });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.setDefaultTimeout(15_000);
    if (process.env.CONSOLE_DEBUG) page.on('response', (r) => r.url().includes('/v1/auth') && console.log('RESP', r.request().method(), r.url(), r.status()));
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await api.upstream?.close();
  });

  afterEach(async (ctx) => {
    if (ctx.task.result?.state === 'fail' && page) await page.screenshot({ path: path.join(SHOTS, `console-failed-${ctx.task.name.slice(0, 40).replace(/\W+/g, '-')}.png`), fullPage: true }).catch(() => undefined);
  });

  /** axe-core in the page: no serious or critical violation; then a screenshot. */
  async function check(name: string): Promise<void> {
    // Evaluated over the DevTools protocol: the console's CSP (script-src 'self') refuses inline tags, as it should.
    await page.evaluate(axeSource);
    const violations = await page.evaluate(async () => {
      const r = await (window as any).axe.run(document, { resultTypes: ['violations'] });
      return r.violations.filter((v: any) => v.impact === 'serious' || v.impact === 'critical').map((v: any) => `${v.id}: ${v.help} (${v.nodes.slice(0, 3).map((n: any) => `${n.target.join(' ')}: ${n.any?.[0]?.message ?? ''}`).join('; ')})`);
    });
    await page.screenshot({ path: path.join(SHOTS, `console-${name}.png`), fullPage: true });
    expect(violations, `accessibility of ${name}`).toEqual([]);
  }

  const nav = async (label: string) => {
    await page.getByRole('link', { name: label, exact: true }).click();
    await page.getByRole('heading', { level: 2 }).first().waitFor();
  };

  it('signs in through the 5-step flow, with the refresh token only in an HttpOnly cookie', async () => {
    await page.goto(`${base}/console/`);
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    await check('signin');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('#email').fill(creds.email);
    await page.locator('#password').fill(creds.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByTestId('whoami').textContent()).toContain(creds.email);
    await expect.poll(() => page.url()).toBe(`${base}/console/marketplace`);
    const cookie = (await page.context().cookies()).find((c) => c.name === 'ap_refresh');
    expect(cookie).toMatchObject({ httpOnly: true, secure: true, sameSite: 'Strict', path: '/v1/auth/session' });
    expect(await page.evaluate(() => document.cookie)).not.toContain('ap_refresh');
    expect(await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }))).not.toMatch(/rt_|eyJ/);
    // A reload restores the session from the cookie (the access token lived only in memory).
    await page.reload();
    await expect.poll(() => page.getByTestId('whoami').textContent()).toContain('pro');
  }, 90_000);

  it('creates an API key and shows its secret once', async () => {
    await nav('API keys');
    await page.getByLabel('Key name').fill('laptop');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = await page.getByTestId('secret').textContent();
    expect(secret).toMatch(/^apk_/);
    await check('api-keys');
    await page.reload();
    await page.getByRole('cell', { name: 'laptop', exact: true }).waitFor();
    expect(await page.getByTestId('secret').count()).toBe(0);
    expect(await page.content()).not.toContain(secret!);
  }, 90_000);

  it('registers and publishes a service, then runs its tool from the try-it form', async () => {
    const upstream = api.upstream!;
    const name = `weather-${Date.now().toString(36)}`;
    await nav('My services');
    const manifest = {
      name,
      description: 'Current weather by city',
      base_url: upstream.url,
      category: 'weather',
      tools: [{ name: 'get_weather', description: 'Current weather for a city', method: 'GET', path: '/weather', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }],
    };
    await page.getByLabel('Manifest (JSON)').fill(JSON.stringify(manifest));
    await page.getByRole('button', { name: 'Register', exact: true }).click();
    await page.getByText('Signing secret').waitFor();
    await page.getByRole('button', { name: 'Verify domain' }).click();
    const method = await page.getByText(/\.well-known\/agent-platform-verification\.txt containing/).textContent();
    upstream.verificationToken = /containing (\S+)/.exec(method!)![1];
    await page.getByRole('button', { name: 'Verify domain' }).click();
    await expect.poll(() => page.getByTestId('check-domain_verified').textContent()).toBe('passed');
    await page.getByLabel('Test calls (verification config)').fill(JSON.stringify([{ tool: 'get_weather', arguments: { city: 'Oslo' } }]));
    await page.getByRole('button', { name: 'Save test calls' }).click();
    await page.getByRole('button', { name: 'Publish', exact: true }).click();
    await expect.poll(() => page.getByTestId('check-functional_verification').textContent(), { timeout: 20_000 }).toBe('passed');
    await expect.poll(() => page.getByText('Service status: published').count()).toBe(1);
    await check('services');

    await nav('Marketplace');
    await page.getByPlaceholder('weather forecast, send email…').fill('weather city');
    await page.getByRole('button', { name: 'Details and try it: get_weather' }).first().click();
    await page.getByLabel('city').fill('Bergen');
    await page.getByRole('button', { name: 'Run tool' }).click();
    await expect.poll(() => page.getByTestId('tool-result').textContent()).toContain('"temp_c": 21');
    expect(await page.getByTestId('tool-result').textContent()).toContain('Bergen');
    await page.screenshot({ path: path.join(SHOTS, 'console-marketplace-try-it.png'), fullPage: true });
    // axe reads the page under a modal's overlay as low-contrast text: check the page with the drawer closed.
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    await check('marketplace');
  }, 90_000);

  it('creates an agent, deploys a bundle and watches it become active, then invokes it', async () => {
    await nav('Agents');
    await page.getByLabel('Agent name').fill('helper');
    await page.getByRole('button', { name: 'Create agent' }).click();
    expect(await page.getByTestId('secret').textContent()).toBeTruthy();
    const bundle = path.join(SHOTS, 'agent.tgz');
    fs.writeFileSync(bundle, await tarball({ 'index.mjs': 'export async function handler(input) { return { hello: input.name }; }\n' }));
    await page.locator('input[type=file]').setInputFiles(bundle);
    await page.getByRole('button', { name: 'Deploy', exact: true }).click();
    await expect.poll(() => page.getByTestId('deployment-v1').textContent(), { timeout: 30_000 }).toBe('active');
    await page.getByLabel('Input (JSON)').fill('{"name":"Ada"}');
    await page.getByRole('button', { name: 'Invoke', exact: true }).click();
    await expect.poll(() => page.getByTestId('invocation-output').textContent()).toContain('"hello": "Ada"');
    await check('agents');
  }, 90_000);

  it('searches memory and the threshold slider filters the hits', async () => {
    await nav('Memory');
    await page.getByLabel('Remember').fill('The deploy window for the payments service is Tuesday at noon');
    await page.getByRole('button', { name: 'Add memory' }).click();
    await page.getByLabel('Search memory').fill('payments deploy window');
    await expect
      .poll(async () => {
        await page.getByRole('button', { name: 'Search', exact: true }).click();
        return page.getByTestId('memory-hits').textContent().catch(() => '');
      }, { timeout: 15_000 })
      .toContain('Tuesday at noon');
    expect(await page.getByText(/similarity 0\.\d\d|similarity 1\.00/).count()).toBeGreaterThan(0);
    await check('memory');
    await page.getByRole('slider').focus();
    await page.keyboard.press('End'); // threshold 1.00
    await page.getByText('No memory at this threshold.').waitFor();
  }, 90_000);

  it('shows analytics charts to a pro user', async () => {
    await nav('Analytics');
    await page.getByTestId('chart-usage').waitFor();
    await expect.poll(() => page.locator('.recharts-surface').count()).toBeGreaterThanOrEqual(3);
    expect(await page.getByText('Calls', { exact: true }).count()).toBe(1);
    await check('analytics');
  }, 90_000);

  it('signs out and the refresh cookie no longer works', async () => {
    const before = (await page.context().cookies()).find((c) => c.name === 'ap_refresh')!;
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    const res = await fetch(`${base}/v1/auth/session/refresh`, { method: 'POST', headers: { cookie: `ap_refresh=${before.value}` } });
    expect(res.status).toBe(401);
  });
});
