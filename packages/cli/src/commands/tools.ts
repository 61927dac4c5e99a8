/**
 * `tools execute|export|call`: run a tool of a subscribed service, export the subscribed tools as
 * OpenAI / Anthropic / Gemini function definitions, and run a tool call a model made.
 */
import fs from 'node:fs';
import type { Command } from 'commander';
import type { ToolExportFormat } from '@agent-platform/sdk';
import { client, CliError, EXIT, output, parseJsonFlag, type GlobalOptions } from '../context.js';

const FORMATS: ToolExportFormat[] = ['openai', 'openai-responses', 'anthropic', 'gemini'];

/** A JSON argument given inline, as `@file`, or `-` for standard input. */
function jsonInput(flag: string, value: string): unknown {
  if (value === '-' || value.startsWith('@')) {
    const file = value === '-' ? 0 : value.slice(1);
    try {
      return parseJsonFlag(flag, fs.readFileSync(file, 'utf8'));
    } catch (err) {
      if (err instanceof CliError) throw err;
      throw new CliError(
        `Cannot read ${value === '-' ? 'standard input' : file}: ${(err as Error).message}`,
        EXIT.usage,
      );
    }
  }
  return parseJsonFlag(flag, value);
}

export function toolCommands(program: Command): void {
  const tools = program
    .command('tools')
    .description('Call subscribed tools, and use them from model APIs (OpenAI, Anthropic, Gemini)');

  tools
    .command('execute <service> <tool>')
    .description('Run a tool of a service you are subscribed to (or own), in a new session unless --session is given')
    .option('--args <json>', 'arguments (JSON object, @file or - for stdin)', '{}')
    .option('--session <id>', 'record the call in this session')
    .option('--timeout-ms <ms>', 'upstream timeout')
    .option('--approval-id <id>', 'after "approval required": the granted approval of exactly this call (single use)')
    .action(
      async (
        service: string,
        tool: string,
        o: { args: string; session?: string; timeoutMs?: string; approvalId?: string },
        cmd: Command,
      ) => {
        const g = cmd.optsWithGlobals<GlobalOptions>();
        const args = jsonInput('--args', o.args);
        if (typeof args !== 'object' || args === null || Array.isArray(args))
          throw new CliError('--args must be a JSON object', EXIT.usage);
        const sdk = client(g);
        const session = o.session ?? (await sdk.sessions.create({ name: 'cli' })).id;
        const res = await sdk.sessions.execute(session, {
          service,
          tool,
          arguments: args as Record<string, unknown>,
          ...(o.timeoutMs ? { timeout_ms: Number(o.timeoutMs) } : {}),
          ...(o.approvalId ? { approval_id: o.approvalId } : {}),
        });
        output(g, { session_id: session, ...res }, (v) =>
          [
            `Execution ${v.execution_id} in ${v.session_id}: ${v.status}${v.http_status !== undefined ? ` (HTTP ${v.http_status})` : ''} in ${v.duration_ms} ms`,
            ...(v.error ? [`Error ${v.error.code}: ${v.error.message}`] : []),
            JSON.stringify(v.output, null, 2),
          ].join('\n'),
        );
        if (res.status === 'failed') process.exitCode = EXIT.failure;
      },
    );

  tools
    .command('export')
    .description("Print your subscribed tools as the provider's `tools` list (JSON)")
    .requiredOption('--format <format>', FORMATS.join(' | '))
    .option('--out <file>', 'write to a file instead of standard output')
    .option(
      '--full',
      'print the whole answer (with `functions`: which service and tool each name calls), not only `tools`',
    )
    .action(async (o: { format: string; out?: string; full?: boolean }, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      if (!FORMATS.includes(o.format as ToolExportFormat))
        throw new CliError(`--format must be one of ${FORMATS.join(', ')}, got ${o.format}`, EXIT.usage);
      const exported = await client(g).tools.export(o.format as ToolExportFormat);
      const text = `${JSON.stringify(o.full ? exported : exported.tools, null, 2)}\n`;
      if (o.out) {
        fs.writeFileSync(o.out, text);
        process.stderr.write(`Wrote ${exported.functions.length} tool(s) to ${o.out}\n`);
      } else process.stdout.write(text);
    });

  tools
    .command('call <toolCall>')
    .description(
      "Run a model's tool call (JSON as its API returned it: OpenAI tool_calls[i], Anthropic tool_use, Gemini functionCall; @file or - for stdin) and print the result message for the model",
    )
    .option('--session <id>', 'record the call in this session (default: a new one)')
    .action(async (toolCall: string, o: { session?: string }, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const body = jsonInput('<toolCall>', toolCall);
      if (typeof body !== 'object' || body === null || Array.isArray(body))
        throw new CliError('The tool call must be a JSON object', EXIT.usage);
      const res = await client(g).tools.call(body, o.session ? { sessionId: o.session } : {});
      output(
        g,
        res,
        (v) =>
          `${v.service}/${v.tool} (${v.format}): ${v.result.status} in session ${v.session_id}\n${JSON.stringify(v.message, null, 2)}`,
      );
      if (res.result.status === 'failed') process.exitCode = EXIT.failure;
    });
}
