/**
 * The built `agent-platform` CLI as a child process against a real server process: browser login
 * on a loopback redirect (RFC 8252) with the test browser, tokens in a 0600 file under
 * XDG_CONFIG_HOME, API keys, env-only use, services, deploy a directory, invoke, logs, memory,
 * `--json`, and exit codes. `beforeAll` builds the packages (`tsc -b`, incremental).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AgentPlatform } from '../../packages/sdk/src/index.js';
import { weatherManifest } from '../modules/publishing/helpers.js';
import { HANDLERS } from '../modules/deployments/fixtures.js';
import { startOAuthUpstream } from '../helpers/oauth-upstream.js';
import { cliTestSetup, ROOT, type Run } from './run.js';

const { tmp, server, api, cli, json, login } = await cliTestSetup('ap-cli-');

const creds = { email: `cli-${Date.now()}@example.test`, password: 'a long enough password' };

describe('agent-platform login / whoami / logout', () => {
  it('signs in through the browser on a loopback redirect and stores the tokens 0600', async () => {
    await fetch(`${server.base}/auth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(creds),
    });
    const out = await login(creds);
    expect(out).toMatchObject({ url: server.base, email: creds.email });
    const file = path.join(tmp, 'config', 'agent-platform', 'credentials.json');
    expect(out.credentials_file).toBe(file);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    expect(JSON.parse(fs.readFileSync(file, 'utf8')).servers[server.base].refreshToken).toBeTruthy();

    expect((await json(['whoami'])).email).toBe(creds.email);
    expect((await cli(['whoami'])).stdout).toContain(creds.email);
  }, 120_000);

  it('keys create/list/revoke; an API key from the environment works without login', async () => {
    const key = await json(['keys', 'create', '--name', 'ci']);
    expect(key.key).toBeTruthy();
    expect(key.scopes).not.toContain('approvals:decide');
    const approver = await json([
      'keys',
      'create',
      '--name',
      'approver',
      '--scopes',
      'approvals:decide',
      'memory:read',
    ]);
    expect(approver.scopes).toEqual(['memory:read', 'approvals:decide']);
    expect((await cli(['keys', 'list'])).stdout).toMatch(/approver.*memory:read approvals:decide/);
    expect((await json(['keys', 'list'])).map((k: { id: string }) => k.id)).toContain(key.id);
    const noLogin = { XDG_CONFIG_HOME: path.join(tmp, 'empty'), AGENT_PLATFORM_API_KEY: key.key };
    expect((await json(['keys', 'list'], noLogin)).map((k: { name: string }) => k.name)).toContain('ci');
    expect((await cli(['keys', 'revoke', key.id])).code).toBe(0);
    const refused = await cli(['whoami'], noLogin);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toMatch(/agent-platform login|AGENT_PLATFORM_API_KEY/);
  }, 120_000);

  it('registers, lists and publishes a service with --watch', async () => {
    const manifestFile = path.join(tmp, 'manifest.json');
    fs.writeFileSync(manifestFile, JSON.stringify(weatherManifest(api.url)));
    const svc = await json(['services', 'register', manifestFile]);
    expect(svc.tools.map((t: { name: string }) => t.name)).toContain('get_weather');
    expect((await json(['services', 'list'])).map((s: { id: string }) => s.id)).toContain(svc.id);
    // Domain verification: the first call issues the token, the upstream serves it, the second verifies.
    api.verificationToken = (await json(['services', 'verify-domain', svc.id])).token;
    expect((await json(['services', 'verify-domain', svc.id])).status).toBe('verified');
    // Without a config every tool is tried, and `broken` always fails: the checklist fails, exit 1.
    const failed = await cli(['services', 'publish', svc.id, '--watch', '--interval', '100']);
    expect(failed.code, failed.stderr).toBe(1);
    expect(failed.stdout).toMatch(/verification failed\n[\s\S]*✖ functional verification: failed/);
    expect(
      (
        await json([
          'services',
          'verification-config',
          svc.id,
          '--tests',
          '[{"tool":"get_weather","arguments":{"city":"Oslo"}}]',
        ])
      ).tests,
    ).toHaveLength(1);
    const done = await json(['services', 'publish', svc.id, '--watch', '--interval', '100']);
    expect(done.status).toBe('published');
    expect(done.verification.state).toBe('passed');
  }, 120_000);

  it('creates an agent, deploys a directory with an env file, invokes it and prints its logs', async () => {
    const agent = await json(['agents', 'create', '--name', 'cli agent']);
    expect(agent.client_secret).toBeTruthy();
    expect((await json(['agents', 'list'])).map((a: { id: string }) => a.id)).toContain(agent.id);
    const dir = path.join(tmp, 'agent-src');
    fs.mkdirSync(path.join(dir, 'lib'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'index.mjs'), HANDLERS.echo);
    fs.writeFileSync(path.join(dir, 'lib', 'extra.txt'), 'packed too');
    const envFile = path.join(tmp, 'agent.env');
    fs.writeFileSync(envFile, 'API_TOKEN=abc\n# comment\nREGION="eu west"\n');
    const dep = await json(['agents', 'deploy', agent.id, dir, '--env-file', envFile]);
    expect(dep).toMatchObject({ status: 'active', entrypoint: 'index.mjs' });
    expect(dep.env_keys.sort()).toEqual(['API_TOKEN', 'REGION']);
    expect(dep.artifact.files).toBeGreaterThanOrEqual(2);

    const exe = await json(['agents', 'invoke', agent.id, '--input', '{"city":"Oslo"}']);
    expect(exe).toMatchObject({ status: 'succeeded', output: { echo: { city: 'Oslo' } } });
    const human = await cli(['agents', 'invoke', agent.id, '--input', '{"n":2}']);
    expect(human.stdout).toMatch(/Execution inv_\w+: succeeded/);

    const logs = await cli(['agents', 'logs', agent.id]);
    expect(logs.code).toBe(0);
    expect(logs.stdout).toContain('echo called {"city":"Oslo"}');
    expect(logs.stdout).toContain('ERR');
    const followed = await cli(['agents', 'logs', agent.id, '--execution', exe.id, '--follow', '--json']);
    expect(followed.code).toBe(0);
    expect(
      followed.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).message),
    ).toEqual([expect.stringContaining('echo called'), 'to stderr']);

    const secret = await json(['agents', 'rotate-secret', agent.id]);
    expect(secret.client_secret).not.toBe(agent.client_secret);
  }, 180_000);

  it('memory add and search', async () => {
    await json(['memory', 'add', 'The office plants are watered on Fridays']);
    await json(['memory', 'add', 'Quarterly planning starts in March', '--metadata', '{"team":"core"}']);
    const found = await json(['memory', 'search', 'when are the plants watered', '--limit', '1']);
    expect(found.data[0].content).toContain('watered on Fridays');
    // text output: the API's score (relevance, 0..1) with two decimals and the kind
    const text = await cli([
      'memory',
      'search',
      'when are the plants watered',
      '--limit',
      '1',
      '--kind',
      'note,summary',
    ]);
    expect(text.stdout).toMatch(/^[01]\.\d\d {2}note +mem_\w+ {2}The office plants are watered on Fridays/m);
    expect(found.data[0].score).toBeGreaterThan(0);
    expect(found.data[0].score).toBeLessThanOrEqual(1);
    const badKind = await cli(['memory', 'search', 'plants', '--kind', 'diary']);
    expect(badKind.code).toBe(2);
    expect(badKind.stderr).toContain('--kind');
  }, 120_000);

  it('subscriptions, agent tool subscriptions and connections (the consent URL printed as given)', async () => {
    const owner = await json(['services', 'list']);
    const published = owner.find((s: { status: string }) => s.status === 'published');
    const sub = await json(['subscriptions', 'create', published.name, '--plan', 'free']);
    expect((await json(['subscriptions', 'list'])).map((s: { id: string }) => s.id)).toContain(sub.id);
    const agent = await json(['agents', 'create', '--name', 'tools agent']);
    await json(['agents', 'subscribe', agent.id, published.name]);
    expect((await json(['agents', 'tools', agent.id])).map((t: { service: string }) => t.service)).toEqual([
      published.name,
    ]);
    await json(['agents', 'unsubscribe', agent.id, published.name]);
    expect(await json(['agents', 'tools', agent.id])).toEqual([]);
    expect((await json(['subscriptions', 'cancel', sub.id])).status).toBe('canceled');
    expect((await json(['subscriptions', 'list'])).map((s: { id: string }) => s.id)).not.toContain(sub.id);

    const up = await startOAuthUpstream({ redirectUri: `${server.base}/connections/callback` });
    try {
      const manifest = path.join(tmp, 'notes.json');
      const auth = {
        type: 'oauth2',
        issuer: up.issuer,
        client_id: up.clientId,
        client_secret: up.clientSecret,
        scopes: ['openid', 'notes:read'],
        resource: up.resource,
      };
      fs.writeFileSync(
        manifest,
        JSON.stringify({
          name: `notes-${Date.now()}`,
          description: 'Notes',
          base_url: up.apiUrl,
          auth,
          tools: [
            {
              name: 'list_notes',
              description: 'List my notes',
              method: 'GET',
              path: '/notes',
              input_schema: { type: 'object', properties: {} },
            },
          ],
        }),
      );
      const notes = await json(['services', 'register', manifest]);
      const started = await cli(['connections', 'create', notes.name]);
      expect(started.code, started.stderr).toBe(0);
      const url = /^ {2}(http\S+)$/m.exec(started.stdout)![1];
      expect(url.startsWith(server.base)).toBe(true);
      const [conn] = await json(['connections', 'list']);
      expect(conn).toMatchObject({ service: { name: notes.name }, status: 'pending' });
      expect(started.stdout).toContain(conn.id);
      expect((await json(['connections', 'delete', conn.id])).deleted).toBe(true);
      expect(await json(['connections', 'list'])).toEqual([]);
    } finally {
      await up.close();
    }
  }, 180_000);

  it('policies: schema, create (with a Cedar error at its line and column), evaluate, disable, delete', async () => {
    expect((await json(['policies', 'schema'])).schema).toContain('namespace Platform');
    const service = (await json(['services', 'list'])).find((s: { name: string }) => s.name.startsWith('weather'))!
      .name as string; // the service the publish test registered
    const bad = await cli(['policies', 'create', '--source', 'forbid(principal, action, resource) when { oops };']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/line 1/i);
    const file = path.join(tmp, 'oslo.cedar');
    fs.writeFileSync(
      file,
      `forbid(principal, action, resource == Platform::Tool::"${service}/get_weather") when { context.arguments.hasTag("city") && context.arguments.getTag("city") == "Oslo" };`,
    );
    const p = await json(['policies', 'create', '--file', file, '--description', 'no Oslo']);
    expect(p).toMatchObject({ scope: 'account', enabled: true, description: 'no Oslo' });
    expect((await json(['policies', 'list'])).map((x: { id: string }) => x.id)).toContain(p.id);
    const oslo = await json(['policies', 'evaluate', service, 'get_weather', '--args', '{"city":"Oslo"}']);
    expect(oslo.decision).toBe('deny');
    expect(JSON.stringify(oslo)).toContain(p.id);
    expect((await json(['policies', 'evaluate', service, 'get_weather', '--args', '{"city":"Rome"}'])).decision).toBe(
      'allow',
    );
    expect((await json(['policies', 'disable', p.id])).enabled).toBe(false);
    expect((await json(['policies', 'evaluate', service, 'get_weather', '--args', '{"city":"Oslo"}'])).decision).toBe(
      'allow',
    );
    expect((await cli(['policies', 'delete', p.id])).code).toBe(0);
    expect((await cli(['policies', 'show', p.id])).code).toBe(4);
  }, 120_000);

  it('answers mistakes with a message and an exit code a person can act on, then logs out', async () => {
    const badJson = await cli(['agents', 'invoke', 'agt_x', '--input', '{oops']);
    expect(badJson.code).toBe(2);
    expect(badJson.stderr).toContain('--input is not valid JSON');
    const missing = await cli(['agents', 'invoke', 'agt_nope', '--input', '{}']);
    expect(missing.code).toBe(4);
    expect(missing.stderr).toMatch(/Not found/);
    const usage = await cli(['keys', 'lst']);
    expect(usage.code).toBe(2);
    const down = await cli(['whoami'], { AGENT_PLATFORM_URL: 'http://127.0.0.1:9' });
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/Cannot reach http:\/\/127\.0\.0\.1:9/);

    expect((await json(['logout'])).signed_out).toBe(true);
    const after = await cli(['whoami', '--json']);
    expect(after.code).toBe(3);
    expect(JSON.parse(after.stdout).exit_code).toBe(3);
  }, 120_000);
});

describe('examples/ (run with tsx against the built SDK)', () => {
  function example(name: string, env: Record<string, string>): Promise<Run> {
    return new Promise((resolve) => {
      const child = spawn(process.execPath, ['--import', 'tsx', path.join('examples', name)], {
        cwd: ROOT,
        env: { PATH: process.env.PATH!, HOME: tmp, AGENT_PLATFORM_URL: server.base, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('exit', (code) => resolve({ code, stdout, stderr }));
    });
  }

  it('publish-and-call, agent-kv-memory and memory-search run to completion', async () => {
    const owner = new AgentPlatform({ baseUrl: server.base, env: {} });
    await owner.auth.testToken({ roles: ['enterprise'] });
    const { key } = await owner.apiKeys.create({ name: 'examples' });
    const agent = await owner.agents.create({ name: 'counter' });

    const published = await example('publish-and-call.ts', { AGENT_PLATFORM_API_KEY: key });
    expect(published.code, published.stderr).toBe(0);
    expect(published.stdout).toMatch(/: published\n/);
    expect(published.stdout).toContain('get_weather → {"city":"Lisbon","temp_c":18}');

    const agentEnv = { AGENT_PLATFORM_CLIENT_ID: agent.client_id, AGENT_PLATFORM_CLIENT_SECRET: agent.client_secret };
    expect((await example('agent-kv-memory.ts', agentEnv)).stdout).toContain('run number 1');
    const second = await example('agent-kv-memory.ts', agentEnv);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toContain('run number 2');
    expect(second.stdout).toContain('state/runs 2');

    const searched = await example('memory-search.ts', { AGENT_PLATFORM_API_KEY: key });
    expect(searched.code, searched.stderr).toBe(0);
    expect(searched.stdout.split('\n')[0]).toContain('rotates every Monday');
  }, 180_000);
});
