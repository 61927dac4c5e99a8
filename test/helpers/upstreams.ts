/**
 * Real upstream servers on 127.0.0.1 (ephemeral ports) for registry, publishing and execution
 * tests: a small JSON API, an OpenAPI-described API serving its own document, and an MCP server
 * built with the SDK's McpServer + StreamableHTTPServerTransport (stateful: sessions and SSE).
 *
 * Every factory returns `{ url, close, … }`; each server also serves the domain-verification file
 * (`/.well-known/agent-platform-verification.txt`) once `verificationToken` is set, and records
 * the requests it saw.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { stringify as toYaml } from 'yaml';
import { z } from 'zod';

/** One request as an upstream saw it. */
export interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A running upstream. */
export interface Upstream {
  /** `http://127.0.0.1:<port>` (no trailing slash). */
  url: string;
  port: number;
  seen: Seen[];
  /** Served at `/.well-known/agent-platform-verification.txt` when set (404 otherwise). */
  verificationToken: string | null;
  close(): Promise<void>;
}

type Handler = (req: http.IncomingMessage, body: string, res: http.ServerResponse, self: Upstream) => unknown;

/** Send JSON. */
export function sendJson(
  res: http.ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const s = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(s)),
    ...headers,
  });
  res.end(s);
}

async function listen(handler: Handler): Promise<Upstream> {
  const self: Upstream = { url: '', port: 0, seen: [], verificationToken: null, close: async () => undefined };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      self.seen.push({ method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers, body });
      if (req.url === '/.well-known/agent-platform-verification.txt') {
        if (!self.verificationToken) return sendJson(res, 404, { error: 'not found' });
        res.writeHead(200, { 'content-type': 'text/plain' });
        return res.end(`${self.verificationToken}\n`);
      }
      Promise.resolve(handler(req, body, res, self)).catch((err) => {
        if (!res.headersSent) sendJson(res, 500, { error: String(err) });
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  self.port = (server.address() as AddressInfo).port;
  self.url = `http://127.0.0.1:${self.port}`;
  self.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return self;
}

/**
 * A small JSON API:
 * - `GET /weather?city=X` → `{ city, temp_c: 21 }` (400 without city)
 * - `GET /users/:id` → `{ id, name }`
 * - `POST /echo` → 200 echo of the JSON body
 * - `GET /fail` → 500; `GET /slow` → answers after 3 s
 * - `GET /redirect?to=<url>` → 302 to `to`
 * - `GET /big` → ~2 MiB JSON
 */
export async function startJsonApi(): Promise<Upstream> {
  return listen((req, body, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    if (req.method === 'GET' && u.pathname === '/weather') {
      const city = u.searchParams.get('city');
      if (!city) return sendJson(res, 400, { error: 'city is required' });
      return sendJson(res, 200, { city, temp_c: 21 });
    }
    const user = /^\/users\/([^/]+)$/.exec(u.pathname);
    if (req.method === 'GET' && user)
      return sendJson(res, 200, { id: decodeURIComponent(user[1]), name: `User ${user[1]}` });
    if (req.method === 'POST' && u.pathname === '/echo') return sendJson(res, 200, body ? JSON.parse(body) : null);
    if (u.pathname === '/fail') return sendJson(res, 500, { error: 'upstream broke' });
    if (u.pathname === '/slow') return void setTimeout(() => sendJson(res, 200, { slow: true }), 3000);
    if (u.pathname === '/redirect') {
      res.writeHead(302, { location: u.searchParams.get('to') ?? '/' });
      return res.end();
    }
    if (u.pathname === '/big') return sendJson(res, 200, { data: 'x'.repeat(2 * 1024 * 1024) });
    return sendJson(res, 404, { error: 'not found' });
  });
}

/** The OpenAPI 3.0 document of {@link startOpenApiServer} (servers → its own URL). */
export function petStoreDocument(serverUrl: string): Record<string, unknown> {
  return {
    openapi: '3.0.3',
    info: { title: 'Pet Store', version: '1.2.0', description: 'Pets, by id and by tag.' },
    servers: [{ url: serverUrl }],
    components: {
      securitySchemes: { key: { type: 'apiKey', in: 'header', name: 'x-api-key' } },
      parameters: {
        Limit: {
          name: 'limit',
          in: 'query',
          schema: { type: 'integer', minimum: 1, maximum: 100 },
          description: 'page size',
        },
      },
      schemas: {
        Pet: {
          type: 'object',
          required: ['id', 'name'],
          properties: { id: { type: 'integer' }, name: { type: 'string' }, tag: { type: 'string', nullable: true } },
        },
        NewPet: {
          type: 'object',
          required: ['name'],
          properties: { name: { type: 'string', minLength: 1 }, tag: { type: 'string' } },
        },
      },
    },
    security: [{ key: [] }],
    paths: {
      '/pets': {
        get: {
          operationId: 'listPets',
          summary: 'List pets',
          parameters: [
            { $ref: '#/components/parameters/Limit' },
            { name: 'x-trace', in: 'header', schema: { type: 'string' } },
          ],
          responses: {
            '200': {
              description: 'pets',
              content: {
                'application/json': { schema: { type: 'array', items: { $ref: '#/components/schemas/Pet' } } },
              },
            },
          },
        },
        post: {
          operationId: 'createPet',
          summary: 'Create a pet',
          requestBody: {
            required: true,
            content: { 'application/json': { schema: { $ref: '#/components/schemas/NewPet' } } },
          },
          responses: {
            '201': {
              description: 'created',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/Pet' } } },
            },
          },
        },
      },
      '/pets/{petId}': {
        parameters: [{ name: 'petId', in: 'path', required: true, schema: { type: 'integer' }, description: 'pet id' }],
        get: {
          summary: 'Get one pet',
          responses: {
            '200': {
              description: 'pet',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/Pet' } } },
            },
          },
        },
      },
    },
  };
}

/**
 * An OpenAPI-described pet store: `GET /openapi.json` (its document; `/openapi.yaml` as YAML), `GET /pets`, `POST /pets`
 * (201), `GET /pets/:id` (404 for unknown ids). Requests must carry `x-api-key: pet-key`.
 */
export async function startOpenApiServer(): Promise<Upstream> {
  const pets = [
    { id: 1, name: 'Rex', tag: 'dog' },
    { id: 2, name: 'Tom', tag: 'cat' },
  ];
  return listen((req, body, res, self) => {
    const u = new URL(req.url ?? '/', 'http://x');
    if (u.pathname === '/openapi.json') return sendJson(res, 200, petStoreDocument(self.url));
    if (u.pathname === '/openapi.yaml') {
      res.writeHead(200, { 'content-type': 'application/yaml' });
      return res.end(toYaml(petStoreDocument(self.url)));
    }
    if (req.headers['x-api-key'] !== 'pet-key') return sendJson(res, 401, { error: 'missing or wrong x-api-key' });
    if (u.pathname === '/pets' && req.method === 'GET')
      return sendJson(res, 200, pets.slice(0, Number(u.searchParams.get('limit') ?? 100)));
    if (u.pathname === '/pets' && req.method === 'POST') {
      const input = JSON.parse(body || '{}') as { name?: string; tag?: string };
      const pet = { id: pets.length + 1, name: input.name ?? '', tag: input.tag ?? null };
      return sendJson(res, 201, pet);
    }
    const one = /^\/pets\/(\d+)$/.exec(u.pathname);
    if (one && req.method === 'GET') {
      const pet = pets.find((p) => p.id === Number(one[1]));
      return pet ? sendJson(res, 200, pet) : sendJson(res, 404, { error: 'no such pet' });
    }
    return sendJson(res, 404, { error: 'not found' });
  });
}

function makeMcpServer(): McpServer {
  const server = new McpServer({ name: 'Calculator MCP', version: '2.1.0' });
  server.registerTool(
    'add',
    {
      description: 'Add two numbers',
      inputSchema: { a: z.number(), b: z.number() },
      outputSchema: { sum: z.number() },
    },
    async ({ a, b }) => ({
      content: [{ type: 'text', text: JSON.stringify({ sum: a + b }) }],
      structuredContent: { sum: a + b },
    }),
  );
  server.registerTool(
    'echo',
    { description: 'Echo a message', inputSchema: { message: z.string() } },
    async ({ message }) => ({ content: [{ type: 'text', text: message }] }),
  );
  server.registerTool('explode', { description: 'Always fails', inputSchema: {} }, async () => ({
    content: [{ type: 'text', text: 'kaboom' }],
    isError: true,
  }));
  return server;
}

/**
 * An MCP server (Streamable HTTP, stateful with `Mcp-Session-Id`, SSE responses) at `<url>/mcp`,
 * with tools `add` (a, b → structured `{ sum }`), `echo` (message) and `explode` (always an error
 * result). `mcpUrl` is the endpoint. When `requireToken` is set, requests need `Authorization: Bearer <token>`.
 */
export async function startMcpServer(
  opts: { requireToken?: string } = {},
): Promise<Upstream & { mcpUrl: string; sessions: () => number }> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const up = await listen(async (req, body, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    if (u.pathname !== '/mcp') return sendJson(res, 404, { error: 'not found' });
    if (opts.requireToken && req.headers.authorization !== `Bearer ${opts.requireToken}`)
      return sendJson(res, 401, { error: 'unauthorized' });
    const parsed = body ? JSON.parse(body) : undefined;
    const sid = req.headers['mcp-session-id'];
    let transport = typeof sid === 'string' ? transports.get(sid) : undefined;
    if (!transport) {
      if (req.method !== 'POST' || !isInitializeRequest(parsed))
        return sendJson(res, 400, { jsonrpc: '2.0', error: { code: -32000, message: 'No valid session' }, id: null });
      const t: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => void transports.set(id, t),
      });
      t.onclose = () => {
        if (t.sessionId) transports.delete(t.sessionId);
      };
      await makeMcpServer().connect(t);
      transport = t;
    }
    await transport.handleRequest(req, res, parsed);
  });
  const close = up.close;
  return Object.assign(up, {
    mcpUrl: `${up.url}/mcp`,
    sessions: () => transports.size,
    close: async () => {
      for (const t of transports.values()) await t.close().catch(() => undefined);
      await close();
    },
  });
}
