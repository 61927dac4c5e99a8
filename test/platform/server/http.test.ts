/**
 * Platform HTTP behaviour: problem+json errors, request ids, health, readiness, metrics and the
 * OpenAPI document (every route described with request and response schemas).
 */
import SwaggerParser from '@apidevtools/swagger-parser';
import { describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../../helpers/app.js';

const { app } = await setupApp();

describe('errors', () => {
  it('answers an unknown route with 404 problem+json', async () => {
    const { body, res } = await call(app, { method: 'GET', url: '/no/such/route?x=1' }, 404);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(body).toMatchObject({ status: 404, code: 'not_found', title: 'Not found', instance: '/no/such/route' });
    expect(body.type).toMatch(/^https:\/\//);
    expect(body.request_id).toBe(res.headers['x-request-id']);
  });

  it('answers a wrong content type with 415 and an oversized body with 413', async () => {
    const { body } = await call(
      app,
      { method: 'POST', url: '/auth/login', headers: { 'content-type': 'application/xml' }, payload: '<a/>' },
      415,
    );
    expect(body.code).toBe('unsupported_media_type');
    const big = JSON.stringify({ email: 'a@b.c', password: 'x'.repeat(1024 * 1024 + 10) });
    const { body: tooBig } = await call(
      app,
      { method: 'POST', url: '/auth/login', headers: { 'content-type': 'application/json' }, payload: big },
      413,
    );
    expect(tooBig.code).toBe('payload_too_large');
  });

  it('answers an empty JSON body where one is required with 400', async () => {
    const { body } = await call(
      app,
      { method: 'POST', url: '/auth/register', headers: { 'content-type': 'application/json' }, payload: '' },
      400,
    );
    expect(body.code).toBe('validation_failed');
  });

  it('refuses U+0000 in bodies, query strings and path parameters with 400 (PostgreSQL text cannot hold it)', async () => {
    const u = await createUser(app);
    const { body: b } = await call(
      app,
      { method: 'POST', url: '/memory', headers: u.headers, payload: { content: 'a\u0000b' } },
      400,
    );
    expect(b).toMatchObject({
      code: 'validation_failed',
      errors: [{ in: 'body', pointer: '/content', message: 'must not contain U+0000' }],
    });
    const { body: k } = await call(
      app,
      { method: 'POST', url: '/v1/agents', headers: u.headers, payload: { metadata: { 'a/b\u0000': 1 } } },
      400,
    );
    expect(k.errors[0].pointer).toBe('/metadata/a~1b\u0000');
    const { body: q } = await call(app, { method: 'GET', url: '/memory/search?q=a%00b', headers: u.headers }, 400);
    expect(q.errors[0]).toMatchObject({ in: 'query', pointer: '/q' });
    const { body: p } = await call(app, { method: 'GET', url: '/v1/sessions/ses_%00', headers: u.headers }, 400);
    expect(p.errors[0]).toMatchObject({ in: 'params', pointer: '/id' });
    // A backslash followed by "u0000" is ordinary text.
    await call(
      app,
      { method: 'POST', url: '/memory', headers: u.headers, payload: { content: 'literal \\u0000 text' } },
      201,
    );
  });

  it('answers a wrong query type with 400 validation_failed', async () => {
    const u = await createUser(app);
    const { body } = await call(app, { method: 'GET', url: '/api-keys?limit=ten', headers: u.headers }, 400);
    expect(body).toMatchObject({ code: 'validation_failed', errors: [{ in: 'querystring', pointer: '/limit' }] });
  });
});

describe('request ids', () => {
  it('generates one when absent and echoes a valid one', async () => {
    const a = await app.inject({ method: 'GET', url: '/healthz' });
    expect(a.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const b = await app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'client-req.42' } });
    expect(b.headers['x-request-id']).toBe('client-req.42');
    const c = await app.inject({ method: 'GET', url: '/nope', headers: { 'x-request-id': 'has spaces <and> junk' } });
    expect(c.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const idp = await app.inject({ method: 'GET', url: '/idp/jwks', headers: { 'x-request-id': 'idp-req-1' } });
    expect(idp.headers['x-request-id']).toBe('idp-req-1');
  });
});

describe('operations', () => {
  it('/healthz and /readyz', async () => {
    await call(app, { method: 'GET', url: '/healthz' }, 200);
    const { body } = await call(app, { method: 'GET', url: '/readyz' }, 200);
    expect(body).toMatchObject({ status: 'ok', checks: { database: { status: 'ok' } } });
    expect(['pglite', 'postgres']).toContain(body.details.database_engine);
    if (process.env.TEST_REDIS_URL) expect(body.checks.redis.status).toBe('ok');
  });

  it('/metrics counts requests and latency by route and status', async () => {
    await app.inject({ method: 'GET', url: '/healthz' });
    await app.inject({ method: 'GET', url: '/v1/auth/me' });
    await app.inject({ method: 'GET', url: '/idp/jwks' });
    const res = await app.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.body).toMatch(/http_requests_total\{method="GET",route="\/healthz",status="200"\} \d+/);
    expect(res.body).toMatch(/http_requests_total\{method="GET",route="\/v1\/auth\/me",status="401"\} \d+/);
    expect(res.body).toMatch(
      /http_request_duration_seconds_bucket\{le="0\.005",method="GET",route="\/healthz",status="200"\} \d+/,
    );
    expect(res.body).toMatch(/http_requests_total\{method="GET",route="\/idp\/\*",status="200"\} \d+/);
    expect(res.body).toMatch(/process_resident_memory_bytes \d+/);
  });

  it('/docs serves the API reference', async () => {
    const res = await app.inject({ method: 'GET', url: '/docs/' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/text\/html/);
  });
});

describe('OpenAPI document', () => {
  it('is valid OpenAPI 3.1 and describes every route with request and response schemas', async () => {
    const { body: doc } = await call(app, { method: 'GET', url: '/openapi.json' }, 200);
    expect(doc.openapi).toBe('3.1.0');
    await SwaggerParser.validate(structuredClone(doc));
    const problems: string[] = [];
    const operationIds = new Set<string>();
    let count = 0;
    for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
        count++;
        const where = `${method.toUpperCase()} ${path}`;
        if (!op.operationId) problems.push(`${where}: no operationId`);
        else if (operationIds.has(op.operationId)) problems.push(`${where}: duplicate operationId ${op.operationId}`);
        operationIds.add(op.operationId);
        if (!op.summary) problems.push(`${where}: no summary`);
        if (!op.tags?.length) problems.push(`${where}: no tags`);
        for (const name of path.match(/\{[^}]+\}/g) ?? []) {
          const p = (op.parameters ?? []).find((x: any) => x.in === 'path' && `{${x.name}}` === name);
          if (!p?.schema) problems.push(`${where}: path parameter ${name} has no schema`);
        }
        if (['put', 'patch'].includes(method) && !op.requestBody?.content)
          problems.push(`${where}: no request body schema`);
        for (const [ct, media] of Object.entries<any>(op.requestBody?.content ?? {}))
          if (!media.schema) problems.push(`${where}: request ${ct} without schema`);
        const statuses = Object.keys(op.responses ?? {});
        if (!statuses.some((s) => /^2/.test(s))) problems.push(`${where}: no 2xx response`);
        for (const [status, r] of Object.entries<any>(op.responses ?? {})) {
          if (status === '204' || /^3\d\d$/.test(status)) continue; // no body: No Content, redirects (303 See Other), Not Modified
          const media = Object.values<any>(r.content ?? {});
          if (!media.length || !media.every((m) => m.schema))
            problems.push(`${where}: response ${status} has no schema`);
        }
      }
    }
    expect(count).toBeGreaterThan(15);
    expect(problems).toEqual([]);
    for (const op of [
      'auth.config',
      'auth.startLogin',
      'auth.callback',
      'auth.validate',
      'auth.refresh',
      'auth.me',
      'auth.updateProfile',
      'auth.register',
      'auth.login',
      'auth.info',
      'auth.test',
      'auth.profile',
      'apiKeys.list',
      'apiKeys.create',
      'apiKeys.revoke',
      'admin.setUserRoles',
    ]) {
      expect(operationIds).toContain(op);
    }
  });
});
