/**
 * A second MCP client the project does not write: the SDK's 2.x client package
 * (`@modelcontextprotocol/client`, the one the MCP Inspector is built on; the platform serves MCP
 * with the 1.x SDK) lists and calls the platform's tools over Streamable HTTP with a bearer token.
 * (The Inspector itself needs Node >= 22; README shows how to point it at /mcp.)
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { createUser, setupApp } from '../helpers/app.js';
import { listen, publish, registerService, subscribe } from '../helpers/exec.js';
import { startToolUpstream } from '../helpers/tool-upstream.js';

const { app, ctx } = await setupApp();
const base = await listen(app);

/** A connected 2.x client for `token`. */
async function connect(token: string): Promise<Client> {
  const client = new Client({ name: 'second-client', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  return client;
}

describe(`@modelcontextprotocol/client 2.x against /mcp (${ctx.database.engine})`, () => {
  it('lists the tools and calls search_tools and execute_tool', async () => {
    const upstream = await startToolUpstream();
    const owner = await createUser(app);
    const user = await createUser(app);
    const svc = await registerService(base, owner, {
      name: `inspected-${Date.now().toString(36)}`,
      description: 'Weather readings for a city',
      base_url: upstream.url,
      tools: [
        {
          name: 'reading',
          description: 'Current weather reading of a city',
          method: 'GET',
          path: '/items/{id}',
          input_schema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
        },
      ],
    });
    await publish(ctx, svc.id);
    await subscribe(base, user, svc.id);
    const client = await connect(user.token);
    try {
      const listed = await client.listTools();
      expect(listed.tools.map((t) => t.name)).toEqual(
        expect.arrayContaining(['search_tools', 'describe_tool', 'execute_tool', 'remember', 'recall']),
      );

      const found = (await client.callTool({ name: 'search_tools', arguments: { query: 'weather reading' } })) as {
        isError?: boolean;
        structuredContent: any;
      };
      expect(found.isError).toBeFalsy();
      expect(found.structuredContent.tools.map((t: { service: string }) => t.service)).toContain(svc.name);

      const executed = (await client.callTool({
        name: 'execute_tool',
        arguments: { service: svc.name, tool: 'reading', arguments: { id: 'oslo' } },
      })) as { structuredContent: any };
      expect(executed.structuredContent).toMatchObject({ status: 'succeeded', output: { id: 'oslo' } });
      expect(upstream.seenAt('/items/oslo')).toHaveLength(1);
    } finally {
      await client.close();
      await upstream.close();
    }
  });
});
