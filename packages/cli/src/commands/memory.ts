/** `memory add|search`: your semantic memory. */
import type { Command } from 'commander';
import { client, CliError, EXIT, output, parseJsonFlag, type GlobalOptions } from '../context.js';

export function memoryCommands(program: Command): void {
  const memory = program.command('memory').description('Your semantic memory');

  memory
    .command('add <content>')
    .description('Store a memory (embedded for search)')
    .option('--session <id>', 'session it belongs to')
    .option('--agent <id>', 'agent it belongs to')
    .option('--metadata <json>', 'a JSON object stored with it')
    .option('--kind <kind>', 'note (default) or summary')
    .action(
      async (
        content: string,
        o: { session?: string; agent?: string; metadata?: string; kind?: string },
        cmd: Command,
      ) => {
        const g = cmd.optsWithGlobals<GlobalOptions>();
        const metadata = o.metadata === undefined ? undefined : parseJsonFlag('--metadata', o.metadata);
        if (metadata !== undefined && (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)))
          throw new CliError('--metadata must be a JSON object', EXIT.usage);
        if (o.kind !== undefined && o.kind !== 'note' && o.kind !== 'summary')
          throw new CliError(`--kind must be note or summary, got ${o.kind}`, EXIT.usage);
        const kind = o.kind as 'note' | 'summary' | undefined;
        const m = await client(g).memory.add({
          content,
          ...(o.session ? { session_id: o.session } : {}),
          ...(o.agent ? { agent_id: o.agent } : {}),
          ...(metadata ? { metadata: metadata as Record<string, unknown> } : {}),
          ...(kind ? { kind } : {}),
        });
        output(g, m, (v) => `Stored ${v.kind} ${v.id}.`);
      },
    );

  memory
    .command('search <query>')
    .description('Find the memories most relevant to a query')
    .option('--limit <n>', 'how many', '10')
    .option('--mode <mode>', 'hybrid | semantic (vector) | keyword (text)')
    .option('--session <id>', 'only this session')
    .option('--agent <id>', 'only this agent')
    .option('--kind <kinds>', 'note, execution, summary (comma-separated) or all; default note,summary')
    .action(
      async (
        q: string,
        o: { limit: string; mode?: string; session?: string; agent?: string; kind?: string },
        cmd: Command,
      ) => {
        const g = cmd.optsWithGlobals<GlobalOptions>();
        const limit = Number(o.limit);
        if (!Number.isInteger(limit) || limit < 1)
          throw new CliError(`--limit must be a positive whole number, got ${o.limit}`, EXIT.usage);
        if (o.kind !== undefined && !/^(all|(note|execution|summary)(,(note|execution|summary))*)$/.test(o.kind)) {
          throw new CliError(
            `--kind must be all or kinds among note, execution, summary separated by commas, got ${o.kind}`,
            EXIT.usage,
          );
        }
        const mode =
          o.mode === undefined
            ? undefined
            : ({ hybrid: 'hybrid', semantic: 'vector', vector: 'vector', keyword: 'text', text: 'text' } as const)[
                o.mode as 'hybrid'
              ];
        if (o.mode !== undefined && !mode)
          throw new CliError(`--mode must be hybrid, semantic or keyword, got ${o.mode}`, EXIT.usage);
        const res = await client(g).memory.search({
          q,
          limit,
          ...(mode ? { mode } : {}),
          ...(o.session ? { session_id: o.session } : {}),
          ...(o.agent ? { agent_id: o.agent } : {}),
          ...(o.kind ? { kind: o.kind } : {}),
        });
        // score: the API's relevance, 0..1 (the order of the hits)
        const line = (m: (typeof res.data)[number]) =>
          `${m.score.toFixed(2)}  ${m.kind.padEnd(9)}  ${m.id}  ${m.content.length > 100 ? `${m.content.slice(0, 97)}…` : m.content}`;
        output(g, res, (v) => (v.data.length ? v.data.map(line).join('\n') : `No memories match "${q}".`));
      },
    );
}
