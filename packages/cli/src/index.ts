#!/usr/bin/env node
/**
 * agent-platform: the developer command line of the Agent Platform, built on @agent-platform/sdk.
 * Configuration: `--url` or `AGENT_PLATFORM_URL`; credentials from `AGENT_PLATFORM_API_KEY`,
 * `AGENT_PLATFORM_CLIENT_ID` + `AGENT_PLATFORM_CLIENT_SECRET`, or `agent-platform login`.
 * Exit codes: 0 ok, 1 failure, 2 usage, 3 not signed in / not allowed, 4 not found.
 */
import { Command, CommanderError } from 'commander';
import { describeError, EXIT, type GlobalOptions } from './context.js';
import { agentCommands } from './commands/agents.js';
import { authCommands } from './commands/auth.js';
import { keyCommands } from './commands/keys.js';
import { memoryCommands } from './commands/memory.js';
import { serviceCommands } from './commands/services.js';
import { subscriptionCommands } from './commands/subscriptions.js';
import { connectionCommands } from './commands/connections.js';
import { approvalCommands } from './commands/approvals.js';
import { policyCommands } from './commands/policies.js';
import { toolCommands } from './commands/tools.js';

const program = new Command('agent-platform')
  .description('Developer CLI of the Agent Platform API')
  .version('0.1.0')
  .option('--url <url>', 'API URL (env AGENT_PLATFORM_URL, default http://localhost:3000)')
  .option('--json', 'print results as JSON (for scripts)')
  .showHelpAfterError()
  .exitOverride();

authCommands(program);
keyCommands(program);
serviceCommands(program);
subscriptionCommands(program);
toolCommands(program);
agentCommands(program);
connectionCommands(program);
approvalCommands(program);
policyCommands(program);
memoryCommands(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    // Help and version exit 0; unknown commands and bad options are usage errors.
    process.exitCode = err.exitCode === 0 ? EXIT.ok : EXIT.usage;
  } else {
    const g = program.opts<GlobalOptions>();
    const { message, exitCode } = describeError(err, g);
    if (g.json)
      process.stdout.write(
        `${JSON.stringify({ error: message, exit_code: exitCode, ...(err instanceof Error && 'code' in err ? { code: (err as { code: unknown }).code } : {}) })}\n`,
      );
    process.stderr.write(`Error: ${message}\n`);
    process.exitCode = exitCode;
  }
}
