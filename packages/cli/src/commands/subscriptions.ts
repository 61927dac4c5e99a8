/**
 * `subscriptions list|create|cancel|changes|accept-changes`: your account's subscriptions to
 * marketplace services, their quotas, and the tool definitions that changed since you pinned them.
 */
import type { Command } from 'commander';
import { acceptedText, changeRows } from '../changes.js';
import { client, CliError, EXIT, output, table, type GlobalOptions } from '../context.js';

const PLANS = ['free', 'pro', 'enterprise'] as const;
type Plan = (typeof PLANS)[number];
const quota = (n: number | null) => (n === null ? '∞' : String(n));

export function subscriptionCommands(program: Command): void {
  const subs = program.command('subscriptions').description('Subscriptions of your account to marketplace services');

  subs
    .command('list')
    .description('List your subscriptions with their use of the day and month')
    .option('--all', 'include canceled ones')
    .action(async (o: { all?: boolean }, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const all = (await client(g).subscriptions.list({ limit: 100 }).toArray()).filter(
        (s) => o.all || s.status === 'active',
      );
      output(g, all, (v) =>
        table(
          v.map((s) => ({
            ...s,
            day: `${s.used.day}/${quota(s.quotas.day)}`,
            month: `${s.used.month}/${quota(s.quotas.month)}`,
          })),
          ['id', 'service_id', 'plan', 'status', 'day', 'month'],
        ),
      );
    });

  subs
    .command('create <service>')
    .description('Subscribe your account to a published service (its id or name)')
    .option('--plan <plan>', `plan: ${PLANS.join(', ')}`, 'free')
    .action(async (service: string, o: { plan: string }, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      if (!PLANS.includes(o.plan as Plan))
        throw new CliError(`--plan must be one of ${PLANS.join(', ')}, got ${o.plan}`, EXIT.usage);
      const sub = await client(g).subscriptions.create({ service_id: service, plan: o.plan as Plan });
      output(
        g,
        sub,
        (v) =>
          `Subscribed to ${v.service_id} (${v.id}) on the ${v.effective_plan} plan: ${quota(v.quotas.day)} calls a day, ${quota(v.quotas.month)} a month.`,
      );
    });

  subs
    .command('cancel <id>')
    .description('Cancel a subscription (its tools stop working for your account and agents)')
    .action(async (id: string, _o, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const sub = await client(g).subscriptions.cancel(id);
      output(g, sub, (v) => `Canceled ${v.id} (${v.service_id}).`);
    });

  subs
    .command('changes <id>')
    .description(
      'Tool definitions of the service that changed (or were added) since you pinned them: they answer 409 until accepted',
    )
    .action(async (id: string, _o, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const changes = await client(g).subscriptions.changes(id);
      output(g, changes, (v) => (v.length ? changeRows(v) : 'No pending changes: every tool runs as you pinned it.'));
    });

  subs
    .command('accept-changes <id>')
    .description('Accept the changed tool definitions (all, or those named with --tool) so they run again')
    .option('--tool <name...>', 'only these tools')
    .action(async (id: string, o: { tool?: string[] }, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const res = await client(g).subscriptions.acceptChanges(id, o.tool?.length ? { tools: o.tool } : {});
      output(g, res, acceptedText);
    });
}
