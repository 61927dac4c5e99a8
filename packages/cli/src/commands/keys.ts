/** `keys list|create|revoke`: the caller's API keys. */
import type { Body } from '@agent-platform/sdk';
import type { Command } from 'commander';
import { client, output, table, type GlobalOptions } from '../context.js';

export function keyCommands(program: Command): void {
  const keys = program.command('keys').description('API keys of your account');

  keys
    .command('list')
    .description('List your API keys (never the secrets)')
    .action(async (_o, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const all = await client(g).apiKeys.list({ limit: 100 }).toArray();
      output(g, all, (v) =>
        table(
          v.map((k) => ({ ...k, scopes: k.scopes.join(' ') })),
          ['id', 'name', 'prefix', 'scopes', 'created_at', 'last_used_at', 'expires_at'],
        ),
      );
    });

  keys
    .command('create')
    .description('Create an API key; the secret is printed once')
    .requiredOption('--name <name>', 'a label for the key')
    .option('--expires-at <iso8601>', 'expiry time (default: never)')
    .option(
      '--scopes <scope...>',
      'what the key may do, e.g. tools:execute memory:read (default: your scopes but approvals:decide and policies:manage, which a key gets only when named)',
    )
    .action(async (o: { name: string; expiresAt?: string; scopes?: string[] }, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const key = await client(g).apiKeys.create({
        name: o.name,
        ...(o.expiresAt ? { expires_at: o.expiresAt } : {}),
        ...(o.scopes
          ? {
              scopes: o.scopes.flatMap((s) => s.split(',')).filter(Boolean) as NonNullable<
                Body<'apiKeys.create'>['scopes']
              >,
            }
          : {}),
      });
      output(
        g,
        key,
        (v) =>
          `Created ${v.id} (${v.name}), scopes: ${v.scopes.join(' ') || 'none'}.\nSecret (shown once, store it now):\n\n  ${v.key}\n`,
      );
    });

  keys
    .command('revoke <id>')
    .description('Revoke an API key (effective immediately)')
    .action(async (id: string, _o, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      await client(g).apiKeys.revoke(id);
      output(g, { id, revoked: true }, (v) => `Revoked ${v.id}.`);
    });
}
