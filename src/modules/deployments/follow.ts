/**
 * Live log lines of running invocations, for `…/logs?follow=true` as Server-Sent
 * Events (WHATWG HTML §9.2). In-process: the lines of an invocation running in this process are
 * kept here until it ends; followers of an invocation running in another process (a BullMQ
 * worker) see its lines when it ends, by polling its record.
 */
import { EventEmitter } from 'node:events';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { LogEntry } from '../../sandbox/runner.js';

/** One event to followers: a line, or the end of an invocation. */
export type FollowEvent =
  | { type: 'log'; invocationId: string; entry: LogEntry }
  | { type: 'end'; invocationId: string; status: string };

const hub = new EventEmitter();
hub.setMaxListeners(0);
/** Lines so far of the invocations running in this process. */
const running = new Map<string, LogEntry[]>();

/** Record and broadcast one line of `inv` (called by the sandbox as it captures it). */
export function publishLog(inv: { id: string; agentId: string }, entry: LogEntry): void {
  let lines = running.get(inv.id);
  if (!lines) running.set(inv.id, (lines = []));
  lines.push(entry);
  const ev: FollowEvent = { type: 'log', invocationId: inv.id, entry };
  hub.emit(`inv:${inv.id}`, ev);
  hub.emit(`agent:${inv.agentId}`, ev);
}

/** Broadcast the end of `inv` and forget its lines. */
export function publishEnd(inv: { id: string; agentId: string; status: string }): void {
  running.delete(inv.id);
  const ev: FollowEvent = { type: 'end', invocationId: inv.id, status: inv.status };
  hub.emit(`inv:${inv.id}`, ev);
  hub.emit(`agent:${inv.agentId}`, ev);
}

/** Whether `invocationId` runs in this process. */
export function runsHere(invocationId: string): boolean {
  return running.has(invocationId);
}

/**
 * Follow one invocation (`channel` `inv:<id>`) or an agent (`agent:<id>`): `listener` gets the
 * lines captured so far (invocation channel only), then each event. Returns the unsubscribe function.
 */
export function follow(channel: `inv:${string}` | `agent:${string}`, listener: (ev: FollowEvent) => void): () => void {
  hub.on(channel, listener);
  if (channel.startsWith('inv:')) {
    const id = channel.slice(4);
    for (const entry of [...(running.get(id) ?? [])]) listener({ type: 'log', invocationId: id, entry });
  }
  return () => hub.off(channel, listener);
}

/** An open SSE stream on `reply` (hijacked); `send` writes one event; a comment every 15 s keeps proxies from closing it. */
export function openEventStream(
  req: FastifyRequest,
  reply: FastifyReply,
  onClose: () => void,
): { send: (event: string, data: unknown, id?: string) => void; end: () => void } {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  res.write(': stream open\n\n');
  let ended = false;
  const ping = setInterval(() => res.write(': ping\n\n'), 15_000);
  ping.unref();
  const end = () => {
    if (ended) return;
    ended = true;
    clearInterval(ping);
    onClose();
    res.end();
  };
  req.raw.on('close', end);
  return {
    send: (event, data, id) => {
      if (ended) return;
      res.write(`${id ? `id: ${id}\n` : ''}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    },
    end,
  };
}

/** A line as sent to followers and in log listings: the entry plus its invocation. */
export type FollowedLine = LogEntry & { invocation_id: string };

const FINISHED = new Set(['succeeded', 'failed', 'timed_out']);
/** How often a follower of an invocation running elsewhere re-reads its record, ms. */
const POLL_MS = 1000;

/**
 * Stream invocation `inv`'s lines as SSE (`event: log`, then one `event: end` with its status)
 * and close. `reload` re-reads the record (for an invocation running in another process).
 */
export function streamInvocation(
  req: FastifyRequest,
  reply: FastifyReply,
  inv: { id: string; status: string; logs: LogEntry[] },
  reload: () => Promise<{ status: string; logs: LogEntry[] }>,
): void {
  let sent = 0;
  let unsubscribe = () => {};
  let poll: NodeJS.Timeout | null = null;
  const s = openEventStream(req, reply, () => {
    unsubscribe();
    if (poll) clearInterval(poll);
  });
  const line = (entry: LogEntry) => s.send('log', { invocation_id: inv.id, ...entry }, `${inv.id}:${sent++}`);
  const finish = (status: string, logs: LogEntry[]) => {
    for (const entry of logs.slice(sent)) line(entry);
    s.send('end', { invocation_id: inv.id, status });
    s.end();
  };
  if (FINISHED.has(inv.status)) {
    finish(inv.status, inv.logs);
    return;
  }
  unsubscribe = follow(`inv:${inv.id}`, (ev) => {
    if (ev.type === 'log') line(ev.entry);
    else
      void reload().then(
        (r) => finish(ev.status, r.logs),
        () => finish(ev.status, []),
      );
  });
  // Queued, or running in another process: its lines arrive with its record.
  poll = setInterval(() => {
    if (runsHere(inv.id)) return;
    reload().then(
      (r) => {
        if (FINISHED.has(r.status)) finish(r.status, r.logs);
      },
      () => s.end(),
    );
  }, POLL_MS);
  poll.unref();
}

/** Tail every invocation of agent `agentId` running in this process (`event: log` / `event: end` per invocation) until the client leaves. */
export function streamAgent(req: FastifyRequest, reply: FastifyReply, agentId: string): void {
  let unsubscribe = () => {};
  const s = openEventStream(req, reply, () => unsubscribe());
  unsubscribe = follow(`agent:${agentId}`, (ev) => {
    if (ev.type === 'log') s.send('log', { invocation_id: ev.invocationId, ...ev.entry });
    else s.send('end', { invocation_id: ev.invocationId, status: ev.status });
  });
}
