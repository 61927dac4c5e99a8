/** Counting functions over the subscriptions module's table (admin analytics). */
import { sql } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { execRows } from '../../db/client.js';

/** Active subscriptions by plan, and canceled ones. */
export async function countSubscriptions(
  ctx: AppContext,
): Promise<{ active: number; canceled: number; by_plan: Record<string, number> }> {
  const rows = await execRows<{ status: string; plan: string; n: number | string }>(
    ctx.db,
    sql`select status, plan, count(*) as n from subscriptions group by status, plan`,
  );
  const byPlan: Record<string, number> = { free: 0, pro: 0, enterprise: 0 };
  let active = 0;
  let canceled = 0;
  for (const r of rows) {
    if (r.status === 'active') {
      active += Number(r.n);
      byPlan[r.plan] = (byPlan[r.plan] ?? 0) + Number(r.n);
    } else canceled += Number(r.n);
  }
  return { active, canceled, by_plan: byPlan };
}
