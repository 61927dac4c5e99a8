/** `services register|publish|list`: the services you own and their publish checklist. */
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { spinner } from '@clack/prompts';
import { parse as parseYaml } from 'yaml';
import { client, CliError, EXIT, output, parseJsonFlag, table, type GlobalOptions } from '../context.js';

/** The registration body for `file`: an OpenAPI document (`openapi` key, JSON or YAML) or a platform manifest. */
export function registrationBody(
  file: string,
  overrides: { name?: string; baseUrl?: string },
): Record<string, unknown> {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new CliError(`Cannot read ${file}: ${(err as Error).message}`, EXIT.usage);
  }
  let doc: unknown;
  try {
    doc = /\.ya?ml$/i.test(file) ? parseYaml(text) : JSON.parse(text);
  } catch (err) {
    throw new CliError(
      `${path.basename(file)} is not valid ${/\.ya?ml$/i.test(file) ? 'YAML' : 'JSON'}: ${(err as Error).message}`,
      EXIT.usage,
    );
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
    throw new CliError(`${file} must hold an object (a manifest or an OpenAPI document)`, EXIT.usage);
  const extra = {
    ...(overrides.name ? { name: overrides.name } : {}),
    ...(overrides.baseUrl ? { base_url: overrides.baseUrl } : {}),
  };
  const o = doc as Record<string, unknown>;
  return typeof o.openapi === 'string' || typeof o.swagger === 'string' ? { openapi: o, ...extra } : { ...o, ...extra };
}

const MARK: Record<string, string> = {
  passed: '✔',
  verified: '✔',
  failed: '✖',
  pending: '…',
  running: '…',
  not_started: '·',
};

type Checklist = Record<string, { status: string; detail: string }>;
const checklistText = (c: Checklist) =>
  Object.entries(c)
    .map(
      ([k, v]) => `  ${MARK[v.status] ?? '?'} ${k.replace(/_/g, ' ')}: ${v.status}${v.detail ? ` — ${v.detail}` : ''}`,
    )
    .join('\n');

