/**
 * Retention of the policy decision log: the writer's upkeep (lib/batcher.ts) deletes decisions older
 * than DECISION_RETENTION_DAYS after its first write, and keeps the younger ones.
 */
import { randomBytes } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { policyDecisions } from '../../../src/db/schema/index.js';
import { DECISION_RETENTION_DAYS, flushDecisions, recordDecision } from '../../../src/modules/policies/decisions.js';
import { setupApp } from '../../helpers/app.js';

const { ctx } = await setupApp();
const DAY = 86_400_000;

describe('policy decision retention', () => {
  it('the first write of an app prunes decisions past the retention and keeps the rest', async () => {
    // own ids, so the test also passes on a database that earlier runs wrote to
    const tag = randomBytes(6).toString('hex');
    const account = `usr_retention_${tag}`;
    const row = (id: string, at: Date) => ({
      id: `${id}_${tag}`,
      at,
      accountId: account,
      principal: `Platform::User::"${account}"`,
      serviceId: 'svc_retention',
      toolId: 'tool_retention',
      tool: 'retention/get',
      decision: 'allow',
    });
    const now = Date.now();
    await ctx.db
      .insert(policyDecisions)
      .values([
        row('pdc_old', new Date(now - (DECISION_RETENTION_DAYS + 1) * DAY)),
        row('pdc_young', new Date(now - (DECISION_RETENTION_DAYS - 1) * DAY)),
      ]);
    const { id: _id, at: _at, ...fresh } = row('', new Date());
    recordDecision(ctx, fresh);
    await flushDecisions(ctx);
    const left = await ctx.db
      .select({ id: policyDecisions.id })
      .from(policyDecisions)
      .where(eq(policyDecisions.accountId, account));
    const ids = left.map((r) => r.id);
    expect(ids).toContain(`pdc_young_${tag}`);
    expect(ids).not.toContain(`pdc_old_${tag}`);
    expect(ids).toHaveLength(2); // the young one and the decision just recorded
  });
});
