/**
 * End-to-end helpers for the execution tests: start the app on a real socket (127.0.0.1:0), speak
 * HTTP to it, register services through the registry's public API and subscribe through
 * `/subscriptions`.
 */
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../src/context.js';
import type { ExecutionRecorded } from '../../src/events.js';
import { setServiceStatus } from '../../src/modules/registry/service.js';
import { createUser, type TestUser } from './app.js';
import { startToolUpstream, type ToolUpstream } from './tool-upstream.js';

/** Listen on an ephemeral loopback port; returns the base URL. */
export async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}

export interface HttpAnswer {
  status: number;
  headers: Headers;
  body: any;
}

/** One HTTP request over the socket; JSON in, JSON (or text) out. */
export async function httpCall(
  base: string,
  method: string,
  path: string,
  opts: { headers?: Record<string, string>; body?: unknown } = {},
): Promise<HttpAnswer> {
  const res = await fetch(base + path, {
    method,
    headers: { ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}), ...opts.headers },
    body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    /* text */
  }
  return { status: res.status, headers: res.headers, body };
}

/** `httpCall` that asserts the status. */
export async function expectHttp(
  base: string,
  method: string,
  path: string,
  status: number,
  opts: { headers?: Record<string, string>; body?: unknown } = {},
): Promise<HttpAnswer> {
  const a = await httpCall(base, method, path, opts);
  if (a.status !== status)
    throw new Error(`${method} ${path}: expected ${status}, got ${a.status}: ${JSON.stringify(a.body)}`);
  return a;
}

export interface RegisteredService {
  id: string;
  name: string;
  signingSecret: string;
  tools: Array<{ id: string; name: string }>;
}

/** Register a service via `POST /owner/services` (status `draft`). */
export async function registerService(
  base: string,
  owner: TestUser,
  body: Record<string, unknown>,
): Promise<RegisteredService> {
  const { body: s } = await expectHttp(base, 'POST', '/owner/services', 201, { headers: owner.headers, body });
  return { id: s.id, name: s.name, signingSecret: s.signing_secret, tools: s.tools };
}

/**
 * Mark a service published. The publishing flow (domain + functional verification) is the
 * publishing module's concern and is tested there; execution tests only need the end state.
 */
export async function publish(ctx: AppContext, serviceId: string): Promise<void> {
  await setServiceStatus(ctx, serviceId, 'published');
}

/** Subscribe `user` to a service; returns the subscription. */
export async function subscribe(
  base: string,
  user: TestUser,
  serviceId: string,
  plan = 'free',
): Promise<{ id: string }> {
  const { body } = await expectHttp(base, 'POST', '/subscriptions', 201, {
    headers: user.headers,
    body: { service_id: serviceId, plan },
  });
  return body;
}

/** Create a session of `user` (or of an agent, with its headers). */
export async function newSession(
  base: string,
  headers: Record<string, string>,
  body: Record<string, unknown> = {},
): Promise<string> {
  const { body: s } = await expectHttp(base, 'POST', '/v1/agents', 201, { headers, body });
  return s.id;
}

/** `POST /v1/agents/:id/execute`. */
export function execute(
  base: string,
  headers: Record<string, string>,
  sessionId: string,
  body: Record<string, unknown>,
): Promise<HttpAnswer> {
  return httpCall(base, 'POST', `/v1/agents/${sessionId}/execute`, { headers, body });
}

/** What {@link subscribedFastTool} sets up. */
export interface SubscribedFastTool {
  /** The loopback upstream behind the tool (the caller closes it). */
  upstream: ToolUpstream;
  user: TestUser;
  svc: RegisteredService;
  sub: { id: string };
  /** A session of `user`. */
  sid: string;
}

/**
 * A published one-tool service (`fast`: `GET /fast` on a fresh loopback upstream) of a new owner,
 * named `<prefix>-<time>`, a new user subscribed to it on the free plan, and a session of that user.
 */
export async function subscribedFastTool(
  app: FastifyInstance,
  ctx: AppContext,
  base: string,
  prefix: string,
): Promise<SubscribedFastTool> {
  const upstream = await startToolUpstream();
  const owner = await createUser(app);
  const user = await createUser(app);
  const svc = await registerService(base, owner, {
    name: `${prefix}-${Date.now().toString(36)}`,
    description: prefix,
    base_url: upstream.url,
    tools: [{ name: 'fast', description: 'fast', method: 'GET', path: '/fast', input_schema: { type: 'object' } }],
  });
  await publish(ctx, svc.id);
  const sub = await subscribe(base, user, svc.id);
  const sid = await newSession(base, user.headers);
  return { upstream, user, svc, sub, sid };
}

/**
 * The facts of one finished, succeeded tool call (`ExecutionRecord` / `ExecutionRecorded`, src/events.ts)
 * for tests that record or replay one without calling an upstream: HTTP 200, no output, 1 ms.
 */
export function finishedCall(
  ids: Pick<ExecutionRecorded, 'sessionId' | 'userId' | 'agentId' | 'serviceId' | 'toolId' | 'toolName'>,
): Omit<ExecutionRecorded, 'executionId' | 'serviceName'> {
  return {
    ...ids,
    arguments: {},
    status: 'succeeded',
    httpStatus: 200,
    output: null,
    error: null,
    durationMs: 1,
  };
}
