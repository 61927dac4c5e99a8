/**
 * The world of `console.e2e.test.ts`: the app on a loopback port (the console served from
 * `console/dist`), the upstreams its pages register and call (a JSON API, an OpenAPI document, an
 * MCP server, an OAuth 2.0 provider), a password user and an admin of the tenant, and one
 * chromium page in a context of its own.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterEach, expect } from 'vitest';
import { call, createUser, setupApp } from '../helpers/app.js';
import { freePort } from '../helpers/net.js';
import { startOAuthUpstream, type OAuthUpstream } from '../helpers/oauth-upstream.js';
import { startJsonApi, startMcpServer, startOpenApiServer } from '../helpers/upstreams.js';
import { SHOTS, launchChromium } from './ui.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

export interface ConsoleEnvironment {
  /** The app's origin, `http://127.0.0.1:<port>`. */
  base: string;
  built: Awaited<ReturnType<typeof setupApp>>;
  /** A 1280×900 page, 15 s default timeout. */
  page: Page;
  upstream: Awaited<ReturnType<typeof startJsonApi>>;
  openapi: Awaited<ReturnType<typeof startOpenApiServer>>;
  mcp: Awaited<ReturnType<typeof startMcpServer>>;
  oauth: OAuthUpstream;
  /** Set the console user's roles, as the admin (`PUT /admin/users/:id/roles`). */
  setRoles(roles: string[]): Promise<unknown>;
  /**
   * Declare console errors the running test causes on purpose: each pattern is matched against
   * `text @ url` ("Failed to load resource: the server responded with a status of 409 (Conflict) @ http://…").
   */
  expectConsoleErrors(...patterns: RegExp[]): void;
  /**
   * What the browser's console printed as errors (a failed request is one) and uncaught page
   * errors since the last call, as `text @ url`, less those declared by `expectConsoleErrors`;
   * both lists are emptied.
   */
  unexpectedConsoleErrors(): string[];
  /** Close the browser and the upstreams (the app closes itself after the file: `setupApp`). */
  close(): Promise<void>;
}

/**
 * Build the console when its sources changed (`scripts/ensure-console.mjs`), then start it all for the user `creds` (registered here with a password, name "Console User"). The
 * browser launches while the app builds; the page's console errors are collected from its first
 * load on (`unexpectedConsoleErrors`). On a failure what started is closed before the error is
 * thrown. `CONSOLE_DEBUG=1` logs every answer ≥ 400 the page receives.
 */
export async function startConsoleEnvironment(creds: { email: string; password: string }): Promise<ConsoleEnvironment> {
  const closers: Array<() => Promise<unknown>> = [];
  const close = async () => {
    for (const c of closers.reverse()) await c().catch(() => undefined);
  };
  try {
    // Build the console before the app reads console/dist (npm start does the same, scripts/start.mjs).
    const { ensureConsole } = (await import(path.join(ROOT, 'scripts/ensure-console.mjs'))) as {
      ensureConsole: () => boolean;
    };
    if (!ensureConsole()) throw new Error('console build failed');
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const launching = launchChromium();
    closers.push(async () => (await launching).close());
    const built = await setupApp({ PUBLIC_URL: base, PORT: String(port) });
    await built.app.listen({ port, host: '127.0.0.1' });
    const [upstream, oauth, openapi, mcp] = await Promise.all([
      startJsonApi(),
      startOAuthUpstream({ redirectUri: `${base}/connections/callback` }),
      startOpenApiServer(),
      startMcpServer(),
    ]);
    for (const u of [upstream, oauth, openapi, mcp]) closers.push(() => u.close());
    const { body: user } = await call(
      built.app,
      { method: 'POST', url: '/auth/register', payload: { ...creds, name: 'Console User' } },
      201,
    );
    const admin = await createUser(built.app, { roles: ['admin'] });
    const userPath = `/admin/users/${encodeURIComponent(user.user_id.split('|').pop())}/roles`;
    fs.mkdirSync(SHOTS, { recursive: true });
    // A context of its own: a second tab of the same session opens in it later.
    const context = await (await launching).newContext({ viewport: { width: 1280, height: 900 } });
    let consoleErrors: string[] = [];
    // Every page of the context (a second tab opens later), from its first load on.
    context.on('console', (m) => m.type() === 'error' && consoleErrors.push(`${m.text()} @ ${m.location().url}`));
    context.on('weberror', (e) => consoleErrors.push(`uncaught: ${e.error().message} @ ${e.page()?.url() ?? ''}`));
    let expected: RegExp[] = [];
    const expectConsoleErrors = (...patterns: RegExp[]) => void expected.push(...patterns);
    const unexpectedConsoleErrors = () => {
      const unexpected = consoleErrors.filter((e) => !expected.some((p) => p.test(e)));
      [consoleErrors, expected] = [[], []];
      return unexpected;
    };
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    if (process.env.CONSOLE_DEBUG)
      page.on('response', (r) => r.status() >= 400 && console.log('RESP', r.request().method(), r.url(), r.status()));
    const setRoles = (roles: string[]) =>
      call(built.app, { method: 'PUT', url: userPath, headers: admin.headers, payload: { roles } }, 200);
    return {
      base,
      built,
      page,
      upstream,
      openapi,
      mcp,
      oauth,
      setRoles,
      expectConsoleErrors,
      unexpectedConsoleErrors,
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

/**
 * Register, in the calling `describe`, the check after each test of a console e2e file: a failed
 * test leaves a full-page screenshot `test-results/console-failed-<test name>.png`, and every test
 * fails on errors in the browser console it did not declare (`expectConsoleErrors`).
 */
export function checkConsoleAfterEach(env: () => ConsoleEnvironment | undefined): void {
  afterEach(async (ctx) => {
    const page = env()?.page;
    if (ctx.task.result?.state === 'fail' && page)
      await page
        .screenshot({
          path: path.join(SHOTS, `console-failed-${ctx.task.name.slice(0, 40).replace(/\W+/g, '-')}.png`),
          fullPage: true,
        })
        .catch(() => undefined);
    expect(env()?.unexpectedConsoleErrors() ?? [], 'errors in the browser console').toEqual([]);
  });
}
