/**
 * Platform administration (role `admin` only; others get 403 `insufficient_role`): change a
 * user's roles (never leaving the platform without an admin). The CLI (`npm run cli -- users
 * set-role`) does the same from a shell.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../context.js';
import { requireAuth, userOf } from '../../http/auth.js';
import { operations } from '../../http/operations.js';
import { USER_SECURITY, errorResponses } from '../../http/schemas.js';
import { ProfileSchema } from '../identity/schemas.js';
import { toProfile } from '../identity/profile.js';
import type { IdentityService } from '../identity/service.js';
import { SetRolesBody, UserIdParams } from './schemas.js';

export async function adminRoutes(
  app: FastifyInstance,
  { ctx, identity }: { ctx: AppContext; identity: IdentityService },
): Promise<void> {
  requireAuth(app, ctx.auth, { principals: ['user'], roles: ['admin'] });
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  r.put(
    '/admin/users/:id/roles',
    operations(['admin'], USER_SECURITY)(
      'admin.setUserRoles',
      "Replace a user's roles (admin only; taking admin away from the only admin → 409 last_admin)",
      { params: UserIdParams, body: SetRolesBody, response: { 200: ProfileSchema, ...errorResponses(403, 404, 409) } },
    ),
    async (req) => {
      const u = await identity.setRolesById(req.params.id, req.body.roles);
      req.log.info({ admin: userOf(req).userId, user: u.id, roles: u.roles }, 'roles changed');
      return toProfile(u);
    },
  );
}
