/**
 * Real upstream servers on loopback for the execution tests: a small HTTP API that records every
 * request it receives (so tests can assert that nothing was sent), and an MCP server (Streamable
 * HTTP, stateless) built with the MCP SDK. Both listen on 127.0.0.1 with an ephemeral port.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll } from 'vitest';

/** One request as the upstream saw it. */
export interface SeenRequest {
  method: string;
  /** Request target as received (path + query). */
  url: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** Result of the signature check when the upstream knows its signing secret; null otherwise. */
  signatureValid: boolean | null;
}

/** The verification function of docs/upstream-signing.md, verbatim (the upstream's side). */
export function verifyAgentPlatform(
  req: { method?: string; url?: string; headers: http.IncomingHttpHeaders },
  rawBody: Buffer | undefined,
  secret: string,
  toleranceSeconds = 300,
): boolean {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(req.headers['x-agent-platform-signature'] ?? ''));
  if (!m || Math.abs(Date.now() / 1000 - Number(m[1])) > toleranceSeconds) return false;
  const bodyHash = createHash('sha256')
    .update(rawBody ?? '')
    .digest('hex');
  const payload = `${m[1]}.${req.method}.${req.url}.${bodyHash}`;
  const expected = createHmac('sha256', secret).update(payload).digest();
  return timingSafeEqual(expected, Buffer.from(m[2], 'hex'));
}

export interface ToolUpstream {
  url: string;
  port: number;
  seen: SeenRequest[];
  /** Set after registering the service: the upstream then verifies every request's signature. */
  signingSecret: string | null;
  /** Requests whose path starts with `prefix`. */
  seenAt(prefix: string): SeenRequest[];
  close(): Promise<void>;
}

function json(res: http.ServerResponse, status: number, body: unknown): void {
  const s = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(s) });
  res.end(s);
}

/**
 * The HTTP upstream. Routes:
 * - `GET /items/:id?…` → 200 `{ id, query, auth }` (echoes path param, query and credential headers)
 * - `POST /items` → 201 echo of the JSON body
 * - `GET /missing` → 404 JSON, `GET /boom` → 500 text
 * - `GET /hang` → never answers; `GET /big` → 2 MiB JSON; `GET /text` → text/plain;
 *   `GET /malformed` → `application/json` that does not parse
 * - `GET /redirect?to=<url>` → 302 to `to`
 * - `GET /fast` → tiny JSON (benchmarks)
 * - `GET /nul` → JSON whose key and string hold U+0000 (which PostgreSQL's jsonb cannot store)
 */
