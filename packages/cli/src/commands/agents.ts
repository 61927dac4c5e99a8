/**
 * `agents create|list|rotate-secret|subscribe|unsubscribe|tools|changes|accept-changes|deploy|invoke|logs`:
 * agent identities, their tool subscriptions (and the pinned tool definitions that changed since),
 * and their deployed code.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseEnv } from 'node:util';
import type { LogEvent } from '@agent-platform/sdk';
import type { Command } from 'commander';
import cliProgress from 'cli-progress';
import * as tar from 'tar';
import { acceptedText, changeRows } from '../changes.js';
import { client, CliError, EXIT, output, parseJsonFlag, table, type GlobalOptions } from '../context.js';

/** A gzip tarball of `dir` (its files at the archive root; `.git` and `node_modules/.cache` left out). */
export async function packDirectory(dir: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  const stream = tar.c(
    {
      gzip: true,
      cwd: dir,
      portable: true,
      filter: (p) => !/(^|\/)\.git(\/|$)|(^|\/)node_modules\/\.cache(\/|$)/.test(p),
    },
    fs.readdirSync(dir),
  );
  for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** `KEY=value` lines (dotenv syntax, Node's `util.parseEnv`). */
function readEnvFile(file: string): Record<string, string> {
  try {
    return parseEnv(fs.readFileSync(file, 'utf8')) as Record<string, string>;
  } catch (err) {
    throw new CliError(`Cannot read --env-file ${file}: ${(err as Error).message}`, EXIT.usage);
  }
}

const formatLog = (l: LogEvent) =>
  `${l.ts ?? ''} ${l.stream === 'stderr' ? 'ERR' : l.stream === 'platform' ? (l.level ?? 'info').toUpperCase() : 'OUT'} ${l.execution_id ? `[${l.execution_id}] ` : ''}${l.message}`.trim();

export function agentCommands(program: Command): void {
  const agents = program.command('agents').description('Agent identities and deployments');

  agents
    .command('create')
    .description('Create an agent; its client secret is printed once')
    .requiredOption('--name <name>', 'agent name')
    .option('--description <text>', 'what the agent does')
    .action(async (o: { name: string; description?: string }, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const agent = await client(g).agents.create({
        name: o.name,
        ...(o.description ? { description: o.description } : {}),
      });
      output(
        g,
        agent,
        (v) =>
          `Created agent ${v.id} (${v.name}).\n  client_id      ${v.client_id}\n  client_secret  ${v.client_secret}   (shown once: store it now)\nUse them as AGENT_PLATFORM_CLIENT_ID / AGENT_PLATFORM_CLIENT_SECRET.`,
      );
    });

  agents
    .command('list')
    .description("List your account's agents")
    .action(async (_o, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const all = await client(g).agents.list({ limit: 100 }).toArray();
      output(g, all, (v) => table(v, ['id', 'name', 'status', 'client_id', 'created_at']));
    });

  agents
    .command('rotate-secret <id>')
    .description('Issue a new client secret (printed once)')
    .option('--grace <seconds>', 'how long the old secret keeps working', '0')
    .action(async (id: string, o: { grace: string }, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const grace = Number(o.grace);
      if (!Number.isInteger(grace) || grace < 0)
        throw new CliError(`--grace must be a whole number of seconds, got ${o.grace}`, EXIT.usage);
      const res = await client(g).agents.rotateSecret(id, { grace_period_seconds: grace });
      output(g, res, (v) => `New client secret for ${id} (shown once):\n\n  ${v.client_secret}\n`);
    });

  agents
    .command('subscribe <id> <service>')
    .description('Let the agent call the tools of a service (your account must be subscribed to it or own it)')
    .action(async (id: string, service: string, _o, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const sub = await client(g).agents.subscribeTools(id, { service });
      output(g, sub, (v) => `Agent ${id} may now call the tools of ${v.service}.`);
    });

  agents
    .command('unsubscribe <id> <service>')
    .description("Take a service's tools away from the agent")
    .action(async (id: string, service: string, _o, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      await client(g).agents.unsubscribeTools(id, service);
      output(
        g,
        { agent_id: id, service, unsubscribed: true },
        (v) => `Agent ${v.agent_id} no longer calls ${v.service}.`,
      );
    });

  agents
    .command('tools <id>')
    .description('List the services whose tools the agent may call')
    .action(async (id: string, _o, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const all = await client(g).agents.tools(id, { limit: 100 }).toArray();
      output(g, all, (v) => table(v, ['service_id', 'service', 'subscribed_at']));
    });

  agents
    .command('changes <id>')
    .description(
      "Tool definitions of the agent's services that changed (or were added) since it pinned them: they answer 409 to the agent until accepted",
    )
    .option('--service <name>', 'only this service (name or id)')
    .action(async (id: string, o: { service?: string }, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const changed = await client(g).agents.toolChanges(id, o.service ? { service: o.service } : {});
      output(g, changed, (v) =>
        v.length
          ? v.map((s) => `${s.service} (${s.service_id}):\n${changeRows(s.pending_changes)}`).join('\n\n')
          : 'No pending changes: every tool runs as the agent pinned it.',
      );
    });

  agents
    .command('accept-changes <id> <service>')
    .description("Accept the changed tool definitions of one of the agent's services (all, or those named with --tool)")
    .option('--tool <name...>', 'only these tools')
    .action(async (id: string, service: string, o: { tool?: string[] }, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const res = await client(g).agents.acceptToolChanges(id, {
        service,
        ...(o.tool?.length ? { tools: o.tool } : {}),
      });
      output(g, res, acceptedText);
    });

  agents
    .command('deploy <id> <path>')
    .description('Deploy a directory (packed with tar) or a .tar.gz, then wait until it is active or failed')
    .option('--env-file <file>', 'environment variables (KEY=value lines), stored encrypted')
    .option('--entrypoint <file>', 'module to load (default: package.json "main", else index.js)')
    .option('--description <text>', 'note for this version')
    .option('--no-wait', 'return once uploaded, without waiting for the prepare step')
    .option('--timeout <seconds>', 'how long to wait for the prepare step', '300')
    .action(
      async (
        id: string,
        target: string,
        o: { envFile?: string; entrypoint?: string; description?: string; wait: boolean; timeout: string },
        cmd: Command,
      ) => {
        const g = cmd.optsWithGlobals<GlobalOptions>();
        let stat: fs.Stats;
        try {
          stat = fs.statSync(target);
        } catch {
          throw new CliError(`${target}: no such file or directory`, EXIT.usage);
        }
        const artifact = stat.isDirectory() ? await packDirectory(target) : fs.readFileSync(target);
        const env = o.envFile ? readEnvFile(o.envFile) : undefined;
        const sdk = client(g);
        // The artifact is packed above and the SDK reports the size of the whole request body before
        // its first byte, so the bar starts with its real total and never changes it.
        const bar =
          !g.json && process.stderr.isTTY
            ? new cliProgress.SingleBar(
                { format: 'Uploading [{bar}] {percentage}% {value}/{total} bytes', stream: process.stderr },
                cliProgress.Presets.shades_classic,
              )
            : null;
        let started = false;
        if (!g.json && !bar)
          process.stderr.write(
            `Uploading ${artifact.length} bytes (${stat.isDirectory() ? `packed from ${target}` : path.basename(target)})…\n`,
          );
        let dep = await sdk.deployments
          .deploy(id, {
            artifact,
            filename: stat.isDirectory() ? `${path.basename(path.resolve(target))}.tar.gz` : path.basename(target),
            ...(env ? { env } : {}),
            ...(o.entrypoint ? { entrypoint: o.entrypoint } : {}),
            ...(o.description ? { description: o.description } : {}),
            onUploadProgress: (sent, total) => {
              if (!started) bar?.start(total, sent);
              else bar?.update(sent);
              started = true;
            },
          })
          .finally(() => started && bar?.stop());
        if (!g.json) process.stderr.write(`Uploaded: deployment ${dep.id} v${dep.version}, preparing…\n`);
        const deadline = Date.now() + Number(o.timeout) * 1000;
        while (o.wait && dep.status === 'preparing') {
          if (Date.now() > deadline)
            throw new CliError(
              `Deployment ${dep.id} still preparing after ${o.timeout} s; check \`agent-platform agents logs ${id}\` or deploy again.`,
              EXIT.failure,
            );
          await new Promise((r) => setTimeout(r, 500));
          const page = await sdk.deployments.list(id, { limit: 20 }).page();
          dep = page.data.find((d) => d.id === dep.id) ?? dep;
        }
        output(
          g,
          dep,
          (v) =>
            `Deployment ${v.id} v${v.version}: ${v.status}${v.failure_reason ? ` — ${v.failure_reason}` : ''} (${v.artifact.files} files, ${v.artifact.size_bytes} bytes, entrypoint ${v.entrypoint})`,
        );
        if (dep.status === 'failed') process.exitCode = EXIT.failure;
      },
    );

  agents
    .command('invoke <id>')
    .description("Run the agent's active deployment with an input")
    .option('--input <json>', 'input passed to the handler (JSON)', 'null')
    .option('--async', 'queue the run and return at once')
    .option('--timeout-ms <ms>', 'wall-clock limit of the run')
    .action(async (id: string, o: { input: string; async?: boolean; timeoutMs?: string }, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const input = parseJsonFlag('--input', o.input);
      const exe = await client(g).deployments.invoke(id, {
        input,
        ...(o.async ? { async: true } : {}),
        ...(o.timeoutMs ? { timeout_ms: Number(o.timeoutMs) } : {}),
      });
      output(g, exe, (v) => {
        const lines = [`Execution ${v.id}: ${v.status}${v.duration_ms !== null ? ` in ${v.duration_ms} ms` : ''}`];
        if (v.error) lines.push(`Error ${v.error.code}: ${v.error.message}`);
        if ('output' in v && v.output !== undefined && v.output !== null)
          lines.push(`Output: ${JSON.stringify(v.output, null, 2)}`);
        if ('logs' in v && Array.isArray(v.logs) && v.logs.length)
          lines.push('Logs:', ...v.logs.map((l) => `  ${formatLog(l)}`));
        return lines.join('\n');
      });
      if (exe.status === 'failed' || exe.status === 'timed_out') process.exitCode = EXIT.failure;
    });

  agents
    .command('logs <id>')
    .description("Print the log lines of the agent's runs (--follow keeps streaming new ones)")
    .option('--execution <exeId>', 'only this run')
    .option('-f, --follow', 'keep printing new lines until Ctrl-C (or until the run ends with --execution)')
    .action(async (id: string, o: { execution?: string; follow?: boolean }, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const abort = new AbortController();
      const stop = () => abort.abort();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      try {
        for await (const line of client(g).deployments.logs(id, {
          ...(o.execution ? { executionId: o.execution } : {}),
          follow: !!o.follow,
          signal: abort.signal,
        })) {
          process.stdout.write(g.json ? `${JSON.stringify(line)}\n` : `${formatLog(line)}\n`);
        }
      } finally {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
      }
    });
}
