/** `policies list|create|show|enable|disable|delete|evaluate|schema`: Cedar policies on tool calls (docs/governance.md#policies). */
import fs from 'node:fs';
import type { Command } from 'commander';
import { client, CliError, EXIT, output, parseJsonFlag, table, type GlobalOptions } from '../context.js';

/** The Cedar text of `--source` or `--file` (exactly one). @throws CliError (exit 2) otherwise or when the file cannot be read */
function sourceOf(o: { source?: string; file?: string }): string | undefined {
  if (o.source && o.file) throw new CliError('Give --source or --file, not both', EXIT.usage);
  if (!o.file) return o.source;
  try {
    return fs.readFileSync(o.file, 'utf8');
  } catch (err) {
    throw new CliError(`Cannot read ${o.file}: ${(err as Error).message}`, EXIT.usage);
  }
}

export function policyCommands(program: Command): void {
  const policies = program
    .command('policies')
    .description('Cedar policies on tool calls: forbid, or hold for approval');

  policies
    .command('list')
    .description("List the account's policies and the global ones")
    .action(async (_o, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const { data } = await client(g).policies.list();
      output(g, data, (v) =>
        table(
          v.map((p) => ({ ...p, source: p.source.replace(/\s+/g, ' ').slice(0, 70) })),
          ['id', 'scope', 'enabled', 'approval', 'description', 'source'],
        ),
      );
    });

  policies
    .command('create')
    .description('Create a policy from one Cedar forbid statement')
    .option('--source <cedar>', 'the Cedar text')
    .option('--file <file>', 'read the Cedar text from a file')
    .option('--description <text>', 'what the policy is for')
    .option('--global', 'bind every account (admins only)')
    .option('--disabled', 'create it disabled')
    .action(
      async (
        o: { source?: string; file?: string; description?: string; global?: boolean; disabled?: boolean },
        cmd: Command,
      ) => {
        const g = cmd.optsWithGlobals<GlobalOptions>();
        const source = sourceOf(o);
        if (!source) throw new CliError('Give --source <cedar> or --file <file>', EXIT.usage);
        const p = await client(g).policies.create({
          source,
          description: o.description,
          enabled: !o.disabled,
          scope: o.global ? 'global' : 'account',
        });
        output(g, p, (v) => `Created ${v.id} (${v.scope}${v.enabled ? '' : ', disabled'}).`);
      },
    );

  policies
    .command('show <id>')
    .description('Show one policy')
    .action(async (id: string, _o, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      output(g, await client(g).policies.get(id), (v) => `${v.id} ${v.scope} enabled=${v.enabled}\n${v.source}`);
    });

  for (const [name, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    policies
      .command(`${name} <id>`)
      .description(`${enabled ? 'Enable' : 'Disable'} a policy`)
      .action(async (id: string, _o, cmd: Command) => {
        const g = cmd.optsWithGlobals<GlobalOptions>();
        const p = await client(g).policies.update(id, { enabled });
        output(g, p, (v) => `${v.id} ${v.enabled ? 'enabled' : 'disabled'}.`);
      });
  }

  policies
    .command('delete <id>')
    .description('Delete a policy')
    .action(async (id: string, _o, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      await client(g).policies.delete(id);
      output(g, { id, deleted: true }, () => `Deleted ${id}.`);
    });

  policies
    .command('evaluate <service> <tool>')
    .description('Dry run: what the policies decide on a call (optionally with a draft policy)')
    .option('--args <json>', 'the call’s arguments (a JSON object)', '{}')
    .option('--agent <agent_id>', 'evaluate as this agent of the account')
    .option('--source <cedar>', 'a draft policy evaluated with the stored ones')
    .option('--file <file>', 'read the draft policy from a file')
    .action(
      async (
        service: string,
        tool: string,
        o: { args: string; agent?: string; source?: string; file?: string },
        cmd: Command,
      ) => {
        const g = cmd.optsWithGlobals<GlobalOptions>();
        const args = parseJsonFlag('--args', o.args);
        if (!args || typeof args !== 'object' || Array.isArray(args))
          throw new CliError('--args must be a JSON object', EXIT.usage);
        const r = await client(g).policies.evaluate({
          service,
          tool,
          arguments: args as Record<string, unknown>,
          agent_id: o.agent,
          source: sourceOf(o),
        });
        output(g, r, (v) => JSON.stringify(v, null, 2));
      },
    );

  policies
    .command('schema')
    .description('Print the Cedar schema policies are validated against')
    .action(async (_o, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      output(g, await client(g).policies.schema(), (v) => v.schema);
    });
}
