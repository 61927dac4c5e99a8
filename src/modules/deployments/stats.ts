/** Counting functions over the deployments module's tables (admin analytics). */
import { sql } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { execRows } from '../../db/client.js';

/** Deployments by status (all time) and invocations of deployed agents by status in [since, until). */
export async function countDeployments(
  ctx: AppContext,
  f: { since: Date; until: Date },
): Promise<{
  deployments: { total: number; by_status: Record<string, number> };
  invocations: { total: number; by_status: Record<string, number> };
}> {
  const [deps, invs] = await Promise.all([
    execRows<{ status: string; n: number | string }>(
      ctx.db,
      sql`select status, count(*) as n from deployments group by status`,
    ),
    execRows<{ status: string; n: number | string }>(
      ctx.db,
      sql`select status, count(*) as n from agent_invocations
          where created_at >= ${f.since.toISOString()}::timestamptz and created_at < ${f.until.toISOString()}::timestamptz group by status`,
    ),
  ]);
  const fold = (rows: Array<{ status: string; n: number | string }>, keys: string[]) => {
    const by: Record<string, number> = Object.fromEntries(keys.map((k) => [k, 0]));
    for (const r of rows) by[r.status] = Number(r.n);
    return { total: Object.values(by).reduce((a, b) => a + b, 0), by_status: by };
  };
  return {
    deployments: fold(deps, ['preparing', 'active', 'failed', 'superseded', 'stopped', 'rolled_back']),
    invocations: fold(invs, ['queued', 'running', 'succeeded', 'failed', 'timed_out']),
  };
}
