/**
 * Security round 2, small holes: test accounts only in reserved domains and never in production;
 * profile pictures are web addresses; every answer says `nosniff`; another account's unpublished
 * service does not exist for an agent subscription (404 as an unknown name, not 403). The last
 * admin and the SSRF refusal status have their own files (admin-guard, logs-redaction).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { users } from '../../src/db/schema/index.js';
import { setServiceStatus } from '../../src/modules/registry/service.js';
import { createAgent, registerToolService } from '../helpers/agents.js';
import { call, createUser, setupApp } from '../helpers/app.js';
import { ROOT } from '../helpers/server-process.js';

const { app, ctx } = await setupApp();
const hex = () => randomBytes(5).toString('hex');

describe('POST /auth/test: reserved domains only', () => {
  it('an address a person could own is refused (400 at /email) and stays free for its owner to register', async () => {
    for (const domain of ['gmail.com', 'example.co', 'test.com', 'corp.example.com.evil.net', 'localhost.net']) {
      const email = `victim-${hex()}@${domain}`;
      const { body } = await call(app, { method: 'POST', url: '/auth/test', payload: { email } }, 400);
      expect(body).toMatchObject({ code: 'validation_failed', errors: [{ in: 'body', pointer: '/email' }] });
      expect(body.detail).toMatch(/reserved/);
      // Before the change the test account took the address and this answered 409.
      await call(app, { method: 'POST', url: '/auth/register', payload: { email, password: 'the real owner 1' } }, 201);
    }
  });

  it('a test account that squatted a real address before gives it back to the owner who registers', async () => {
    const email = `owner-${hex()}@mail-provider.com`;
    // As POST /auth/test made it before test accounts were confined to reserved domains.
    const squatter = await createUser(app);
    await ctx.db.update(users).set({ email }).where(eq(users.subject, squatter.subject));
    await call(app, { method: 'POST', url: '/auth/register', payload: { email, password: 'the real owner 2' } }, 201);
    const login = (
      await call(app, { method: 'POST', url: '/auth/login', payload: { email, password: 'the real owner 2' } }, 200)
    ).body;
    const owner = (
      await call(
        app,
        { method: 'GET', url: '/v1/auth/me', headers: { authorization: `Bearer ${login.access_token}` } },
        200,
      )
    ).body;
    expect(owner).toMatchObject({ email, test: false });
    expect(owner.user_id).not.toBe(squatter.subject);
    const [row] = await ctx.db.select({ email: users.email }).from(users).where(eq(users.subject, squatter.subject));
    expect(row.email).toBeNull();
    // A real account's address is never released.
    await call(app, { method: 'POST', url: '/auth/register', payload: { email, password: 'an impostor 123' } }, 409);
  });

  it('RFC 2606 domains and their subdomains are test domains', async () => {
    for (const domain of [
      'example.test',
      'a.b.test',
      'x.example',
      'no.invalid',
      'dev.localhost',
      'example.com',
      'mail.example.org',
      'EXAMPLE.NET',
    ]) {
      const email = `t-${hex()}@${domain}`;
      const { body } = await call(app, { method: 'POST', url: '/auth/test', payload: { email } }, 200);
      expect(body.token_type).toBe('Bearer');
    }
  });

  it('NODE_ENV=production refuses test roles and test tokens at start, naming the variable', async () => {
    expect(() => loadConfig({ NODE_ENV: 'production', AUTH_TEST_TOKENS: 'on', AUTH_TEST_ROLES: 'on' })).toThrow(
      /AUTH_TEST_ROLES must be off with NODE_ENV=production/,
    );
    expect(() => loadConfig({ NODE_ENV: 'production', AUTH_TEST_TOKENS: 'on' })).toThrow(
      /AUTH_TEST_TOKENS must be off with NODE_ENV=production/,
    );
    expect(loadConfig({ NODE_ENV: 'production' }).auth.testTokens).toBe(false);
    // The real entry point: exit 1 before anything listens.
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH!,
        HOME: process.env.HOME ?? '/tmp',
        NODE_ENV: 'production',
        AUTH_TEST_TOKENS: 'on',
        AUTH_TEST_ROLES: 'on',
        DATABASE_IN_MEMORY: 'on',
        PORT: '0',
        HOST: '127.0.0.1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code).toBe(1);
    expect(out).toMatch(/AUTH_TEST_ROLES/);
    expect(out).not.toMatch(/agent platform ready/);
  }, 120_000);
});

describe('profile picture: http and https only', () => {
  it('javascript:, data:, vbscript:, file: and relative values → 400; http(s) is stored', async () => {
    const u = await createUser(app);
    const patch = (picture: string, status: number) =>
      call(app, { method: 'PUT', url: '/v1/auth/profile', headers: u.headers, payload: { picture } }, status);
    for (const bad of [
      'javascript:alert(document.cookie)',
      'JavaScript://%0aalert(1)',
      'data:text/html,<script>alert(1)</script>',
      'vbscript:msgbox(1)',
      'file:///etc/passwd',
      '//evil.example/x.png',
    ]) {
      const { body } = await patch(bad, 400);
      expect(body.code).toBe('validation_failed');
      expect(body.errors[0].pointer).toBe('/picture');
    }
    expect((await patch('https://cdn.example.com/me.png', 200)).body.picture).toBe('https://cdn.example.com/me.png');
    expect((await patch('HTTP://cdn.example.com/me.png', 200)).body.picture).toBe('HTTP://cdn.example.com/me.png');
  });

  it('a javascript: picture stored earlier is never shown', async () => {
    const u = await createUser(app);
    await ctx.db.update(users).set({ picture: 'javascript:alert(1)' }).where(eq(users.subject, u.subject));
    const { body } = await call(app, { method: 'GET', url: '/v1/auth/me', headers: u.headers }, 200);
    expect(body.picture).toBeNull();
  });
});

describe('X-Content-Type-Options: nosniff on every answer', () => {
  it('success, problem, unknown route, preflight, OpenAPI, OIDC discovery', async () => {
    const u = await createUser(app);
    const answers = await Promise.all([
      app.inject({ method: 'GET', url: '/v1/auth/me', headers: u.headers }),
      app.inject({ method: 'GET', url: '/v1/auth/me' }),
      app.inject({ method: 'GET', url: '/no/such/route' }),
      app.inject({
        method: 'POST',
        url: '/auth/login',
        payload: '{"bad json',
        headers: { 'content-type': 'application/json' },
      }),
      app.inject({
        method: 'OPTIONS',
        url: '/v1/auth/me',
        headers: { origin: 'http://localhost:5173', 'access-control-request-method': 'GET' },
      }),
      app.inject({ method: 'GET', url: '/docs/json' }),
      app.inject({ method: 'GET', url: '/idp/.well-known/openid-configuration' }),
    ]);
    expect(answers.map((r) => r.statusCode)).toEqual([200, 401, 404, 400, expect.any(Number), 200, 200]);
    for (const r of answers)
      expect(r.headers['x-content-type-options'], `${r.statusCode} ${r.body.slice(0, 80)}`).toBe('nosniff');
  });
});

describe('agent tool subscription: no existence oracle', () => {
  it("another account's draft service answers 404 like an unknown name; a published one 403 not_subscribed", async () => {
    const publisher = await createUser(app);
    const draft = await registerToolService(app, publisher);
    const u = await createUser(app);
    const agent = await createAgent(app, u);
    const subscribe = (service: string, status: number) =>
      call(
        app,
        { method: 'POST', url: `/v2/agents/${agent.id}/tools/subscribe`, headers: u.headers, payload: { service } },
        status,
      );
    const unknown = (await subscribe(`no-such-${hex()}`, 404)).body;
    for (const ref of [draft.name, draft.id]) {
      const hidden = (await subscribe(ref, 404)).body;
      expect(hidden.code).toBe(unknown.code);
      expect(hidden.detail).toBe(unknown.detail);
      expect(hidden.detail).not.toContain(draft.name);
    }
    await setServiceStatus(ctx, draft.id, 'published');
    expect((await subscribe(draft.name, 403)).body.code).toBe('not_subscribed');
    // Its owner may subscribe an agent to it in any status.
    const own = await createAgent(app, publisher);
    await call(
      app,
      {
        method: 'POST',
        url: `/v2/agents/${own.id}/tools/subscribe`,
        headers: publisher.headers,
        payload: { service: draft.name },
      },
      201,
    );
  });
});
