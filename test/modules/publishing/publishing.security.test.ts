/** Domain verification and verification calls under the SSRF guard with ALLOW_LOOPBACK_UPSTREAMS off/on. */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { setTxtResolver, type TxtResolver } from '../../../src/modules/publishing/domain.js';
import { setUpstreamResolver, type HostResolver } from '../../../src/upstream/http.js';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { startJsonApi } from '../../helpers/upstreams.js';
import { registerService, verifyDomainByHttp, waitForRun, weatherManifest } from './helpers.js';

const api = await startJsonApi();
afterAll(async () => {
  await api.close();
});

describe('domain verification', async () => {
  const { app, ctx } = await setupApp();
  const owner = await createUser(app);
  let restoreTxt: TxtResolver | null = null;
  let restoreHost: HostResolver | null = null;
  afterEach(() => {
    if (restoreTxt) setTxtResolver(restoreTxt);
    if (restoreHost) setUpstreamResolver(ctx, restoreHost);
    restoreTxt = restoreHost = null;
  });

  it('fails while the file is missing or holds another token, then verifies', async () => {
    api.verificationToken = null;
    const svc = await registerService(app, owner, weatherManifest(api.url));
    const { body: first } = await call(
      app,
      { method: 'POST', url: `/v1/services/${svc.id}/verify-domain`, headers: owner.headers },
      200,
    );
    expect(first.status).toBe('pending');
    const { body: missing } = await call(
      app,
      { method: 'POST', url: `/v1/services/${svc.id}/verify-domain`, headers: owner.headers },
      200,
    );
    expect(missing).toMatchObject({ status: 'failed', verified_at: null });
    expect(missing.detail).toMatch(/HTTP file answered 404/);
    expect(missing.detail).toMatch(/DNS method not available/);
    api.verificationToken = 'apv_someone_else';
    const { body: wrong } = await call(
      app,
      { method: 'POST', url: `/v1/services/${svc.id}/verify-domain`, headers: owner.headers },
      200,
    );
    expect(wrong.detail).toMatch(/does not contain the token/);
    api.verificationToken = first.token;
    const { body: ok } = await call(
      app,
      { method: 'POST', url: `/v1/services/${svc.id}/verify-domain`, headers: owner.headers },
      200,
    );
    expect(ok.status).toBe('verified');
    // A different token per service: another service on the same host is not verified by it.
    const svc2 = await registerService(app, owner, weatherManifest(api.url));
    const { body: other } = await call(
      app,
      { method: 'POST', url: `/v1/services/${svc2.id}/verify-domain`, headers: owner.headers },
      200,
    );
    expect(other.token).not.toBe(first.token);
  });

  it('moving the service to another host drops the verification', async () => {
    const svc = await registerService(app, owner, weatherManifest(api.url));
    await verifyDomainByHttp(app, owner, svc.id, api);
    await call(
      app,
      {
        method: 'PATCH',
        url: `/owner/services/${svc.id}`,
        headers: owner.headers,
        payload: { base_url: `http://localhost:${api.port}` },
      },
      200,
    );
    const { body } = await call(app, { method: 'GET', url: `/owner/services/${svc.id}`, headers: owner.headers }, 200);
    expect(body.checklist.domain_verified.status).toBe('pending');
  });

  it('verifies by DNS TXT through the injectable resolver (no DNS traffic)', async () => {
    const seenNames: string[] = [];
    let token = '';
    restoreTxt = setTxtResolver(async (name) => {
      seenNames.push(name);
      return [['v=other'], [token.slice(0, 10), token.slice(10)]];
    });
    // The host name resolves (for the HTTP method) to loopback through the fake resolver too.
    const prevHost = setUpstreamResolver(ctx, async (host) =>
      host === 'api.example.test' ? [{ address: '127.0.0.1', family: 4 }] : prevHost(host),
    );
    restoreHost = prevHost;
    api.verificationToken = null;
    const svc = await registerService(app, owner, weatherManifest(`http://api.example.test:${api.port}`));
    const { body: first } = await call(
      app,
      { method: 'POST', url: `/v1/services/${svc.id}/verify-domain`, headers: owner.headers },
      200,
    );
    expect(first.methods[0].name).toBe('_agent-platform.api.example.test');
    token = first.token;
    const { body } = await call(
      app,
      { method: 'POST', url: `/v1/services/${svc.id}/verify-domain`, headers: owner.headers },
      200,
    );
    expect(body).toMatchObject({ status: 'verified', method: 'dns' });
    expect(seenNames).toEqual(['_agent-platform.api.example.test']);
  });
});

describe('with ALLOW_LOOPBACK_UPSTREAMS off', async () => {
  const { app, ctx } = await setupApp({ ALLOW_LOOPBACK_UPSTREAMS: 'off' });
  const owner = await createUser(app);
  let restoreHost: HostResolver | null = null;
  afterEach(() => {
    if (restoreHost) setUpstreamResolver(ctx, restoreHost);
    restoreHost = null;
  });

  it('does not count a loopback host as verified, and sends nothing to it', async () => {
    // A public-looking name (fake DNS) so that registration accepts the base URL; it resolves to loopback.
    const prev = setUpstreamResolver(ctx, async (host) =>
      host === 'sneaky.example.test' ? [{ address: '127.0.0.1', family: 4 }] : prev(host),
    );
    restoreHost = prev;
    let dnsCalls = 0;
    const prevTxt = setTxtResolver(async () => {
      dnsCalls++;
      return [];
    });
    try {
      expect(ctx.config.upstream.allowLoopback).toBe(false);
      const svc = await registerService(app, owner, weatherManifest(`http://sneaky.example.test:${api.port}`));
      const { body: first } = await call(
        app,
        { method: 'POST', url: `/v1/services/${svc.id}/verify-domain`, headers: owner.headers },
        200,
      );
      api.verificationToken = first.token;
      const before = api.seen.length;
      const { body } = await call(
        app,
        { method: 'POST', url: `/v1/services/${svc.id}/verify-domain`, headers: owner.headers },
        200,
      );
      expect(body.status).toBe('failed');
      expect(body.detail).toMatch(/loopback address/);
      expect(api.seen.length).toBe(before);
      expect(dnsCalls).toBe(1);

      // The publish run's test calls are refused the same way.
      await call(
        app,
        {
          method: 'POST',
          url: `/v1/services/${svc.id}/verification-config`,
          headers: owner.headers,
          payload: { tests: [{ tool: 'get_user', arguments: { id: '1' } }] },
        },
        200,
      );
      await call(app, { method: 'POST', url: `/v1/services/${svc.id}/publish`, headers: owner.headers }, 202);
      const done = await waitForRun(app, owner, svc.id);
      expect(done.status).toBe('rejected');
      expect(done.verification.tests[0].error).toMatch(/^upstream_blocked/);
      expect(api.seen.length).toBe(before);
    } finally {
      setTxtResolver(prevTxt);
    }
  });

  it('refuses literal loopback hosts before any check', async () => {
    const { body } = await call(
      app,
      { method: 'POST', url: '/owner/services', headers: owner.headers, payload: weatherManifest(api.url) },
      400,
    );
    expect(body.errors[0].message).toMatch(/loopback/);
  });
});
