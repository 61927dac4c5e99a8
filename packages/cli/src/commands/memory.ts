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
    .action(async (content: string, o: { session?: string; agent?: string; metadata?: string }, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const metadata = o.metadata === undefined ? undefined : parseJsonFlag('--metadata', o.metadata);
      if (metadata !== undefined && (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata))) throw new CliError('--metadata must be a JSON object', EXIT.usage);
      const m = await client(g).memory.add({ content, ...(o.session ? { session_id: o.session } : {}), ...(o.agent ? { agent_id: o.agent } : {}), ...(metadata ? { metadata: metadata as Record<string, unknown> } : {}) });
      output(g, m, (v) => `Stored memory ${v.id}.`);
    });

  memory
    .command('search <query>')
    .description('Find the memories most relevant to a query')
    .option('--limit <n>', 'how many', '10')
    .option('--mode <mode>', 'hybrid | semantic | keyword')
    .option('--session <id>', 'only this session')
    .option('--agent <id>', 'only this agent')
    .action(async (q: string, o: { limit: string; mode?: string; session?: string; agent?: string }, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const limit = Number(o.limit);
      if (!Number.isInteger(limit) || limit < 1) throw new CliError(`--limit must be a positive whole number, got ${o.limit}`, EXIT.usage);
      const res = await client(g).memory.search({ q, limit, ...(o.mode ? { mode: o.mode as 'hybrid' } : {}), ...(o.session ? { session_id: o.session } : {}), ...(o.agent ? { agent_id: o.agent } : {}) });
      output(g, res, (v) => (v.data.length ? v.data.map((m) => `${m.score.toFixed(3)}  ${m.id}  ${m.content.length > 100 ? `${m.content.slice(0, 97)}…` : m.content}`).join('\n') : `No memories match "${q}".`));
    });
}
