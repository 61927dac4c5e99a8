/** `approvals list|approve|deny`: people's decisions on tool calls a policy holds for approval (docs/governance.md#approvals). */
import type { Command } from 'commander';
import { client, output, table, type GlobalOptions } from '../context.js';

const STATUSES = ['pending', 'approved', 'denied', 'expired', 'used'] as const;
type Status = (typeof STATUSES)[number];

export function approvalCommands(program: Command): void {
  const approvals = program.command('approvals').description('Approve or deny tool calls held for a person’s approval');

  approvals
    .command('list')
    .description('List approval requests, newest first (default: the pending ones)')
    .option('--status <status>', `one of ${STATUSES.join(', ')}, or "all"`, 'pending')
    .action(async (o: { status: string }, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      if (o.status !== 'all' && !STATUSES.includes(o.status as Status))
        throw new Error(`--status must be one of ${STATUSES.join(', ')}, all`);
      const query = o.status === 'all' ? { limit: 100 } : { limit: 100, status: o.status as Status };
      const all = await client(g).approvals.list(query).toArray();
      output(g, all, (v) =>
        table(
          v.map((a) => ({ ...a, call: `${a.service_name}/${a.tool_name}`, arguments: JSON.stringify(a.arguments) })),
          ['id', 'status', 'call', 'arguments', 'agent_id', 'expires_at'],
        ),
      );
    });

  approvals
    .command('approve <id>')
    .description('Approve a pending call: its caller may then run it once, with exactly those arguments')
    .action(async (id: string, _o, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const a = await client(g).approvals.approve(id);
      output(g, a, (v) => `Approved ${v.id}: ${v.service_name}/${v.tool_name} may run once, until ${v.expires_at}.`);
    });

  approvals
    .command('deny <id>')
    .description('Deny a pending call')
    .option('--reason <text>', 'shown to the caller')
    .action(async (id: string, o: { reason?: string }, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const a = await client(g).approvals.deny(id, o.reason ? { reason: o.reason } : {});
      output(g, a, (v) => `Denied ${v.id}: ${v.service_name}/${v.tool_name}${v.reason ? ` (${v.reason})` : ''}.`);
    });
}
