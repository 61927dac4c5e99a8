/**
 * `signup`, `login` (the spec's 5-step flow with a loopback redirect, RFC 8252 §7.3), `logout`, `whoami`.
 * The redirect listener binds 127.0.0.1 on a free port, accepts one `/callback` carrying the
 * `state` it was given, and closes.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { AgentPlatform } from '@agent-platform/sdk';
import type { Command } from 'commander';
import { isCancel, password } from '@clack/prompts';
import open from 'open';
import { apiUrl, client, CliError, EXIT, output, type GlobalOptions } from '../context.js';
import { CredentialsFile } from '../store.js';

const PAGE = (title: string, text: string) =>
  `<!doctype html><meta charset="utf-8"><title>${title}</title><body style="font-family:system-ui;margin:3rem"><h1>${title}</h1><p>${text}</p></body>`;

interface Redirect {
  code: string;
  state: string;
  iss?: string;
}

/** Listen on 127.0.0.1:`port` (0 = any) and resolve with the first `/callback` whose `state` matches. */
async function loopback(
  port: number,
  state: () => string,
  timeoutMs: number,
): Promise<{ redirectUri: string; redirect: Promise<Redirect>; close: () => void }> {
  const server = http.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) =>
      reject(new CliError(`Cannot listen on 127.0.0.1:${port} for the sign-in redirect: ${err.message}`, EXIT.failure)),
    );
    server.listen(port, '127.0.0.1', resolve);
  });
  const redirectUri = `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`;
  let timer: NodeJS.Timeout | undefined;
  const redirect = new Promise<Redirect>((resolve, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new CliError(
            `No sign-in within ${Math.round(timeoutMs / 1000)} s; run \`agent-platform login\` again.`,
            EXIT.auth,
          ),
        ),
      timeoutMs,
    );
    server.on('request', (req, res) => {
      const url = new URL(req.url ?? '/', redirectUri);
      const send = (status: number, title: string, text: string) =>
        res
          .writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
          .end(PAGE(title, text));
      if (url.pathname !== '/callback')
        return send(404, 'Not found', 'This address only receives the sign-in redirect.');
      const q = url.searchParams;
      if (q.get('state') !== state())
        return send(
          400,
          'Unexpected sign-in answer',
          'The state does not match this login; start it again from the terminal.',
        );
      if (q.get('error')) {
        send(400, 'Sign-in failed', q.get('error_description') ?? q.get('error')!);
        return reject(
          new CliError(
            `Sign-in failed: ${q.get('error')}${q.get('error_description') ? ` (${q.get('error_description')})` : ''}`,
            EXIT.auth,
          ),
        );
      }
      const code = q.get('code');
      if (!code) return send(400, 'Sign-in failed', 'The redirect carries no authorization code.');
      send(200, 'Signed in', 'You can close this tab and return to the terminal.');
      resolve({ code, state: q.get('state')!, ...(q.get('iss') ? { iss: q.get('iss')! } : {}) });
    });
  });
  return {
    redirectUri,
    redirect,
    close: () => {
      clearTimeout(timer);
      server.closeAllConnections();
      server.close();
    },
  };
}

/** The password from standard input (`--password-stdin`, one line) or a hidden prompt on a terminal. */
async function readPassword(fromStdin: boolean): Promise<string> {
  if (fromStdin) {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks)
      .toString('utf8')
      .replace(/\r?\n$/, '');
  }
  if (!process.stdin.isTTY)
    throw new CliError('No terminal to ask for the password: pipe it with --password-stdin', EXIT.usage);
  const answer = await password({
    message: 'Password (8 characters or more)',
    validate: (v) => (v && v.length >= 8 ? undefined : 'at least 8 characters'),
  });
  if (isCancel(answer)) throw new CliError('Canceled', EXIT.usage);
  return answer;
}

