/** Shared setup of the tool export tests: a published service on a real loopback upstream, and a subscriber. */
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../../src/context.js';
import { setServiceStatus } from '../../../src/modules/registry/service.js';
import { call, createUser, type TestUser } from '../../helpers/app.js';
import type { Upstream } from '../../helpers/upstreams.js';
import { uniq } from '../publishing/helpers.js';

/**
 * Tools against `startJsonApi()`: `get_weather` (GET /weather, `city` required, `units` an
 * optional enum), `echo` (POST /echo; a free-form `meta` object, so not strict for OpenAI) and
 * `ping` (no arguments).
 */
export function exportManifest(baseUrl: string) {
  return {
    name: uniq('wx'),
    description: 'Weather and echo',
    base_url: baseUrl,
    auth: { type: 'bearer', secret: 'upstream-secret' },
    tools: [
      {
        name: 'get_weather',
        description: 'Current weather for a city',
        method: 'GET',
        path: '/weather',
        input_schema: {
          type: 'object',
          properties: {
            city: { type: 'string', minLength: 1, description: 'city name' },
            units: { type: 'string', enum: ['c', 'f'] },
          },
          required: ['city'],
        },
      },
      {
        name: 'echo',
        description: 'Echo the body',
        method: 'POST',
        path: '/echo',
        input_schema: {
          type: 'object',
          properties: { message: { type: 'string' }, count: { type: 'integer' }, meta: { type: 'object' } },
          required: ['message'],
        },
      },
      {
        name: 'ping',
        description: 'Health',
        method: 'GET',
        path: '/weather',
        input_schema: { type: 'object', properties: {} },
      },
    ],
  };
}

/** An owner with the published service, and a subscriber (user) to it. */
export async function subscribedUser(
  app: FastifyInstance,
  ctx: AppContext,
  upstream: Upstream,
): Promise<{ owner: TestUser; user: TestUser; service: { id: string; name: string } }> {
  const owner = await createUser(app);
  const { body: service } = await call(
    app,
    { method: 'POST', url: '/owner/services', headers: owner.headers, payload: exportManifest(upstream.url) },
    201,
  );
  await setServiceStatus(ctx, service.id, 'published');
  const user = await createUser(app);
  await call(
    app,
    { method: 'POST', url: '/subscriptions', headers: user.headers, payload: { service_id: service.id } },
    201,
  );
  return { owner, user, service };
}
