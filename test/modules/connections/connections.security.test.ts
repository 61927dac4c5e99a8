/**
 * Connected accounts (issue 15), security: other accounts' connections are not found, agents and
 * anonymous callers cannot manage connections, the callback is bound to the user who started the
 * flow and to the browser that took it, and no secret (client secret, code, state, tokens) appears in an
 * answer or a log line.
 */
import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { call, createUser } from '../../helpers/app.js';
import { agentToken, createAgent } from '../../helpers/agents.js';
import { connectionBrowser } from '../../helpers/oauth-upstream.js';
import {
  RETURN_TO,
  connect,
  executeNotes,
  newSession,
  registerNotesService,
  setExpiry,
  setupConnections,
  storedConnection,
  takeInBrowser,
  upstreamUrlFor,
} from './fixture.js';

/**
 * Everything pino writes to fd 1 while this file runs (LOG_LEVEL trace), kept here instead of
 * printed; other writes pass through.
 */
const logged: string[] = [];
const write = fs.write;
const writeSync = fs.writeSync;
type AnyFn = (...a: unknown[]) => unknown;
const isLog = (fd: unknown, data: unknown) => fd === 1 && String(data).startsWith('{"level"');
(fs as { write: AnyFn }).write = (fd: unknown, data: unknown, ...rest: unknown[]) => {
  if (!isLog(fd, data)) return (write as unknown as AnyFn).call(fs, fd, data, ...rest);
  logged.push(String(data));
  const done = rest.at(-1) as (err: null, n: number) => void;
  process.nextTick(() => done(null, Buffer.byteLength(String(data))));
};
(fs as { writeSync: AnyFn }).writeSync = (fd: unknown, data: unknown, ...rest: unknown[]) => {
  if (!isLog(fd, data)) return (writeSync as unknown as AnyFn).call(fs, fd, data, ...rest);
  logged.push(String(data));
  return Buffer.byteLength(String(data));
};
afterAll(() => {
  fs.write = write;
  fs.writeSync = writeSync;
});

const f = await setupConnections({ LOG_LEVEL: 'trace' });
const account = () => `u-${randomBytes(4).toString('hex')}@notes.test`;

