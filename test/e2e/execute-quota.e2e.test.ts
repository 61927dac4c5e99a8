/**
 * The quota race end to end: 50 parallel executions against a daily quota of 10 let exactly 10
 * through (and reach the upstream), on PGlite, and on PostgreSQL when TEST_DATABASE_URL is set.
 */
import { describe, expect, it } from 'vitest';
import { setupApp } from '../helpers/app.js';
import { execute, expectHttp, listen, subscribedFastTool } from '../helpers/exec.js';

const { app, ctx } = await setupApp({ QUOTA_FREE_DAY: '10', QUOTA_FREE_MONTH: '1000' });
const base = await listen(app);

describe(`execute — quota race (${ctx.database.engine})`, () => {
  it('lets exactly 10 of 50 parallel executions through a quota of 10', async () => {
    const { upstream, user, svc, sub, sid } = await subscribedFastTool(app, ctx, base, 'race');

    const answers = await Promise.all(
      Array.from({ length: 50 }, () => execute(base, user.headers, sid, { service: svc.name, tool: 'fast' })),
    );
    const ok = answers.filter((a) => a.status === 200);
    const limited = answers.filter((a) => a.status === 429);
    expect(ok).toHaveLength(10);
    expect(limited).toHaveLength(40);
    for (const a of limited) {
      expect(a.body.code).toBe('quota_exceeded');
      expect(Number(a.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(a.headers.get('x-quota-remaining')).toBe('0');
    }
    // Remaining counts handed out 9..0, each exactly once.
    expect(ok.map((a) => Number(a.headers.get('x-quota-remaining'))).sort((x, y) => x - y)).toEqual([
      0, 1, 2, 3, 4, 5, 6, 7, 8, 9,
    ]);
    expect(upstream.seenAt('/fast')).toHaveLength(10);

    const { body: q } = await expectHttp(base, 'GET', `/subscriptions/${sub.id}/quotas`, 200, {
      headers: user.headers,
    });
    expect(q.windows[0]).toMatchObject({ window: 'day', limit: 10, used: 10, remaining: 0 });
    const { body: s } = await expectHttp(base, 'GET', `/v1/agents/${sid}`, 200, { headers: user.headers });
    expect(s.execution_count).toBe(10);
  });
});