export function serviceCommands(program: Command): void {
  const services = program.command('services').description('Services you own in the registry');

  services
    .command('register [file]')
    .description(
      'Register a service from a manifest (.json), an OpenAPI document (.json/.yaml) or an MCP server (--mcp)',
    )
    .option('--mcp <url>', 'register an MCP server by URL (Streamable HTTP)')
    .option('--name <slug>', 'service name (slug), overrides the file')
    .option('--base-url <url>', 'base URL of the API, overrides the file')
    .action(async (file: string | undefined, o: { mcp?: string; name?: string; baseUrl?: string }, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      if (!file && !o.mcp) throw new CliError('Give a manifest/OpenAPI file or --mcp <url>', EXIT.usage);
      if (file && o.mcp) throw new CliError('Give either a file or --mcp, not both', EXIT.usage);
      const body = o.mcp ? { mcp_url: o.mcp, ...(o.name ? { name: o.name } : {}) } : registrationBody(file!, o);
      const svc = await client(g).services.register(body);
      output(
        g,
        svc,
        (v) =>
          `Registered ${v.name} (${v.id}), status ${v.status}, ${v.tools.length} tool(s).${v.warnings.length ? `\nWarnings:\n${v.warnings.map((w) => `  - ${typeof w === 'string' ? w : JSON.stringify(w)}`).join('\n')}` : ''}\nSigning secret (shown once): ${v.signing_secret}`,
      );
    });

  services
    .command('list')
    .description('List the services you own')
    .action(async (_o, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const all = await client(g).services.listOwn({ limit: 100 }).toArray();
      output(g, all, (v) => table(v, ['id', 'name', 'status', 'tool_count', 'updated_at']));
    });

  services
    .command('verify-domain <id>')
    .description(
      "Prove you control the service's host: the first call issues a token, serve it (HTTP or DNS) and run it again",
    )
    .action(async (id: string, _o, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const v = await client(g).publishing.verifyDomain(id);
      output(g, v, (d) => {
        if (d.status === 'verified') return `${d.host}: verified${d.method ? ` (${d.method})` : ''}.`;
        const ways = d.methods.map((m) =>
          m.type === 'http'
            ? `  - HTTP: serve ${JSON.stringify(m.content ?? d.token)} at ${m.url}`
            : `  - DNS: ${m.record_type ?? 'TXT'} record ${m.name} = ${JSON.stringify(m.value ?? d.token)}`,
        );
        return `${d.host}: ${d.status}${d.detail ? ` — ${d.detail}` : ''}\nPublish one of these, then run \`agent-platform services verify-domain ${id}\` again:\n${ways.join('\n')}`;
      });
      if (v.status === 'failed') process.exitCode = EXIT.failure;
    });

  services
    .command('verification-config <id>')
    .description(
      'Set the test calls the publish checklist runs (JSON array of {tool, arguments, expect?}), or show them',
    )
    .option('--tests <json>', 'the tests, e.g. \'[{"tool":"get_weather","arguments":{"city":"Oslo"}}]\'')
    .option('--file <file>', 'read the tests from a JSON file')
    .action(async (id: string, o: { tests?: string; file?: string }, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      if (!o.tests && !o.file) throw new CliError('Give --tests <json> or --file <file>', EXIT.usage);
      if (o.tests && o.file) throw new CliError('Give either --tests or --file, not both', EXIT.usage);
      let text = o.tests ?? '';
      if (o.file) {
        try {
          text = fs.readFileSync(o.file, 'utf8');
        } catch (err) {
          throw new CliError(`Cannot read ${o.file}: ${(err as Error).message}`, EXIT.usage);
        }
      }
      const tests = parseJsonFlag(o.file ? o.file : '--tests', text);
      if (!Array.isArray(tests))
        throw new CliError('The tests must be a JSON array of {tool, arguments, expect?}', EXIT.usage);
      const saved = await client(g).publishing.setVerificationConfig(id, { tests: tests as never });
      output(
        g,
        saved,
        (v) =>
          `Saved ${v.tests.length} test(s) for ${v.service_id}: ${v.tests.map((t) => t.tool).join(', ')}. Run \`agent-platform services publish ${id} --watch\`.`,
      );
    });

  services
    .command('publish <id>')
    .description('Start the publish checklist; --watch follows it until it passes or fails')
    .option('--watch', 'show the checklist live until it finishes')
    .option('--interval <ms>', 'poll interval with --watch', '1000')
    .action(async (id: string, o: { watch?: boolean; interval: string }, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const sdk = client(g);
      let status = await sdk.publishing.publish(id);
      if (o.watch) {
        const live = !g.json && process.stderr.isTTY ? spinner({ output: process.stderr }) : null;
        live?.start('Running the publish checklist');
        let shown = '';
        while (
          status.verification.state === 'pending' ||
          status.verification.state === 'running' ||
          status.verification.state === 'not_started'
        ) {
          const text = checklistText(status.checklist as Checklist);
          if (!g.json && text !== shown) {
            if (live)
              live.message(
                `Checklist: ${Object.values(status.checklist as Checklist)
                  .map((c) => MARK[c.status] ?? '?')
                  .join(' ')}`,
              );
            else process.stderr.write(`${text}\n`);
            shown = text;
          }
          await new Promise((r) => setTimeout(r, Number(o.interval) || 1000));
          status = await sdk.publishing.verificationStatus(id);
        }
        live?.stop(`Checklist ${status.verification.state}`);
      }
      output(
        g,
        status,
        (v) =>
          `${v.service_id}: service ${v.status}, verification ${v.verification.state}\n${checklistText(v.checklist as Checklist)}`,
      );
      if (o.watch && status.verification.state === 'failed') process.exitCode = EXIT.failure;
    });
}
