/**
 * Roles as claims and the public profile (`GET /v1/auth/me`) of a user row.
 */
import type { Static } from 'typebox';
import type { Role } from '../../config.js';
import { ROLES } from '../../config.js';
import type { users } from '../../db/schema/index.js';
import { webPicture } from './picture.js';
import type { ProfileSchema } from './schemas.js';

/** The public profile (`GET /v1/auth/me`). */
export type Profile = Static<typeof ProfileSchema>;

/** The highest role, used as the subscription tier (spec: "a role-like tier name"). */
export function tierOf(roles: readonly string[]): Role {
  for (const r of ['admin', 'enterprise', 'pro'] as const) if (roles.includes(r)) return r;
  return 'user';
}

/** The role names in a claim value (array, or a space/comma separated string); unknown names dropped. */
export function rolesClaim(v: unknown): Role[] {
  const list = Array.isArray(v) ? v : typeof v === 'string' ? v.split(/[ ,]+/) : [];
  return list.filter((r): r is Role => (ROLES as readonly string[]).includes(r as string));
}

/** Known roles of `v`, deduplicated; `['user']` when none. */
export function cleanRoles(v: unknown): Role[] {
  const out = rolesClaim(v);
  return out.length ? [...new Set(out)] : ['user'];
}

/** Public profile of a user row. */
export function toProfile(u: typeof users.$inferSelect): Profile {
  return {
    user_id: u.subject,
    email: u.email,
    name: u.name,
    // A picture stored before only http/https were accepted is not shown.
    picture: webPicture(u.picture) ?? null,
    roles: u.roles as Role[],
    preferences: u.preferences,
    created_at: u.createdAt.toISOString(),
    subscription: { tier: tierOf(u.roles), valid_until: null },
    test: u.test,
  };
}
