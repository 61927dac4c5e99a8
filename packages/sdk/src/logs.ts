/**
 * Log lines of deployed agents' runs. `GET /v2/agents/{id}/logs` and
 * `GET /v2/agents/{id}/executions/{exeId}/logs` with `?follow=true` answer Server-Sent Events (WHATWG
 * HTML §9.2) on servers that have them; on servers without those routes the lines are read from
 * the execution records (`logs` of `GET /v2/agents/{id}/executions/{exeId}`), polled when following.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { Core } from './core.js';
import { AgentPlatformError } from './errors.js';

/** One line a run wrote. `ts` is ISO 8601; `execution_id` names the run (when known). */
export interface LogEvent {
  execution_id?: string;
  ts?: string;
  /** `platform`: a structured line the handler wrote with `context.log` (with `level` and `fields`). */
  stream?: 'stdout' | 'stderr' | 'platform';
  level?: 'info' | 'warn' | 'error';
  fields?: Record<string, unknown>;
  message: string;
}

interface ExecutionReader {
  execution(
    agentId: string,
    executionId: string,
  ): Promise<{
    id: string;
    status: string;
    logs: Array<{
      ts: string;
      stream: 'stdout' | 'stderr' | 'platform';
      message: string;
      level?: 'info' | 'warn' | 'error';
      fields?: Record<string, unknown>;
    }>;
  }>;
  executions(
    agentId: string,
    query?: { limit?: number },
  ): { page(cursor?: string): Promise<{ data: Array<{ id: string; status: string }> }> };
}

const FINISHED = new Set(['succeeded', 'failed', 'timed_out']);

/** See {@link DeploymentsResource.logs}. */
export async function* streamLogs(
  core: Core,
  reader: ExecutionReader,
  agentId: string,
  opts: { executionId?: string; follow?: boolean; signal?: AbortSignal; pollMs?: number },
): AsyncGenerator<LogEvent> {
  const agentPath = `${core.baseUrl}/v2/agents/${encodeURIComponent(agentId)}`;
  const url = `${opts.executionId ? `${agentPath}/executions/${encodeURIComponent(opts.executionId)}/logs` : `${agentPath}/logs`}${opts.follow ? '?follow=true' : ''}`;
  let res: Response;
  try {
    res = await core.fetch(
      new Request(url, { headers: { accept: 'text/event-stream, application/json' }, signal: opts.signal }),
    );
  } catch (err) {
    if (opts.signal?.aborted) return;
    throw err;
  }
  if (res.ok) {
    if ((res.headers.get('content-type') ?? '').includes('text/event-stream'))
      yield* readEvents(res, !!opts.executionId, opts.signal);
    else {
      const body = (await res.json()) as { data?: unknown[]; logs?: unknown[] };
      for (const item of body.data ?? body.logs ?? []) yield toEvent(item);
    }
    return;
  }
  const err = await AgentPlatformError.fromFetchResponse(res);
  // Only a server without the logs routes falls back; a missing agent or run is the caller's error.
  if (res.status !== 404 || !err.detail.startsWith('No route for')) throw err;
  yield* pollExecutions(reader, agentId, opts);
}

/** SSE `log` events as lines. An `end` event closes one run: the stream of that run, not an agent's tail (it carries one `end` per run). */
async function* readEvents(res: Response, oneRun: boolean, signal?: AbortSignal): AsyncGenerator<LogEvent> {
  const queue: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (e) => queue.push(e) });
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      parser.feed(value);
      while (queue.length) {
        const e = queue.shift()!;
        if (e.event === 'end' || e.event === 'done') {
          if (oneRun) return;
          continue;
        }
        const ev = toEvent(parseData(e.data));
        if (ev.message !== '') yield ev;
      }
    }
  } catch (err) {
    if (signal?.aborted) return;
    throw err;
  } finally {
    reader.releaseLock();
    await res.body?.cancel().catch(() => undefined);
  }
}

async function* pollExecutions(
  reader: ExecutionReader,
  agentId: string,
  opts: { executionId?: string; follow?: boolean; signal?: AbortSignal; pollMs?: number },
): AsyncGenerator<LogEvent> {
  const seen = new Map<string, number>();
  const done = new Set<string>();
  for (;;) {
    const ids = opts.executionId
      ? [opts.executionId]
      : (await reader.executions(agentId, { limit: 100 }).page()).data.map((e) => e.id).reverse();
    for (const id of ids) {
      if (done.has(id)) continue;
      const exe = await reader.execution(agentId, id);
      const from = seen.get(id) ?? 0;
      for (const line of exe.logs.slice(from)) yield { execution_id: id, ...line };
      seen.set(id, exe.logs.length);
      if (FINISHED.has(exe.status)) done.add(id);
    }
    if (!opts.follow || opts.signal?.aborted) return;
    if (opts.executionId && done.has(opts.executionId)) return;
    await sleep(opts.pollMs ?? 1000, opts.signal);
    if (opts.signal?.aborted) return;
  }
}

function parseData(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    return data;
  }
}

function toEvent(item: unknown): LogEvent {
  if (typeof item === 'string') return { message: item };
  const o = (item ?? {}) as Record<string, unknown>;
  const message =
    typeof o.message === 'string'
      ? o.message
      : typeof o.line === 'string'
        ? o.line
        : typeof o.text === 'string'
          ? o.text
          : '';
  // The platform names the run `invocation_id` in log lines.
  const run =
    typeof o.execution_id === 'string'
      ? o.execution_id
      : typeof o.invocation_id === 'string'
        ? o.invocation_id
        : undefined;
  return {
    message,
    ...(run ? { execution_id: run } : {}),
    ...(typeof o.ts === 'string' ? { ts: o.ts } : {}),
    ...(o.stream === 'stdout' || o.stream === 'stderr' || o.stream === 'platform' ? { stream: o.stream } : {}),
    ...(o.level === 'info' || o.level === 'warn' || o.level === 'error' ? { level: o.level } : {}),
    ...(o.fields && typeof o.fields === 'object' && !Array.isArray(o.fields)
      ? { fields: o.fields as Record<string, unknown> }
      : {}),
  };
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
