/** Shared by the policy tests: a published items service whose tools a policy can tell apart by tag. */
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../../src/context.js';
import { createUser } from '../../helpers/app.js';
import { publish, registerService, type RegisteredService } from '../../helpers/exec.js';

const ID = { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] };

/**
 * Register (as a new user, through the app listening at `base`) and publish a service named
 * `<prefix>-<time>` at `upstreamUrl` with two tools: `get_item` (GET /items/{id}: tags read_only,
 * idempotent) and `delete_item` (DELETE /items/{id}: tags destructive, idempotent).
 */
export async function publishItemsService(
  app: FastifyInstance,
  ctx: AppContext,
  base: string,
  prefix: string,
  upstreamUrl: string,
): Promise<RegisteredService> {
  const svc = await registerService(base, await createUser(app), {
    name: `${prefix}-${Date.now().toString(36)}`,
    description: 'items',
    base_url: upstreamUrl,
    tools: [
      { name: 'get_item', description: 'Get an item', method: 'GET', path: '/items/{id}', input_schema: ID },
      { name: 'delete_item', description: 'Delete an item', method: 'DELETE', path: '/items/{id}', input_schema: ID },
    ],
  });
  await publish(ctx, svc.id);
  return svc;
}
