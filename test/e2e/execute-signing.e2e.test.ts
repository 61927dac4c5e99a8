/**
 * Upstream signing from the upstream's side: the test upstream verifies X-Agent-Platform-Signature
 * with the signing secret returned at registration, using the function of docs/upstream-signing.md.
 */
import { describe, expect, it } from 'vitest';
import { createUser, setupApp } from '../helpers/app.js';
import { execute, expectHttp, listen, newSession, publish, registerService, subscribe } from '../helpers/exec.js';
import { startToolUpstream, verifyAgentPlatform } from '../helpers/tool-upstream.js';

const { app, ctx } = await setupApp();
const base = await listen(app);

const tools = [
  {
    name: 'get_item',
    description: 'get',
    method: 'GET',
    path: '/items/{id}',
    input_schema: { type: 'object', properties: { id: { type: 'string' }, q: { type: 'string' } }, required: ['id'] },
  },
  {
    name: 'create_item',
    description: 'create',
    method: 'POST',
    path: '/items',
    input_schema: { type: 'object', properties: { name: { type: 'string' } } },
  },
];

describe('execute — upstream signing', () => {
  it('signs every request so the upstream can verify it with its signing secret', async () => {
    const upstream = await startToolUpstream();
    const owner = await createUser(app);
    const user = await createUser(app);
    const svc = await registerService(base, owner, {
      name: `signed-${Date.now().toString(36)}`,
      description: 'signed',
      base_url: upstream.url,
      auth: { type: 'query', name: 'key', secret: 's3cr3t' },
      tools,
    });
    expect(svc.signingSecret).toBeTruthy();
    upstream.signingSecret = svc.signingSecret;
    await publish(ctx, svc.id);
    await subscribe(base, user, svc.id);
    const sid = await newSession(base, user.headers);

    const a = await execute(base, user.headers, sid, {
      service: svc.name,
      tool: 'get_item',
      arguments: { id: 'x/1', q: 'ü ok' },
    });
    const b = await execute(base, user.headers, sid, {
      service: svc.name,
      tool: 'create_item',
      arguments: { name: 'ünïcødé' },
    });
    expect([a.status, b.status]).toEqual([200, 200]);
    const [ra, rb] = upstream.seen.slice(-2);
    expect(ra.url).toContain('key=s3cr3t');
    expect(ra.signatureValid).toBe(true);
    expect(rb.signatureValid).toBe(true);
    expect(rb.body.length).toBeGreaterThan(0);

    // The check is real: another secret, a changed body, a changed path or an old timestamp fail.
    expect(verifyAgentPlatform(rb, rb.body, 'whsec_wrong')).toBe(false);
    expect(verifyAgentPlatform(rb, Buffer.from('{"name":"other"}'), svc.signingSecret)).toBe(false);
    expect(verifyAgentPlatform({ ...ra, url: ra.url.replace('x%2F1', 'x%2F2') }, ra.body, svc.signingSecret)).toBe(
      false,
    );
    expect(verifyAgentPlatform(ra, ra.body, svc.signingSecret, -1)).toBe(false);

    // The user pseudonym is stable per user and service, and differs between users.
    await execute(base, user.headers, sid, { service: svc.name, tool: 'get_item', arguments: { id: '2' } });
    const other = await createUser(app);
    await subscribe(base, other, svc.id);
    await execute(base, other.headers, await newSession(base, other.headers), {
      service: svc.name,
      tool: 'get_item',
      arguments: { id: '3' },
    });
    const [r3, r4] = upstream.seen.slice(-2);
    expect(r3.headers['x-agent-platform-user']).toBe(ra.headers['x-agent-platform-user']);
    expect(r4.headers['x-agent-platform-user']).not.toBe(ra.headers['x-agent-platform-user']);
    expect(new Set(upstream.seen.slice(-4).map((r) => r.headers['x-agent-platform-request-id'])).size).toBe(4);

    // Rotation: the new secret verifies, the old one no longer does.
    const { body: rotated } = await expectHttp(base, 'POST', `/owner/services/${svc.id}/signing-secret`, 200, {
      headers: owner.headers,
    });
    upstream.signingSecret = rotated.signing_secret;
    await execute(base, user.headers, sid, { service: svc.name, tool: 'get_item', arguments: { id: '4' } });
    const r5 = upstream.seen.at(-1)!;
    expect(r5.signatureValid).toBe(true);
    expect(verifyAgentPlatform(r5, r5.body, svc.signingSecret)).toBe(false);
  });

  it('gives the same user different pseudonyms at different services', async () => {
    const upstream = await startToolUpstream();
    const owner = await createUser(app);
    const s1 = await registerService(base, owner, {
      name: `ps1-${Date.now().toString(36)}`,
      description: 'a',
      base_url: upstream.url,
      tools,
    });
    const s2 = await registerService(base, owner, {
      name: `ps2-${Date.now().toString(36)}`,
      description: 'b',
      base_url: upstream.url,
      tools,
    });
    const sid = await newSession(base, owner.headers);
    await execute(base, owner.headers, sid, { service: s1.name, tool: 'get_item', arguments: { id: '1' } });
    await execute(base, owner.headers, sid, { service: s2.name, tool: 'get_item', arguments: { id: '1' } });
    const [a, b] = upstream.seen.slice(-2);
    expect(a.headers['x-agent-platform-user']).toMatch(/^psu_[0-9a-f]{32}$/);
    expect(a.headers['x-agent-platform-user']).not.toBe(b.headers['x-agent-platform-user']);
  });
});
