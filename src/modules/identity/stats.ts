/** Counting functions over the identity module's users (admin analytics). */
import { sql } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { execRows } from '../../db/client.js';

/** Users: total, created in [since, until), and how many hold each role (a user may hold several). */
export async function countUsers(
  ctx: AppContext,
  f: { since: Date; until: Date },
): Promise<{ total: number; created_in_period: number; by_role: Record<string, number> }> {
  const [[t], roles] = await Promise.all([
    execRows<Record<string, unknown>>(
      ctx.db,
      sql`select count(*) as total,
                 count(*) filter (where created_at >= ${f.since.toISOString()}::timestamptz and created_at < ${f.until.toISOString()}::timestamptz) as created
          from users`,
    ),
    execRows<{ role: string; n: number | string }>(
      ctx.db,
      sql`select r as role, count(*) as n from users, unnest(roles) r group by r`,
    ),
  ]);
  const byRole: Record<string, number> = { user: 0, pro: 0, enterprise: 0, admin: 0 };
  for (const r of roles) byRole[r.role] = Number(r.n);
  return { total: Number(t.total), created_in_period: Number(t.created), by_role: byRole };
}