describe('connections: security', () => {
  it("another account's connection id answers 404 and is left alone", async () => {
    const [alice, mallory] = [await createUser(f.app), await createUser(f.app)];
    const svc = await registerNotesService(f, alice);
    const { started } = await connect(f, alice, svc.name, account());
    for (const method of ['GET', 'DELETE'] as const) {
      const { body } = await call(
        f.app,
        { method, url: `/connections/${started.connection_id}`, headers: mallory.headers },
        404,
      );
      expect(body.code).toBe('not_found');
    }
    const { body: list } = await call(f.app, { method: 'GET', url: '/connections', headers: mallory.headers }, 200);
    expect(list.data).toEqual([]);
    await call(f.app, { method: 'GET', url: `/connections/${started.connection_id}`, headers: alice.headers }, 200);
  });

  it("refuses another account's agent and draft service; agents and anonymous callers cannot manage connections", async () => {
    const [alice, mallory] = [await createUser(f.app), await createUser(f.app)];
    const svc = await registerNotesService(f, alice);
    const agent = await createAgent(f.app, alice);
    await call(
      f.app,
      {
        method: 'POST',
        url: '/connections',
        headers: mallory.headers,
        payload: { service: svc.name, agent_id: agent.id },
      },
      404,
    );
    const { body: draft } = await call(
      f.app,
      {
        method: 'POST',
        url: '/owner/services',
        headers: alice.headers,
        payload: {
          name: `draft-${randomBytes(3).toString('hex')}`,
          description: 'd',
          base_url: f.up.apiUrl,
          auth: { type: 'oauth2', issuer: f.up.issuer, client_id: 'c', client_secret: 's' },
          tools: [{ name: 't', description: 'd', method: 'GET', path: '/notes', input_schema: { type: 'object' } }],
        },
      },
      201,
    );
    await call(
      f.app,
      { method: 'POST', url: '/connections', headers: mallory.headers, payload: { service: draft.name } },
      404,
    );
    const { headers } = await agentToken(f.app, agent);
    await call(f.app, { method: 'GET', url: '/connections', headers }, 403);
    await call(f.app, { method: 'POST', url: '/connections', headers, payload: { service: svc.name } }, 403);
    await call(f.app, { method: 'GET', url: '/connections' }, 401);
    await call(f.app, { method: 'POST', url: '/connections', payload: { service: svc.name } }, 401);
  });

  it("only the browser that took the flow finishes it: another user's browser carrying it is refused (test/security/connections-callback has the attack)", async () => {
    const [alice, mallory] = [await createUser(f.app), await createUser(f.app)];
    const svc = await registerNotesService(f, alice);
    await call(
      f.app,
      {
        method: 'POST',
        url: '/subscriptions',
        headers: mallory.headers,
        payload: { service_id: svc.id, plan: 'free' },
      },
      201,
    );
    const { body: started } = await call(
      f.app,
      {
        method: 'POST',
        url: '/connections',
        headers: alice.headers,
        payload: { service: svc.name, return_to: RETURN_TO },
      },
      201,
    );
    // Mallory's browser (Mallory's token on every request) cannot take Alice's flow…
    const mallorys = connectionBrowser(f.app, f.up);
    expect((await takeInBrowser(f, mallorys, mallory, started.authorization_url)).status).toBe(404);
    // …nor finish it once Alice's browser took it.
    const upstreamUrl = await upstreamUrlFor(f, connectionBrowser(f.app, f.up), alice, started.authorization_url);
    const send = mallorys.request.bind(mallorys);
    mallorys.request = (method, url, opts = {}) =>
      send(method, url, { ...opts, headers: { ...opts.headers, ...mallory.headers } });
    await expect(mallorys.login(upstreamUrl, RETURN_TO, { email: account(), password: 'x' })).rejects.toThrow(
      /unexpected 403.*connection_not_bound/,
    );
    const { body: aliceList } = await call(f.app, { method: 'GET', url: '/connections', headers: alice.headers }, 200);
    expect(aliceList.data.map((c: { id: string; status: string }) => [c.id, c.status])).toEqual([
      [started.connection_id, 'pending'],
    ]);
    expect((await storedConnection(f, started.connection_id)).accessToken).toBeNull();
    const { body: malloryList } = await call(
      f.app,
      { method: 'GET', url: '/connections', headers: mallory.headers },
      200,
    );
    expect(malloryList.data).toEqual([]);
    const res = await executeNotes(f.app, mallory.headers, await newSession(f.app, mallory.headers), svc.name);
    expect(res.statusCode).toBe(409);
  });

  it('no secret appears in any answer or log line', async () => {
    const user = await createUser(f.app);
    const svc = await registerNotesService(f, user);
    const answers: string[] = [];
    const seen = (r: { body: unknown }) => answers.push(typeof r.body === 'string' ? r.body : JSON.stringify(r.body));
    seen(await call(f.app, { method: 'GET', url: `/owner/services/${svc.id}`, headers: user.headers }, 200));
    seen(
      await call(f.app, { method: 'GET', url: `/v1/marketplace/services/${svc.id}`, headers: user.headers }, 200).catch(
        () => ({ body: '' }),
      ),
    );
    const { started } = await connect(f, user, svc.name, account());
    const first = await storedConnection(f, started.connection_id);
    const session = await newSession(f.app, user.headers);
    seen(await executeNotes(f.app, user.headers, session, svc.name));
    await setExpiry(f, started.connection_id, 1000);
    seen(await executeNotes(f.app, user.headers, session, svc.name));
    const second = await storedConnection(f, started.connection_id);
    seen(await call(f.app, { method: 'GET', url: '/connections', headers: user.headers }, 200));
    seen(
      await call(f.app, { method: 'GET', url: `/connections/${started.connection_id}`, headers: user.headers }, 200),
    );
    seen(await call(f.app, { method: 'GET', url: `/v1/agents/${session}`, headers: user.headers }, 200));
    seen(
      await call(f.app, { method: 'DELETE', url: `/connections/${started.connection_id}`, headers: user.headers }, 200),
    );

    const secrets = [
      f.up.clientSecret,
      first.accessToken!,
      first.refreshToken!,
      second.accessToken!,
      second.refreshToken!,
    ];
    expect(second.accessToken).not.toBe(first.accessToken);
    const logs = logged.join('');
    expect(logs).toContain('connection token refreshed'); // the capture works
    expect(logs).toContain('/connections/callback?code=[redacted]&state=[redacted]');
    for (const s of secrets) {
      for (const a of answers) expect(a).not.toContain(s);
      expect(logs).not.toContain(s);
    }
    expect(logs).not.toMatch(/[?&]code=(?!\[redacted\])/);
  });
});
