/** `connections list|create|delete`: your accounts at OAuth 2.0 upstreams (services whose auth type is oauth2). */
import type { Command } from 'commander';
import open from 'open';
import { client, output, table, type GlobalOptions } from '../context.js';

export function connectionCommands(program: Command): void {
  const conns = program.command('connections').description('Your connected accounts at OAuth 2.0 services');

  conns
    .command('list')
    .description('List your connections (never a token)')
    .action(async (_o, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const all = await client(g).connections.list({ limit: 100 }).toArray();
      output(g, all, (v) =>
        table(
          v.map((c) => ({ ...c, service: c.service.name, scopes: c.scopes.join(' ') })),
          ['id', 'service', 'agent_id', 'status', 'scopes', 'expires_at'],
        ),
      );
    });

  conns
    .command('create <service>')
    .description(
      "Connect your account (or an agent's) at an oauth2 service: prints the consent URL to open in the browser where you are signed in to the platform",
    )
    .option('--agent <id>', 'connect this agent of yours instead of your own account')
    .option('--return-to <url>', 'where the browser goes once connected')
    .option('--open', 'also open the URL in the default browser')
    .action(async (service: string, o: { agent?: string; returnTo?: string; open?: boolean }, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const started = await client(g).connections.create({
        service,
        ...(o.agent ? { agent_id: o.agent } : {}),
        ...(o.returnTo ? { return_to: o.returnTo } : {}),
      });
      output(
        g,
        started,
        (v) =>
          `Connection ${v.connection_id} is pending. Open this URL in the browser where you are signed in to the platform (good until ${v.expires_at}):\n\n  ${v.authorization_url}\n\nThen check it with \`agent-platform connections list\`.`,
      );
      if (o.open) open(started.authorization_url).catch(() => undefined);
    });

  conns
    .command('delete <id>')
    .description('Disconnect: revoke the grant at the upstream where it allows it, and delete the connection')
    .action(async (id: string, _o, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      await client(g).connections.delete(id);
      output(g, { id, deleted: true }, (v) => `Deleted connection ${v.id}.`);
    });
}
