/** Counting functions over the agents module's tables (admin analytics). */
import { sql } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { execRows } from '../../db/client.js';

/** Agents by status (`active` | `disabled` | `deleted`); `total` excludes deleted ones. */
export async function countAgents(ctx: AppContext): Promise<{ total: number; by_status: Record<string, number> }> {
  const rows = await execRows<{ status: string; n: number | string }>(
    ctx.db,
    sql`select status, count(*) as n from agents group by status`,
  );
  const by: Record<string, number> = { active: 0, disabled: 0, deleted: 0 };
  for (const r of rows) by[r.status] = Number(r.n);
  return { total: Object.entries(by).reduce((n, [s, c]) => (s === 'deleted' ? n : n + c), 0), by_status: by };
}
