/**
 * A developer's first run with nothing but the `agent-platform` command (the built CLI through its
 * committed launcher, as real processes) against a real server process on loopback and a real
 * test upstream: sign up, sign in through the browser, create an API key and use it, register a
 * service, verify its domain, set its checklist tests, publish, subscribe, execute a tool, export
 * the tools for a model API and run a model's tool call, create an agent, subscribe it, deploy its
 * code with the progress bar (on a pseudo-terminal), invoke it (it calls the tool) and read its logs.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { weatherManifest } from '../modules/publishing/helpers.js';
import { BIN, cliTestSetup } from './run.js';

const { tmp, server, api, cli, json, login } = await cliTestSetup('ap-first-');

/** The agent's code: calls the subscribed tool through the runtime's `context.tools`, and logs. */
const AGENT_CODE = `export default async function handler(input, context) {
  console.log('weather for', input.city);
  const r = await context.tools.execute(input.service, 'get_weather', { city: input.city });
  return { weather: r.output };
}
`;

/** The CLI on a pseudo-terminal (`script`), so the upload progress bar is drawn; its output with the terminal's control codes. */
function onTerminal(args: string[], env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const command = [process.execPath, BIN, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  return new Promise((resolve) => {
    const child = spawn('script', ['-qefc', command, '/dev/null'], {
      env: {
        PATH: process.env.PATH!,
        HOME: tmp,
        XDG_CONFIG_HOME: path.join(tmp, 'config'),
        AGENT_PLATFORM_URL: server.base,
        TERM: 'xterm',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('exit', (code) => resolve({ code, output }));
  });
}

describe('first run with the CLI only', () => {
  it('goes from sign-up to an invoked agent that calls a published tool', async () => {
    const creds = { email: `first-${Date.now()}@example.test`, password: 'a long enough password' };
    const signup = await cli(
      ['signup', '--email', creds.email, '--password-stdin', '--json'],
      {},
      undefined,
      `${creds.password}\n`,
    );
    expect(signup.code, signup.stderr).toBe(0);
    expect(JSON.parse(signup.stdout).email).toBe(creds.email);
    expect((await login(creds)).email).toBe(creds.email);

    // From here on an API key from the environment, as a script would run.
    const key = await json(['keys', 'create', '--name', 'first run']);
    const env = { XDG_CONFIG_HOME: path.join(tmp, 'no-login'), AGENT_PLATFORM_API_KEY: key.key };

    const manifest = path.join(tmp, 'service.json');
    fs.writeFileSync(manifest, JSON.stringify(weatherManifest(api.url)));
    const svc = await json(['services', 'register', manifest], env);
    expect(svc.status).toBe('draft');

    const pending = await cli(['services', 'verify-domain', svc.id], env);
    expect(pending.code, pending.stderr).toBe(0);
    expect(pending.stdout).toContain(`${api.url}/.well-known/agent-platform-verification.txt`);
    // What the printed instructions say to serve is what the upstream serves.
    api.verificationToken = JSON.parse(/HTTP: serve (".*?") at /.exec(pending.stdout)![1]);
    expect((await cli(['services', 'verify-domain', svc.id], env)).stdout).toMatch(/verified/);
    const tests = JSON.stringify([
      { tool: 'get_weather', arguments: { city: 'Oslo' } },
      { tool: 'get_user', arguments: { id: '7' } },
    ]);
    expect((await cli(['services', 'verification-config', svc.id, '--tests', tests], env)).code).toBe(0);
    const published = await cli(['services', 'publish', svc.id, '--watch', '--interval', '100'], env);
    expect(published.code, published.stderr).toBe(0);
    expect(published.stdout).toContain('service published, verification passed');

    const sub = await json(['subscriptions', 'create', svc.name], env);
    expect(sub).toMatchObject({ service_id: svc.id, status: 'active' });
    expect((await cli(['subscriptions', 'list'], env)).stdout).toContain(svc.id);

    const executed = await json(['tools', 'execute', svc.name, 'get_weather', '--args', '{"city":"Lisbon"}'], env);
    expect(executed).toMatchObject({ status: 'succeeded', output: { city: 'Lisbon', temp_c: 21 } });

    const exported = JSON.parse((await cli(['tools', 'export', '--format', 'openai'], env)).stdout);
    const fn = exported.find((t: { function: { name: string } }) => t.function.name === `${svc.name}__get_weather`);
    expect(fn.function.strict).toBe(true);
    const toolCall = {
      id: 'call_1',
      type: 'function',
      function: { name: fn.function.name, arguments: '{"city":"Porto"}' },
    };
    const called = await json(['tools', 'call', JSON.stringify(toolCall)], env);
    expect(called.message).toEqual({
      role: 'tool',
      tool_call_id: 'call_1',
      content: JSON.stringify({ city: 'Porto', temp_c: 21 }),
    });

    const agent = await json(['agents', 'create', '--name', 'weather agent'], env);
    const subscribed = await json(['agents', 'subscribe', agent.id, svc.name], env);
    expect(subscribed).toMatchObject({ service_id: svc.id, service: svc.name });
    expect((await cli(['agents', 'tools', agent.id], env)).stdout).toContain(svc.name);

    const dir = path.join(tmp, 'agent');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'index.mjs'), AGENT_CODE);
    fs.writeFileSync(
      path.join(dir, 'package.json'),
      JSON.stringify({ name: 'weather-agent', type: 'module', main: 'index.mjs' }),
    );
    const deploy = await onTerminal(['agents', 'deploy', agent.id, dir], env);
    expect(deploy.code, deploy.output).toBe(0);
    expect(deploy.output).toMatch(/: active \(/);
    // Every frame of the bar shows the same total, and the last one reaches it.
    const frames = [...deploy.output.matchAll(/(\d+)\/(\d+) bytes/g)].map((m) => ({
      sent: Number(m[1]),
      total: Number(m[2]),
    }));
    expect(frames.length).toBeGreaterThan(0);
    expect(new Set(frames.map((f) => f.total)).size).toBe(1);
    expect(frames.at(-1)!.sent).toBe(frames[0].total);

    const run = await json(
      ['agents', 'invoke', agent.id, '--input', JSON.stringify({ city: 'Oslo', service: svc.name })],
      env,
    );
    expect(run).toMatchObject({ status: 'succeeded', output: { weather: { city: 'Oslo', temp_c: 21 } } });
    const logs = await cli(['agents', 'logs', agent.id, '--execution', run.id], env);
    expect(logs.code, logs.stderr).toBe(0);
    expect(logs.stdout).toContain('weather for Oslo');
  }, 300_000);
});
