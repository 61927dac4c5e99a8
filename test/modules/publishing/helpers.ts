/** Shared steps of the publishing tests. */
import type { FastifyInstance } from 'fastify';
import { call, type TestUser } from '../../helpers/app.js';
import type { Upstream } from '../../helpers/upstreams.js';

let n = 0;
export const uniq = (p: string) => `${p}-${Date.now().toString(36)}-${n++}`;

/** A native manifest against `startJsonApi()`: get_weather, get_user, broken (/fail). */
export function weatherManifest(baseUrl: string, extra: Record<string, unknown> = {}) {
  return {
    name: uniq('weather'),
    description: 'Current weather by city',
    base_url: baseUrl,
    category: 'weather',
    tags: ['weather', 'demo'],
    auth: { type: 'bearer', secret: 'upstream-secret' },
    tools: [
      {
        name: 'get_weather',
        description: 'Current weather for a city',
        method: 'GET',
        path: '/weather',
        input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
      {
        name: 'get_user',
        description: 'A user by id',
        method: 'GET',
        path: '/users/{id}',
        input_schema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
      },
      { name: 'broken', description: 'Always fails', method: 'GET', path: '/fail', input_schema: { type: 'object' } },
    ],
    ...extra,
  };
}

/** Register a service and return its body. */
export async function registerService(app: FastifyInstance, owner: TestUser, payload: Record<string, unknown>) {
  return (await call(app, { method: 'POST', url: '/owner/services', headers: owner.headers, payload }, 201)).body;
}

/** Issue the domain token, serve it from `upstream`, and verify. */
export async function verifyDomainByHttp(app: FastifyInstance, owner: TestUser, serviceId: string, upstream: Upstream) {
  const { body: first } = await call(
    app,
    { method: 'POST', url: `/v1/services/${serviceId}/verify-domain`, headers: owner.headers },
    200,
  );
  upstream.verificationToken = first.token;
  const { body } = await call(
    app,
    { method: 'POST', url: `/v1/services/${serviceId}/verify-domain`, headers: owner.headers },
    200,
  );
  return { first, body };
}

/** Poll verification-status until the run is finished (service no longer pending). */
export async function waitForRun(app: FastifyInstance, owner: TestUser, serviceId: string, timeoutMs = 15_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const { body } = await call(
      app,
      { method: 'GET', url: `/v1/services/${serviceId}/publish/verification-status`, headers: owner.headers },
      200,
    );
    if (body.status !== 'pending_verification') return body;
    if (Date.now() > until) throw new Error(`publish run did not finish: ${JSON.stringify(body)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Register → verify domain → config → publish → published. */
export async function publishService(
  app: FastifyInstance,
  owner: TestUser,
  upstream: Upstream,
  payload: Record<string, unknown>,
  tests: unknown[],
) {
  const svc = await registerService(app, owner, payload);
  await verifyDomainByHttp(app, owner, svc.id, upstream);
  await call(
    app,
    { method: 'POST', url: `/v1/services/${svc.id}/verification-config`, headers: owner.headers, payload: { tests } },
    200,
  );
  await call(app, { method: 'POST', url: `/v1/services/${svc.id}/publish`, headers: owner.headers }, 202);
  const status = await waitForRun(app, owner, svc.id);
  if (status.status !== 'published') throw new Error(`not published: ${JSON.stringify(status)}`);
  return svc;
}
