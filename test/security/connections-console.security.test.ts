/**
 * The page at a connection's `authorization_url` in a real browser (Debian's chromium, the built
 * console, the app on loopback, the test's own OAuth upstream): a link made through the API by the
 * signed-in person's own account is taken after the console's sign-in (which comes back to the
 * flow) and ends active; a link made by another account is refused there and connects nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { call, createUser } from '../helpers/app.js';
import { registerNotesService, storedConnection, type ConnectionsFixture } from '../modules/connections/fixture.js';
import { startConsoleEnvironment, type ConsoleEnvironment } from '../console/environment.js';
import { consoleUi, haveBrowser } from '../console/ui.js';

describe.skipIf(!haveBrowser)('connections: the authorization_url page in chromium', () => {
  let env: ConsoleEnvironment | undefined;
  let page: Page;
  let f: ConnectionsFixture;
  let headers: { authorization: string };
  let service = '';
  const creds = { email: `conn-${Date.now().toString(36)}@example.test`, password: 'correct horse battery staple' };
  const { tenantSignIn, text } = consoleUi(() => page, creds);

  beforeAll(async () => {
    env = await startConsoleEnvironment(creds);
    page = env.page;
    f = { app: env.built.app, ctx: env.built.ctx, up: env.oauth, callbackUri: `${env.base}/connections/callback` };
    service = (await registerNotesService(f, await createUser(f.app))).name;
    // The same person's API credential (a script, the SDK or the CLI would hold one).
    const { body } = await call(f.app, { method: 'POST', url: '/auth/login', payload: creds }, 200);
    headers = { authorization: `Bearer ${body.access_token}` };
  }, 180_000);
  afterAll(() => env?.close());

  const start = async (h: { authorization: string }) =>
    (
      await call(
        f.app,
        {
          method: 'POST',
          url: '/connections',
          headers: h,
          payload: { service, return_to: `${env!.base}/console/connections` },
        },
        201,
      )
    ).body;

  it('a link made through the API: the console asks to sign in, comes back to the flow, and the connection ends active', async () => {
    const started = await start(headers);
    await page.goto(started.authorization_url);
    await page.getByRole('button', { name: 'Sign in' }).click();
    // Back on the connections page, the flow is taken and the browser goes on to the upstream's consent form
    // (at once: the console's own page may be gone before it is seen).
    await tenantSignIn(page.getByRole('button', { name: 'Sign in and allow' }));
    await page.locator('input[name=email]').fill(`ada-${Date.now().toString(36)}@notes.test`);
    await page.getByRole('button', { name: 'Sign in and allow' }).click();
    await expect.poll(() => page.url()).toBe(`${env!.base}/console/connections`);
    await expect.poll(() => text('connect-result')).toContain(`Connection ${started.connection_id} is active`);
    const cookies = await page.context().cookies(env!.base);
    expect(cookies.filter((c) => c.name.startsWith('ap_connect_'))).toEqual([]); // the binding cookie went with the flow
    expect((await storedConnection(f, started.connection_id)).row.status).toBe('active');
  }, 90_000);

  it("another account's link is refused on the page: nothing is connected", async () => {
    const mallory = await createUser(f.app);
    const started = await start(mallory.headers);
    await page.goto(started.authorization_url);
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('made by another account');
    expect(page.url()).toBe(`${env!.base}/console/connections`);
    expect((await page.context().cookies(env!.base)).filter((c) => c.name.startsWith('ap_connect_'))).toEqual([]);
    const stored = await storedConnection(f, started.connection_id);
    expect({ status: stored.row.status, token: stored.accessToken }).toEqual({ status: 'pending', token: null });
  }, 60_000);
});
