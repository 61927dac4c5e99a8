/**
 * A second MCP client the project does not write: the MCP Inspector's CLI mode
 * (`@modelcontextprotocol/inspector`, built on the SDK's 2.x client packages) lists and calls the
 * platform's tools over Streamable HTTP with a bearer token, as a separate process.
 */
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createUser, setupApp } from '../helpers/app.js';
import { listen, publish, registerService, subscribe } from '../helpers/exec.js';
import { startToolUpstream } from '../helpers/tool-upstream.js';

const run = promisify(execFile);
const require = createRequire(import.meta.url);
const inspector = path.join(path.dirname(require.resolve('@modelcontextprotocol/inspector/package.json')), 'clients/launcher/build/index.js');

const { app, ctx } = await setupApp();
const base = await listen(app);

/** `mcp-inspector --cli <base>/mcp --method …` with the user's token; parsed JSON output. */
async function inspect(token: string, ...args: string[]): Promise<any> {
  const { stdout } = await run(process.execPath, [inspector, '--cli', `${base}/mcp`, '--transport', 'http', '--header', `Authorization: Bearer ${token}`, ...args], {
    timeout: 60_000,
    env: { ...process.env, MCP_CATALOG_PATH: path.join(process.env.TMPDIR ?? '/tmp', `mcp-catalog-${process.pid}.json`) },
  });
  return JSON.parse(stdout);
}

describe(`MCP Inspector CLI against /mcp (${ctx.database.engine})`, () => {
  // Three separate processes of a large CLI: generous time on a shared machine.
  it('lists the tools and calls search_tools and execute_tool', { timeout: 240_000 }, async () => {
    const upstream = await startToolUpstream();
    const owner = await createUser(app);
    const user = await createUser(app);
    const svc = await registerService(base, owner, {
      name: `inspected-${Date.now().toString(36)}`,
      description: 'Weather readings for a city',
      base_url: upstream.url,
      tools: [{ name: 'reading', description: 'Current weather reading of a city', method: 'GET', path: '/items/{id}', input_schema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] } }],
    });
    await publish(ctx, svc.id);
    await subscribe(base, user, svc.id);
    try {
      const listed = await inspect(user.token, '--method', 'tools/list');
      expect(listed.tools.map((t: { name: string }) => t.name)).toEqual(expect.arrayContaining(['search_tools', 'describe_tool', 'execute_tool', 'remember', 'recall']));

      const found = await inspect(user.token, '--method', 'tools/call', '--tool-name', 'search_tools', '--tool-arg', 'query=weather reading');
      expect(found.isError).toBeFalsy();
      expect(found.structuredContent.tools.map((t: { service: string }) => t.service)).toContain(svc.name);

      const executed = await inspect(user.token, '--method', 'tools/call', '--tool-name', 'execute_tool', '--tool-arg', `service=${svc.name}`, '--tool-arg', 'tool=reading', '--tool-arg', 'arguments={"id":"oslo"}');
      expect(executed.structuredContent).toMatchObject({ status: 'succeeded', output: { id: 'oslo' } });
      expect(upstream.seenAt('/items/oslo')).toHaveLength(1);
    } finally {
      await upstream.close();
    }
  });
});
