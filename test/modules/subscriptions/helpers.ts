/** Published services for the subscription tests (registered through the registry API). */
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../../src/context.js';
import { setServiceStatus } from '../../../src/modules/registry/service.js';
import { call, type TestUser } from '../../helpers/app.js';

let n = 0;

/** Register a one-tool service of `owner` (base URL on loopback; never called here) and optionally publish it. */
export async function makeService(
  app: FastifyInstance,
  ctx: AppContext,
  owner: TestUser,
  status: 'published' | 'draft' | 'unpublished' = 'published',
): Promise<{ id: string; name: string }> {
  const name = `subs-${process.pid}-${Date.now().toString(36)}-${n++}`;
  const { body } = await call(
    app,
    {
      method: 'POST',
      url: '/owner/services',
      headers: owner.headers,
      payload: {
        name,
        description: 'a test service',
        base_url: 'http://127.0.0.1:9',
        tools: [{ name: 'ping', description: 'ping', method: 'GET', path: '/ping', input_schema: { type: 'object' } }],
      },
    },
    201,
  );
  if (status !== 'draft') await setServiceStatus(ctx, body.id, status);
  return { id: body.id, name: body.name };
}
