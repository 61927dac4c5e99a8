/**
 * `oauth2` upstream auth in the manifest (issue 15 §1): validation, the client secret stored
 * encrypted and never returned, and pre-filling from an OpenAPI document's securitySchemes.
 */
import { randomBytes } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { services } from '../../../src/db/schema/index.js';
import { call, createUser, setupApp } from '../../helpers/app.js';

const { app, ctx } = await setupApp();
const owner = await createUser(app);
const SECRET = `cs-${randomBytes(12).toString('hex')}`;
const tools = [{ name: 'me', description: 'Me', method: 'GET', path: '/me', input_schema: { type: 'object' } }];
const name = () => `svc-${randomBytes(4).toString('hex')}`;
const register = (payload: Record<string, unknown>, status: number) =>
  call(app, { method: 'POST', url: '/owner/services', headers: owner.headers, payload }, status).then((r) => r.body);

function openapiDoc(security: Record<string, unknown>) {
  return {
    openapi: '3.1.0',
    info: { title: 'Mail', version: '1.0.0' },
    servers: [{ url: 'https://mail.example.com/api' }],
    components: { securitySchemes: security },
    paths: {
      '/messages': {
        get: { operationId: 'listMessages', summary: 'List messages', responses: { '200': { description: 'ok' } } },
      },
    },
  };
}

describe('oauth2 auth in the manifest', () => {
  it('stores the settings, encrypts the client secret and never shows it', async () => {
    const auth = {
      type: 'oauth2',
      authorization_url: 'https://id.example.com/authorize',
      token_url: 'https://id.example.com/token',
      revocation_url: 'https://id.example.com/revoke',
      scopes: ['mail.read', 'mail.read'],
      client_id: 'cid',
      client_secret: SECRET,
      audience: 'https://mail.example.com',
    };
    const created = await register(
      { name: name(), description: 'Mail', base_url: 'https://mail.example.com', auth, tools },
      201,
    );
    expect(created.auth).toEqual({
      type: 'oauth2',
      name: null,
      oauth2: {
        authorization_url: auth.authorization_url,
        token_url: auth.token_url,
        revocation_url: auth.revocation_url,
        scopes: ['mail.read'],
        client_id: 'cid',
        token_endpoint_auth_method: 'client_secret_basic',
        pkce: true,
        token_placement: 'header',
        audience: 'https://mail.example.com',
        has_client_secret: true,
      },
    });
    const { body: shown } = await call(
      app,
      { method: 'GET', url: `/owner/services/${created.id}`, headers: owner.headers },
      200,
    );
    expect(JSON.stringify(shown)).not.toContain(SECRET);
    expect(JSON.stringify(created)).not.toContain(SECRET);
    const [row] = await ctx.db.select().from(services).where(eq(services.id, created.id));
    expect(row.authSecret).toMatch(/^v1\./);
    expect(row.authSecret).not.toContain(SECRET);

    // An update without client_secret keeps the stored one; changing the client id works.
    const { body: updated } = await call(
      app,
      {
        method: 'PATCH',
        url: `/owner/services/${created.id}`,
        headers: owner.headers,
        payload: { auth: { type: 'oauth2', issuer: 'https://id.example.com', client_id: 'cid2' } },
      },
      200,
    );
    expect(updated.auth.oauth2).toMatchObject({
      issuer: 'https://id.example.com',
      client_id: 'cid2',
      has_client_secret: true,
    });
    const [after] = await ctx.db.select().from(services).where(eq(services.id, created.id));
    expect(after.authSecret).toBe(row.authSecret);
  });

  it('pre-fills endpoints and scopes from an OpenAPI authorizationCode flow', async () => {
    const doc = openapiDoc({
      apiKey: { type: 'apiKey', in: 'header', name: 'X-Key' },
      oauth: {
        type: 'oauth2',
        flows: {
          authorizationCode: {
            authorizationUrl: 'https://id.example.com/oauth/authorize',
            tokenUrl: 'https://id.example.com/oauth/token',
            scopes: { 'mail.read': 'Read mail', 'mail.send': 'Send mail' },
          },
        },
      },
    });
    const created = await register(
      { name: name(), openapi: doc, auth: { type: 'oauth2', client_id: 'cid', client_secret: SECRET } },
      201,
    );
    expect(created.auth.oauth2).toMatchObject({
      authorization_url: 'https://id.example.com/oauth/authorize',
      token_url: 'https://id.example.com/oauth/token',
      scopes: ['mail.read', 'mail.send'],
      client_id: 'cid',
    });
    // The owner's scopes win over the document's.
    const narrowed = await register(
      {
        name: name(),
        openapi: doc,
        auth: { type: 'oauth2', client_id: 'cid', client_secret: SECRET, scopes: ['mail.read'] },
      },
      201,
    );
    expect(narrowed.auth.oauth2.scopes).toEqual(['mail.read']);
    // Without auth, the registration says what to add.
    const bare = await register({ name: name(), openapi: doc }, 201);
    expect(bare.warnings.map((w: { message: string }) => w.message).join(' ')).toMatch(/oauth2.*client_id/);
  });

  it('pre-fills the issuer from an openIdConnect scheme', async () => {
    const doc = openapiDoc({
      oidc: { type: 'openIdConnect', openIdConnectUrl: 'https://id.example.com/.well-known/openid-configuration' },
    });
    const created = await register(
      { name: name(), openapi: doc, auth: { type: 'oauth2', client_id: 'cid', client_secret: SECRET } },
      201,
    );
    expect(created.auth.oauth2).toMatchObject({ issuer: 'https://id.example.com', scopes: ['openid'] });
  });

  it('lists every problem of a bad oauth2 block with pointers', async () => {
    const base = { name: name(), description: 'x', base_url: 'https://mail.example.com', tools };
    const p1 = await register(
      {
        ...base,
        auth: { type: 'oauth2', authorization_url: 'http://id.example.com/a', token_url: 'not a url', secret: 's' },
      },
      400,
    );
    expect(p1.errors.map((e: { pointer: string }) => e.pointer).sort()).toEqual([
      '/auth/authorization_url',
      '/auth/client_id',
      '/auth/secret',
      '/auth/token_url',
    ]);
    const p0 = await register(
      { ...base, auth: { type: 'oauth2', issuer: 'https://id.example.com', client_id: 'c', scopes: ['bad scope'] } },
      400,
    );
    expect(p0.errors.map((e: { pointer: string }) => e.pointer)).toEqual(['/auth/scopes/0']);
    const p2 = await register({ ...base, auth: { type: 'oauth2', client_id: 'c', client_secret: 's' } }, 400);
    expect(p2.errors.map((e: { pointer: string }) => e.pointer)).toEqual([
      '/auth/authorization_url',
      '/auth/token_url',
    ]);
    const p3 = await register({ ...base, auth: { type: 'bearer', secret: 's', client_id: 'c' } }, 400);
    expect(p3.errors).toEqual([{ in: 'body', pointer: '/auth/client_id', message: 'is only for auth type oauth2' }]);
    const p4 = await register(
      {
        ...base,
        auth: {
          type: 'oauth2',
          issuer: 'https://id.example.com',
          client_id: 'c',
          token_endpoint_auth_method: 'client_secret_post',
        },
      },
      400,
    );
    expect(p4.errors.map((e: { pointer: string }) => e.pointer)).toEqual(['/auth/client_secret']);
  });
});
