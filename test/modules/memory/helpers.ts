/**
 * Helpers of the memory tests: sessions with executions (through the sessions module's exported
 * functions, the way the executor records them) and a fake OpenAI-compatible server.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AppContext } from '../../../src/context.js';
import { newId } from '../../../src/http/ids.js';
import { rememberExecution } from '../../../src/modules/memory/runtime.js';
import { createSession } from '../../../src/modules/sessions/service.js';
import { recordExecution } from '../../../src/modules/sessions/usage.js';
import { LocalHashEmbedder } from '../../../src/modules/memory/embeddings.js';

/** A session of `userId` (optionally of one of its agents). */
export async function seedSession(
  ctx: AppContext,
  userId: string,
  opts: { agentId?: string; name?: string } = {},
): Promise<string> {
  const s = await createSession(ctx, { accountId: userId, agentId: opts.agentId ?? null }, { name: opts.name });
  return s.id;
}

/** One execution, recorded and remembered as the executor does it. */
export interface SeedExecution {
  tool: string;
  service?: string;
  args?: Record<string, unknown>;
  status?: 'succeeded' | 'failed';
  output?: unknown;
  error?: { code: string; message: string } | null;
  durationMs?: number;
  httpStatus?: number | null;
}

/** Record and remember executions in order; returns their ids. */
export async function seedExecutions(
  ctx: AppContext,
  userId: string,
  sessionId: string,
  agentId: string | null,
  list: SeedExecution[],
): Promise<string[]> {
  const ids: string[] = [];
  for (const e of list) {
    const id = newId('exe');
    const status = e.status ?? 'succeeded';
    const rec = {
      id,
      sessionId,
      userId,
      agentId,
      serviceId: `svc_${(e.service ?? 'travel').padEnd(26, '0').slice(0, 26)}`,
      toolId: `tool_${e.tool
        .replace(/[^a-z]/g, '')
        .padEnd(26, '0')
        .slice(0, 26)}`,
      toolName: e.tool,
      arguments: e.args ?? {},
      status,
      httpStatus: e.httpStatus === undefined ? (status === 'succeeded' ? 200 : null) : e.httpStatus,
      output: e.output ?? null,
      error:
        e.error ??
        (status === 'failed' ? { code: 'upstream_timeout', message: 'The upstream did not answer within 30 s' } : null),
      durationMs: e.durationMs ?? 120,
    };
    await recordExecution(ctx, rec);
    rememberExecution(ctx, { ...rec, executionId: id, serviceName: e.service ?? 'travel' });
    ids.push(id);
    await new Promise((r) => setTimeout(r, 2)); // distinct millisecond ids → a stable timeline order
  }
  return ids;
}

/** A fake OpenAI-compatible server: `/v1/embeddings` (hashed vectors) and `/v1/chat/completions`. */
export interface FakeOpenAI {
  url: string;
  requests: Array<{ path: string; auth: string | undefined; body: any }>;
  /** Status to answer with (200 = normal). */
  failWith: number;
  chatAnswer: string;
  close(): Promise<void>;
}

export async function startFakeOpenAI(dims: number): Promise<FakeOpenAI> {
  const emb = new LocalHashEmbedder(dims);
  const fake: FakeOpenAI = {
    url: '',
    requests: [],
    failWith: 200,
    chatAnswer: JSON.stringify({
      summary: 'The agent planned a trip to Lisbon and booked a hotel.',
      key_points: ['Hotel Aurora booked', 'Flight search done'],
    }),
    close: async () => undefined,
  };
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const body = raw ? JSON.parse(raw) : null;
      fake.requests.push({ path: req.url ?? '', auth: req.headers.authorization, body });
      res.setHeader('content-type', 'application/json');
      if (fake.failWith !== 200) {
        res.statusCode = fake.failWith;
        res.end(JSON.stringify({ error: { message: 'model overloaded' } }));
        return;
      }
      if (req.url === '/v1/embeddings') {
        const inputs: string[] = Array.isArray(body.input) ? body.input : [body.input];
        // not normalised on purpose (some servers do not normalise); reversed order to test `index`
        const data = inputs
          .map((t, index) => ({ object: 'embedding', index, embedding: Array.from(emb.embedOne(t), (x) => x * 3) }))
          .reverse();
        res.end(
          JSON.stringify({ object: 'list', data, model: body.model, usage: { prompt_tokens: 1, total_tokens: 1 } }),
        );
      } else if (req.url === '/v1/chat/completions') {
        res.end(
          JSON.stringify({
            id: 'chatcmpl-1',
            object: 'chat.completion',
            model: body.model,
            choices: [{ index: 0, message: { role: 'assistant', content: fake.chatAnswer }, finish_reason: 'stop' }],
          }),
        );
      } else {
        res.statusCode = 404;
        res.end('{}');
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.close = () => new Promise((r) => server.close(() => r()));
  return fake;
}
