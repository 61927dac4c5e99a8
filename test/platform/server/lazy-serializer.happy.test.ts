/** http/lazy-serializer.ts: response serialisers compile on first use or in warm(), with the default compiler's output. */
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { LazySerializers } from '../../../src/http/lazy-serializer.js';

async function appWith(serializers: LazySerializers) {
  const app = Fastify({ schemaController: { compilersFactory: { buildSerializer: serializers.factory } } });
  app.addSchema({ $id: 'Thing', type: 'object', properties: { id: { type: 'string' }, n: { type: 'integer' } } });
  const response = { 200: { $ref: 'Thing#' } };
  app.get('/a', { schema: { response } }, async () => ({ id: 'a', n: 1, secret: 'not in the schema' }));
  app.get('/b', { schema: { response } }, async () => ({ id: 'b', n: '2' }));
  await app.ready();
  return app;
}

describe('LazySerializers', () => {
  it('compiles nothing at start-up, then one serialiser per route on its first answer, with the schema applied', async () => {
    const serializers = new LazySerializers();
    const app = await appWith(serializers);
    // One per route and status: GET /a, GET /b and the HEAD routes Fastify adds for them.
    const before = serializers.remaining;
    expect(before).toBe(4);
    const a = await app.inject({ method: 'GET', url: '/a' });
    // Shared schema resolved ($ref), properties outside the schema dropped: the default compiler's output.
    expect(a.json()).toEqual({ id: 'a', n: 1 });
    expect(serializers.remaining).toBe(before - 1);
    await app.inject({ method: 'GET', url: '/a' });
    expect(serializers.remaining).toBe(before - 1);
    await app.close();
  });

  it('warm() compiles the rest between event-loop turns, and answers stay the same', async () => {
    const serializers = new LazySerializers();
    const app = await appWith(serializers);
    const errors: unknown[] = [];
    await serializers.warm((err) => errors.push(err));
    expect(errors).toEqual([]);
    expect(serializers.remaining).toBe(0);
    expect((await app.inject({ method: 'GET', url: '/b' })).json()).toEqual({ id: 'b', n: 2 });
    await app.close();
  });
});
