/**
 * Agent identities end to end over a real socket (127.0.0.1:0): create → token (Basic and post,
 * form and JSON) → memory CRUD with ETags → grant → cross-agent read/write → revoke → refused;
 * rotation with and without grace; deletion kills tokens.
 */
import type { AddressInfo } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { setupApp } from '../helpers/app.js';

const { app } = await setupApp();
let base = '';

beforeAll(async () => {
  await app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
});

interface Answer {
  status: number;
  headers: Headers;
  body: any;
}

async function http(
  method: string,
  path: string,
  opts: { headers?: Record<string, string>; json?: unknown; form?: Record<string, string> } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...opts.headers };
  let body: string | undefined;
  if (opts.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(opts.json);
  } else if (opts.form) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(opts.form).toString();
  }
  const res = await fetch(base + path, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    /* not JSON */
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

async function expectStatus(
  status: number,
  method: string,
  path: string,
  opts: Parameters<typeof http>[2] = {},
): Promise<Answer> {
  const a = await http(method, path, opts);
  if (a.status !== status)
    throw new Error(`${method} ${path}: expected ${status}, got ${a.status}: ${JSON.stringify(a.body)}`);
  return a;
}

const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

async function user(): Promise<Record<string, string>> {
  const { body } = await expectStatus(200, 'POST', '/auth/test', { json: {} });
  return bearer(body.access_token);
}

describe('agents over HTTP — the whole lifecycle', () => {
  it('create → tokens → memory with ETags → grant → cross-agent → revoke → rotate → delete', async () => {
    const alice = await user();
    const bob = await user();
    const { body: a } = await expectStatus(201, 'POST', '/v2/agents', { headers: alice, json: { name: 'planner' } });
    const { body: b } = await expectStatus(201, 'POST', '/v2/agents', { headers: bob, json: { name: 'helper' } });

    // Four ways to ask for a token.
    const ways: Array<Parameters<typeof http>[2]> = [
      { headers: { authorization: basic(a.client_id, a.client_secret) }, form: { grant_type: 'client_credentials' } },
      { form: { grant_type: 'client_credentials', client_id: a.client_id, client_secret: a.client_secret } },
      { headers: { authorization: basic(a.client_id, a.client_secret) }, json: { grant_type: 'client_credentials' } },
      { json: { grant_type: 'client_credentials', client_id: a.client_id, client_secret: a.client_secret } },
    ];
    const tokens: string[] = [];
    for (const w of ways) {
      const res = await expectStatus(200, 'POST', '/auth/agent/token', w);
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(res.body.token_type).toBe('Bearer');
      tokens.push(res.body.access_token);
    }
    const ta = bearer(tokens[0]);
    for (const t of tokens) await expectStatus(200, 'GET', '/v2/memory', { headers: bearer(t) });
    const { body: bt } = await expectStatus(200, 'POST', '/auth/agent/token', {
      form: { grant_type: 'client_credentials', client_id: b.client_id, client_secret: b.client_secret },
    });
    const tb = bearer(bt.access_token);

    // Memory CRUD with ETags.
    let r = await expectStatus(201, 'PUT', '/v2/memory/shared%2Fplan', { headers: ta, json: { value: { step: 1 } } });
    expect(r.headers.get('etag')).toBe('"1"');
    r = await expectStatus(200, 'PUT', '/v2/memory/shared%2Fplan', {
      headers: { ...ta, 'if-match': '"1"' },
      json: { value: { step: 2 } },
    });
    expect(r.headers.get('etag')).toBe('"2"');
    await expectStatus(412, 'PUT', '/v2/memory/shared%2Fplan', {
      headers: { ...ta, 'if-match': '"1"' },
      json: { value: { step: 3 } },
    });
    r = await expectStatus(200, 'GET', '/v2/memory/shared%2Fplan', { headers: ta });
    expect(r.body).toMatchObject({ key: 'shared/plan', value: { step: 2 }, version: 2 });
    await expectStatus(304, 'GET', '/v2/memory/shared%2Fplan', { headers: { ...ta, 'if-none-match': '"2"' } });
    await expectStatus(201, 'PUT', '/v2/memory/private', { headers: ta, json: { value: 'mine' } });
    await expectStatus(412, 'PUT', '/v2/memory/private', {
      headers: { ...ta, 'if-none-match': '*' },
      json: { value: 'again' },
    });
    await expectStatus(204, 'DELETE', '/v2/memory/private', { headers: { ...ta, 'if-match': '"1"' } });
    await expectStatus(404, 'GET', '/v2/memory/private', { headers: ta });
    await expectStatus(201, 'PUT', '/v2/memory/private', { headers: ta, json: { value: 'mine' } });

    // Without a grant Bob's agent is refused; with one it reads and writes under the prefix.
    r = await expectStatus(403, 'GET', `/v2/agents/${a.id}/memory`, { headers: tb });
    expect(r.body.code).toBe('permission_required');
    const { body: grant } = await expectStatus(201, 'POST', `/v2/agents/${a.id}/permissions`, {
      headers: alice,
      json: { grantee_agent_id: b.id, access: 'write', key_prefix: 'shared/' },
    });
    r = await expectStatus(200, 'GET', `/v2/agents/${a.id}/memory`, { headers: tb });
    expect(r.body.data.map((e: { key: string }) => e.key)).toEqual(['shared/plan']);
    await expectStatus(201, 'PUT', `/v2/agents/${a.id}/memory/shared%2Ffrom-bob`, {
      headers: tb,
      json: { value: 'hello' },
    });
    await expectStatus(403, 'PUT', `/v2/agents/${a.id}/memory/private`, { headers: tb, json: { value: 'overwrite' } });
    r = await expectStatus(200, 'GET', '/v2/memory/shared%2Ffrom-bob', { headers: ta });
    expect(r.body.value).toBe('hello');
    r = await expectStatus(200, 'GET', `/v2/agents/${b.id}/grants`, { headers: bob });
    expect(r.body.data.map((g: { id: string }) => g.id)).toEqual([grant.id]);

    // Revoke: refused at once. The owner sees every access in the audit.
    await expectStatus(204, 'DELETE', `/v2/agents/${a.id}/permissions/${grant.id}`, { headers: alice });
    await expectStatus(403, 'GET', `/v2/agents/${a.id}/memory`, { headers: tb });
    await expectStatus(403, 'PUT', `/v2/agents/${a.id}/memory/shared%2Ffrom-bob`, {
      headers: tb,
      json: { value: 'late' },
    });
    r = await expectStatus(200, 'GET', `/v2/agents/${a.id}/memory/audit`, { headers: alice });
    expect(r.body.data.map((e: { action: string; outcome: string }) => `${e.action}:${e.outcome}`)).toEqual([
      'write:denied',
      'read:denied',
      'write:denied',
      'write:allowed',
      'read:allowed',
      'read:denied',
    ]);
    expect(r.body.data.every((e: { actor_agent_id: string }) => e.actor_agent_id === b.id)).toBe(true);

    // Another account sees none of it.
    for (const [m, p] of [
      ['GET', `/v2/agents/${a.id}`],
      ['GET', `/v2/agents/${a.id}/memory`],
      ['GET', `/v2/agents/${a.id}/memory/audit`],
      ['GET', `/v2/agents/${a.id}/permissions`],
    ]) {
      await expectStatus(404, m, p, { headers: bob });
    }

    // Rotation with grace: old and new both work; without grace: only the newest.
    const { body: r1 } = await expectStatus(200, 'POST', `/v2/agents/${a.id}/rotate-secret`, {
      headers: alice,
      json: { grace_period_seconds: 600 },
    });
    await expectStatus(200, 'GET', '/v2/memory', { headers: ta });
    await expectStatus(200, 'POST', '/auth/agent/token', {
      form: { grant_type: 'client_credentials', client_id: a.client_id, client_secret: a.client_secret },
    });
    const { body: r2 } = await expectStatus(200, 'POST', `/v2/agents/${a.id}/rotate-secret`, { headers: alice });
    r = await expectStatus(401, 'GET', '/v2/memory', { headers: ta });
    expect(r.body.code).toBe('invalid_token');
    for (const secret of [a.client_secret, r1.client_secret]) {
      r = await expectStatus(401, 'POST', '/auth/agent/token', {
        headers: { authorization: basic(a.client_id, secret) },
        form: { grant_type: 'client_credentials' },
      });
      expect(r.body.error).toBe('invalid_client');
      expect(r.headers.get('www-authenticate')).toMatch(/^Basic /);
    }
    const { body: t2 } = await expectStatus(200, 'POST', '/auth/agent/token', {
      headers: { authorization: basic(a.client_id, r2.client_secret) },
      form: { grant_type: 'client_credentials' },
    });
    await expectStatus(200, 'GET', '/v2/memory/shared%2Fplan', { headers: bearer(t2.access_token) });

    // Delete: tokens stop, the token endpoint refuses.
    await expectStatus(204, 'DELETE', `/v2/agents/${a.id}`, { headers: alice });
    r = await expectStatus(401, 'GET', '/v2/memory', { headers: bearer(t2.access_token) });
    expect(r.body.code).toBe('invalid_token');
    r = await expectStatus(401, 'POST', '/auth/agent/token', {
      json: { grant_type: 'client_credentials', client_id: a.client_id, client_secret: r2.client_secret },
    });
    expect(r.body).toEqual({ error: 'invalid_client', error_description: expect.any(String) });
  });

  it('answers RFC 6749 §5.2 errors over the wire', async () => {
    let r = await expectStatus(400, 'POST', '/auth/agent/token', {
      form: { grant_type: 'password', username: 'x', password: 'y' },
    });
    expect(r.body.error).toBe('unsupported_grant_type');
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    r = await expectStatus(401, 'POST', '/auth/agent/token', { form: { grant_type: 'client_credentials' } });
    expect(r.body.error).toBe('invalid_client');
    r = await expectStatus(400, 'POST', '/auth/agent/token', { form: {} });
    expect(r.body.error).toBe('invalid_request');
  });
});
