/** MCP test helpers: the SDK's own client over Streamable HTTP against a listening app. */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

export interface McpConnection {
  client: Client;
  transport: StreamableHTTPClientTransport;
  /** `tools/call` returning the result with `structuredContent` typed loosely. */
  call(name: string, args?: Record<string, unknown>): Promise<CallToolResult & { structuredContent?: any }>;
  close(): Promise<void>;
}

/** Connect an SDK `Client` to `<base>/mcp<query>` with `headers` (a bearer token, an API key…). */
export async function connectMcp(
  base: string,
  headers: Record<string, string>,
  opts: { name?: string; query?: string } = {},
): Promise<McpConnection> {
  const client = new Client({ name: opts.name ?? 'vitest-mcp', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp${opts.query ?? ''}`), {
    requestInit: { headers },
  });
  await client.connect(transport);
  return {
    client,
    transport,
    call: async (name, args = {}) =>
      (await client.callTool({ name, arguments: args })) as CallToolResult & { structuredContent?: any },
    close: () => client.close(),
  };
}