export async function startToolUpstream(): Promise<ToolUpstream> {
  const seen: SeenRequest[] = [];
  const hanging = new Set<http.ServerResponse>();
  const state: ToolUpstream = {
    url: '',
    port: 0,
    seen,
    signingSecret: null,
    seenAt: (prefix) => seen.filter((r) => r.url.startsWith(prefix)),
    close: async () => {
      for (const r of hanging) r.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      seen.push({
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body,
        signatureValid: state.signingSecret ? verifyAgentPlatform(req, body, state.signingSecret) : null,
      });
      const u = new URL(req.url ?? '/', 'http://upstream.invalid');
      const p = u.pathname;
      const item = /^\/items\/([^/]+)$/.exec(p);
      if (req.method === 'GET' && item) {
        const query: Record<string, string | string[]> = {};
        for (const k of new Set(u.searchParams.keys())) {
          const all = u.searchParams.getAll(k);
          query[k] = all.length > 1 ? all : all[0];
        }
        return json(res, 200, {
          id: decodeURIComponent(item[1]),
          query,
          auth: { authorization: req.headers.authorization ?? null, 'x-api-key': req.headers['x-api-key'] ?? null },
        });
      }
      if (req.method === 'POST' && p === '/items') {
        let parsed: unknown = null;
        try {
          parsed = JSON.parse(body.toString('utf8'));
        } catch {
          return json(res, 400, { error: 'bad json' });
        }
        return json(res, 201, { created: parsed, content_type: req.headers['content-type'] ?? null });
      }
      if (p === '/missing') return json(res, 404, { error: 'no such thing' });
      if (p === '/boom') {
        res.writeHead(500, { 'content-type': 'text/plain' });
        return res.end('internal kaboom');
      }
      if (p === '/hang') {
        hanging.add(res);
        res.on('close', () => hanging.delete(res));
        return;
      }
      if (p === '/big') return json(res, 200, { blob: 'x'.repeat(2 * 1024 * 1024) });
      if (p === '/text') {
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
        return res.end('hello, plain world');
      }
      if (p === '/malformed') {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end('{"unterminated": ');
      }
      if (p === '/redirect') {
        res.writeHead(302, { location: u.searchParams.get('to') ?? '/items/redirected' });
        return res.end();
      }
      if (p === '/fast') return json(res, 200, { ok: true, n: 42 });
      if (p === '/nul') return json(res, 200, { 'k\u0000ey': 'a\u0000b', list: ['\u0000'] });
      json(res, 404, { error: `no route ${req.method} ${p}` });
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  state.port = port;
  state.url = `http://127.0.0.1:${port}`;
  afterAll(() => state.close());
  return state;
}

/** An extra tool of {@link startMcpUpstream}, as its `tools/list` shows it (name, schema, MCP annotations). */
export interface ExtraMcpTool {
  name: string;
  description?: string;
  inputSchema?: { type: 'object'; properties?: Record<string, unknown> };
  annotations?: Record<string, unknown>;
}

/**
 * The MCP upstream (stateless Streamable HTTP at `/mcp`): tools `add` {a, b} and `explode`, then
 * `extra` (read on every `tools/list`, so a test can change it between syncs; a call of one answers
 * `{ ok: true, tool }`).
 */
export async function startMcpUpstream(extra: ExtraMcpTool[] = []): Promise<{
  url: string;
  seen: SeenRequest[];
  calls: Array<{ name: string; args: unknown }>;
  close(): Promise<void>;
}> {
  const seen: SeenRequest[] = [];
  const calls: Array<{ name: string; args: unknown }> = [];
  const makeServer = () => {
    const s = new Server({ name: 'test-mcp', version: '1.0.0' }, { capabilities: { tools: {} } });
    s.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: [
        {
          name: 'add',
          description: 'Add two numbers',
          inputSchema: {
            type: 'object',
            properties: { a: { type: 'number' }, b: { type: 'number' } },
            required: ['a', 'b'],
          },
        },
        { name: 'explode', description: 'Always fails', inputSchema: { type: 'object', properties: {} } },
        ...extra.map((t) => ({ description: '', inputSchema: { type: 'object' as const, properties: {} }, ...t })),
      ],
    }));
    s.setRequestHandler(CallToolRequestSchema, async (req) => {
      calls.push({ name: req.params.name, args: req.params.arguments });
      if (req.params.name === 'add') {
        const { a, b } = req.params.arguments as { a: number; b: number };
        return { content: [{ type: 'text', text: JSON.stringify({ sum: a + b }) }], structuredContent: { sum: a + b } };
      }
      if (extra.some((t) => t.name === req.params.name)) {
        const out = { ok: true, tool: req.params.name };
        return { content: [{ type: 'text', text: JSON.stringify(out) }], structuredContent: out };
      }
      return { content: [{ type: 'text', text: 'it exploded' }], isError: true };
    });
    return s;
  };
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body, signatureValid: null });
    if (req.method !== 'POST') {
      res.writeHead(405).end();
      return;
    }
    const mcp = makeServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void mcp.close();
    });
    await mcp.connect(transport);
    await transport.handleRequest(req, res, body.length ? JSON.parse(body.toString('utf8')) : undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  afterAll(close);
  return { url: `http://127.0.0.1:${port}/mcp`, seen, calls, close };
}