export function authCommands(program: Command): void {
  program
    .command('signup')
    .description('Create an account with an e-mail and a password (then `agent-platform login`)')
    .requiredOption('--email <email>', 'your e-mail address')
    .option('--name <name>', 'your name')
    .option('--password-stdin', 'read the password from standard input instead of asking')
    .action(async (o: { email: string; name?: string; passwordStdin?: boolean }, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const pw = await readPassword(!!o.passwordStdin);
      const sdk = new AgentPlatform({
        baseUrl: apiUrl(g),
        env: {},
        headers: { 'user-agent': 'agent-platform-cli/0.1.0' },
      });
      const profile = await sdk.auth.register({ email: o.email, password: pw, ...(o.name ? { name: o.name } : {}) });
      output(g, profile, (v) => `Created the account ${v.email ?? o.email}. Sign in with \`agent-platform login\`.`);
    });

  program
    .command('login')
    .description('Sign in through the browser (OAuth 2.0 authorization code + PKCE, loopback redirect)')
    .option('--no-browser', 'print the sign-in URL instead of opening a browser')
    .option('--port <port>', 'loopback port for the redirect (default: a free one)', '0')
    .option('--timeout <seconds>', 'how long to wait for the sign-in', '300')
    .action(async (o: { browser: boolean; port: string; timeout: string }, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const baseUrl = apiUrl(g);
      const port = Number(o.port);
      const timeout = Number(o.timeout);
      if (!Number.isInteger(port) || port < 0 || port > 65535)
        throw new CliError(`--port must be 0..65535, got ${o.port}`, EXIT.usage);
      if (!(timeout > 0))
        throw new CliError(`--timeout must be a positive number of seconds, got ${o.timeout}`, EXIT.usage);
      // A fresh client: stored tokens of an earlier login play no part in a new one.
      const sdk = new AgentPlatform({ baseUrl, env: {}, headers: { 'user-agent': 'agent-platform-cli/0.1.0' } });
      let state = '';
      const lb = await loopback(port, () => state, timeout * 1000);
      try {
        const start = await sdk.auth.startLogin(lb.redirectUri);
        state = start.state;
        process.stderr.write(
          `Open this URL in a browser to sign in:\n\n  ${start.auth_url}\n\nWaiting for the sign-in on ${lb.redirectUri} (Ctrl-C to cancel)…\n`,
        );
        if (o.browser) open(start.auth_url).catch(() => undefined);
        const redirect = await lb.redirect;
        await sdk.auth.callback({ ...redirect, redirect_uri: lb.redirectUri });
        const me = await sdk.auth.me();
        const tokens = await sdk.tokenStorage.get();
        const file = new CredentialsFile();
        file.set(baseUrl, { ...tokens!, email: me.email ?? undefined });
        output(
          g,
          { url: baseUrl, user_id: me.user_id, email: me.email, roles: me.roles, credentials_file: file.file },
          (v) =>
            `Signed in to ${v.url} as ${v.email ?? v.user_id} (roles ${v.roles.join(', ')}).\nTokens saved in ${v.credentials_file}.`,
        );
      } finally {
        lb.close();
      }
    });

  program
    .command('logout')
    .description('Forget the tokens stored for this API URL')
    .action((_o, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const baseUrl = apiUrl(g);
      const file = new CredentialsFile();
      const had = file.get(baseUrl) !== null;
      file.set(baseUrl, null);
      output(g, { url: baseUrl, signed_out: had }, (v) =>
        v.signed_out ? `Signed out of ${v.url}.` : `Not signed in to ${v.url}; nothing to do.`,
      );
    });

  program
    .command('whoami')
    .description('Show the signed-in user (or the owner of the API key in use)')
    .action(async (_o, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const me = await client(g).auth.me();
      output(
        g,
        me,
        (v) =>
          `${v.email ?? v.user_id}\n  user id  ${v.user_id}\n  roles    ${v.roles.join(', ')}\n  server   ${apiUrl(g)}`,
      );
    });
}
