/**
 * Running the built `agent-platform` CLI as a child process in the CLI tests: a clean environment
 * (no inherited credentials), the browser sign-in on its loopback redirect driven by the test
 * browser, and the packages built once (`tsc -b`, incremental).
 */
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect } from 'vitest';
import { Browser, fetchSend } from '../helpers/browser.js';
import { startTestServer } from '../helpers/server.js';
import { startJsonApi } from '../helpers/upstreams.js';

export const ROOT = path.resolve(import.meta.dirname, '../..');
/** The committed launcher npm links as the `agent-platform` bin (it runs packages/cli/dist). */
export const BIN = path.join(ROOT, 'packages/cli/bin/agent-platform.js');

/** `tsc -b packages/sdk packages/cli` (call in `beforeAll`). */
export async function buildPackages(): Promise<void> {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  await promisify(execFile)(process.execPath, [tsc, '-b', 'packages/sdk', 'packages/cli'], { cwd: ROOT });
}

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * A runner of the CLI with only PATH, HOME, XDG_CONFIG_HOME under `home`, AGENT_PLATFORM_URL and
 * the given env. `cli(args, env, onStderr, stdin)`; `json(args, env)` adds `--json`, asserts exit 0
 * and parses stdout.
 */
export function cliRunner(home: string, baseUrl: string) {
  const cli = (
    args: string[],
    env: Record<string, string> = {},
    onStderr?: (text: string) => void,
    stdin?: string,
  ): Promise<Run> =>
    new Promise((resolve) => {
      const child = spawn(process.execPath, [BIN, ...args], {
        env: {
          PATH: process.env.PATH!,
          HOME: home,
          XDG_CONFIG_HOME: path.join(home, 'config'),
          AGENT_PLATFORM_URL: baseUrl,
          ...env,
        },
        stdio: [stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      });
      if (stdin !== undefined) child.stdin!.end(stdin);
      let stdout = '';
      let stderr = '';
      child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr!.on('data', (d: Buffer) => {
        stderr += d.toString();
        onStderr?.(stderr);
      });
      child.on('exit', (code) => resolve({ code, stdout, stderr }));
    });
  const json = async (args: string[], env: Record<string, string> = {}): Promise<any> => {
    const r = await cli([...args, '--json'], env);
    if (r.code !== 0) throw new Error(`agent-platform ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
    return JSON.parse(r.stdout);
  };
  /** `login --no-browser --json`, signing in with `creds` in the test browser at the URL it prints. @returns the parsed output */
  const login = async (creds: { email: string; password: string }): Promise<any> => {
    let delivered: Promise<Response> | undefined;
    const r = await cli(['login', '--no-browser', '--json'], {}, (stderr) => {
      const url = /https?:\/\/\S+\/idp\/\S+/.exec(stderr)?.[0];
      if (!url || delivered) return;
      const redirectUri = new URL(url).searchParams.get('redirect_uri')!;
      expect(redirectUri).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);
      delivered = new Browser(fetchSend(baseUrl)).login(url, redirectUri, creds).then((final) => fetch(final));
    });
    expect(r.code, r.stderr).toBe(0);
    expect((await delivered!).status).toBe(200);
    return JSON.parse(r.stdout);
  };
  return { cli, json, login };
}

/**
 * What a CLI test file needs: a temporary HOME, a server process, the JSON test upstream, the
 * packages built before the tests and the {@link cliRunner}; all removed after the file.
 */
export async function cliTestSetup(prefix: string) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const server = await startTestServer();
  const api = await startJsonApi();
  afterAll(async () => {
    await api.close();
    await server.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  });
  beforeAll(buildPackages, 300_000);
  return { tmp, server, api, ...cliRunner(tmp, server.base) };
}
