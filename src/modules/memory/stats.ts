/** Counting functions over the memory module's tables (analytics). */
import { sql } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { execRows } from '../../db/client.js';

/** Memories by source and session summaries, platform-wide or of one account. */
export async function countMemories(
  ctx: AppContext,
  f: { userId?: string } = {},
): Promise<{ total: number; by_source: { explicit: number; execution: number; summary: number }; summaries: number }> {
  const [[m], [s]] = await Promise.all([
    execRows<Record<string, unknown>>(
      ctx.db,
      sql`select count(*) as total, count(*) filter (where source = 'explicit') as explicit,
                 count(*) filter (where source = 'execution') as execution, count(*) filter (where source = 'summary') as summary
          from memories ${f.userId ? sql`where user_id = ${f.userId}` : sql``}`,
    ),
    execRows<{ n: number | string }>(
      ctx.db,
      sql`select count(*) as n from session_summaries ${f.userId ? sql`where user_id = ${f.userId}` : sql``}`,
    ),
  ]);
  return {
    total: Number(m.total),
    by_source: { explicit: Number(m.explicit), execution: Number(m.execution), summary: Number(m.summary) },
    summaries: Number(s.n),
  };
}
