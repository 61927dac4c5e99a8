/**
 * Executing tools imported from an OpenAPI document: arguments go where the document says
 * (path, query, header, JSON body fields, or a whole non-object body), as the registry records.
 */
import { describe, expect, it } from 'vitest';
import { createUser, setupApp } from '../helpers/app.js';
import { execute, listen, newSession, registerService } from '../helpers/exec.js';
import { startToolUpstream } from '../helpers/tool-upstream.js';

const { app } = await setupApp();
const base = await listen(app);

describe('execute — OpenAPI tools', () => {
  it('places path, query, header and body arguments as declared', async () => {
    const upstream = await startToolUpstream();
    const owner = await createUser(app);
    const svc = await registerService(base, owner, {
      name: `oas-${Date.now().toString(36)}`,
      description: 'openapi',
      openapi: {
        openapi: '3.0.3',
        info: { title: 'Items', version: '1.0.0' },
        servers: [{ url: upstream.url }],
        paths: {
          '/items/{id}': {
            get: {
              operationId: 'getItem',
              parameters: [
                { name: 'id', in: 'path', required: true, schema: { type: 'string' } },
                { name: 'q', in: 'query', schema: { type: 'string' } },
                { name: 'X-Trace', in: 'header', schema: { type: 'string' } },
              ],
              responses: { '200': { description: 'ok' } },
            },
          },
          '/items': {
            post: {
              operationId: 'createItem',
              parameters: [{ name: 'dry_run', in: 'query', schema: { type: 'boolean' } }],
              requestBody: {
                required: true,
                content: {
                  'application/json': {
                    schema: {
                      type: 'object',
                      properties: { name: { type: 'string' }, qty: { type: 'integer' } },
                      required: ['name'],
                    },
                  },
                },
              },
              responses: { '201': { description: 'created' } },
            },
            put: {
              operationId: 'replaceAll',
              requestBody: {
                content: { 'application/json': { schema: { type: 'array', items: { type: 'string' } } } },
              },
              responses: { '200': { description: 'ok' } },
            },
          },
        },
      },
    });
    expect(svc.tools.map((t) => t.name).sort()).toEqual(['createItem', 'getItem', 'replaceAll']);
    const sid = await newSession(base, owner.headers);

    const a = await execute(base, owner.headers, sid, {
      service: svc.name,
      tool: 'getItem',
      arguments: { id: '7', q: 'hello', 'X-Trace': 'trace-1' },
    });
    expect(a.status).toBe(200);
    expect(a.body.output).toMatchObject({ id: '7', query: { q: 'hello' } });
    const ra = upstream.seen.at(-1)!;
    expect(ra.url).toBe('/items/7?q=hello');
    expect(ra.headers['x-trace']).toBe('trace-1');

    const b = await execute(base, owner.headers, sid, {
      service: svc.name,
      tool: 'createItem',
      arguments: { name: 'bolt', qty: 2, dry_run: true },
    });
    expect(b.status).toBe(200);
    expect(b.body).toMatchObject({ http_status: 201, output: { created: { name: 'bolt', qty: 2 } } });
    expect(upstream.seen.at(-1)!.url).toBe('/items?dry_run=true');

    const c = await execute(base, owner.headers, sid, {
      service: svc.name,
      tool: 'replaceAll',
      arguments: { body: ['a', 'b'] },
    });
    expect(c.status).toBe(200);
    const rc = upstream.seen.at(-1)!;
    expect(rc.method).toBe('PUT');
    expect(JSON.parse(rc.body.toString())).toEqual(['a', 'b']);
    expect(rc.headers['content-type']).toBe('application/json');

    // Required body fields are enforced before anything is sent.
    const before = upstream.seen.length;
    const bad = await execute(base, owner.headers, sid, {
      service: svc.name,
      tool: 'createItem',
      arguments: { qty: 'many' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.errors.map((e: { pointer: string }) => e.pointer).sort()).toEqual([
      '/arguments/name',
      '/arguments/qty',
    ]);
    expect(upstream.seen.length).toBe(before);
  });
});
