/**
 * What every command shares: the client built from flags, environment and the stored login
 * (in that order of precedence), output in human or `--json` form, and errors a person can act on
 * with distinct exit codes.
 */
import { AgentPlatform, AgentPlatformError, ENV } from '@agent-platform/sdk';
import { CredentialsFile } from './store.js';

/** Exit codes (documented in the README "CLI" section). */
export const EXIT = { ok: 0, failure: 1, usage: 2, auth: 3, notFound: 4 } as const;

/** Flags every command accepts. */
export interface GlobalOptions {
  url?: string;
  json?: boolean;
}

/** A user-facing error: `message` says what to do; `exitCode` from {@link EXIT}. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT.failure,
  ) {
    super(message);
  }
}

/** The API URL: `--url`, else `AGENT_PLATFORM_URL`, else the local default. */
export function apiUrl(opts: GlobalOptions): string {
  return (opts.url ?? process.env[ENV.url] ?? 'http://localhost:3000').replace(/\/+$/, '');
}

/**
 * The SDK client: an API key or client credentials from the environment win; otherwise the tokens
 * stored by `login` for this URL (refreshed tokens are written back to the file).
 */
export function client(opts: GlobalOptions, credentials = new CredentialsFile()): AgentPlatform {
  const baseUrl = apiUrl(opts);
  const headers = { 'user-agent': 'agent-platform-cli/0.1.0' };
  if (process.env[ENV.apiKey] || (process.env[ENV.clientId] && process.env[ENV.clientSecret]))
    return new AgentPlatform({ baseUrl, headers });
  return new AgentPlatform({ baseUrl, headers, env: {}, tokenStorage: credentials.storage(baseUrl) });
}

/** Print `value` as JSON (`--json`) or through `human`. */
export function output<T>(opts: GlobalOptions, value: T, human: (v: T) => string): void {
  process.stdout.write(opts.json ? `${JSON.stringify(value, null, 2)}\n` : `${human(value)}\n`);
}

/** A plain text table: one row per item, columns padded to the widest cell. */
export function table(rows: Array<Record<string, unknown>>, columns: string[]): string {
  if (rows.length === 0) return '(none)';
  const cells = [
    columns,
    ...rows.map((r) => columns.map((c) => (r[c] === null || r[c] === undefined ? '-' : String(r[c])))),
  ];
  const widths = columns.map((_, i) => Math.max(...cells.map((row) => row[i].length)));
  return cells
    .map((row) =>
      row
        .map((c, i) => c.padEnd(widths[i]))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** Parse a JSON flag value. @throws CliError (usage) naming the flag. */
export function parseJsonFlag(flag: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new CliError(`${flag} is not valid JSON: ${(err as Error).message}`, EXIT.usage);
  }
}

/** Turn any failure into a message and exit code. */
export function describeError(err: unknown, _opts: GlobalOptions): { message: string; exitCode: number } {
  if (err instanceof CliError) return { message: err.message, exitCode: err.exitCode };
  if (err instanceof AgentPlatformError) {
    const fields = err.errors.map((e) => `\n  ${e.in ? `${e.in} ` : ''}${e.pointer || '/'}: ${e.message}`).join('');
    const ref = err.requestId ? ` (request id ${err.requestId})` : '';
    if (err.status === 0)
      return { message: `${err.detail}. Is the server running? Check --url or ${ENV.url}.`, exitCode: EXIT.failure };
    if (err.status === 401) {
      return {
        message: `Not signed in or the credentials were refused (${err.code}: ${err.detail}). Run \`agent-platform login\` or set ${ENV.apiKey}.${ref}`,
        exitCode: EXIT.auth,
      };
    }
    if (err.status === 403) return { message: `Not allowed (${err.code}): ${err.detail}${ref}`, exitCode: EXIT.auth };
    if (err.status === 404) return { message: `Not found: ${err.detail}${ref}`, exitCode: EXIT.notFound };
    if (err.status === 429)
      return {
        message: `Rate limited (${err.code}): ${err.detail}${err.retryAfterSeconds !== undefined ? `; retry in ${err.retryAfterSeconds} s` : ''}${ref}`,
        exitCode: EXIT.failure,
      };
    return {
      message: `${err.code} (HTTP ${err.status}): ${err.detail}${fields}${ref}`,
      exitCode: err.status === 400 || err.status === 413 || err.status === 415 ? EXIT.usage : EXIT.failure,
    };
  }
  return { message: (err as Error)?.message ?? String(err), exitCode: EXIT.failure };
}
