/**
 * A deployed agent published over A2A, driven with the `@a2a-js/sdk` client over real HTTP on
 * loopback: the card at the well-known path (skills from the bundle's agent.json, security
 * schemes at the platform's OAuth), SendMessage (blocking and returnImmediately), the stream,
 * GetTask, CancelTask (not cancelable), a failing handler; the v0.3 `message/send` as curl sends
 * it; 401 without a credential, 404 for an unpublished agent or another account's, and the
 * invocation records carrying `trigger: a2a`.
 */
import { randomUUID } from 'node:crypto';
import { type Message, SendMessageRequest, type Task, TaskState } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { beforeAll, describe, expect, it } from 'vitest';
import { call, createUser, setupApp, type TestUser } from '../../helpers/app.js';
import { freePort } from '../../helpers/net.js';
import { agentToken, createAgent, deployReady, tarball } from '../deployments/fixtures.js';

const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const { app } = await setupApp({ PUBLIC_URL: base });
await app.listen({ port, host: '127.0.0.1' });

const HANDLER = `export default async function handler(input, context) {
  if (input && input.text === 'fail') throw new Error('asked to fail');
  if (input && input.text === 'slow') await new Promise((r) => setTimeout(r, 300));
  return { reply: 'hello ' + (input && input.text), data: input && input.data, context_id: input && input.context_id, version: context.version };
}
`;
const MANIFEST = JSON.stringify({
  a2a: {
    description: 'Greets whoever writes to it',
    skills: [{ id: 'greet', name: 'Greet', description: 'Says hello', tags: ['greeting'], examples: ['hi'] }],
  },
});

let owner: TestUser;
let agentId: string;
let agentAuth: { authorization: string };

/** An SDK client of the agent, sending `authorization` with every request (card fetch included). */
async function clientFor(authorization?: string) {
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    if (authorization) headers.set('authorization', authorization);
    return fetch(input, { ...init, headers });
  };
  const factory = new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl })] });
  return factory.createFromUrl(`${base}/a2a/agents/${agentId}/`);
}

function userMessage(text: string, extra: Record<string, unknown> = {}) {
  return SendMessageRequest.fromJSON({
    message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }], ...extra },
  });
}

beforeAll(async () => {
  owner = await createUser(app);
  const agent = await createAgent(app, owner, 'greeter');
  agentId = agent.id;
  agentAuth = await agentToken(app, agent);
  const d = await deployReady(
    app,
    owner.headers,
    agentId,
    await tarball({ 'index.mjs': HANDLER, 'agent.json': MANIFEST }),
  );
  expect(d.status).toBe('active');
}, 60_000);

describe('A2A', () => {
  it('an unpublished agent has no card and no endpoint; publishing is the owner’s', async () => {
    expect((await fetch(`${base}/a2a/agents/${agentId}/.well-known/agent-card.json`)).status).toBe(404);
    const { body: before } = await call(
      app,
      { method: 'GET', url: `/v2/agents/${agentId}/a2a`, headers: owner.headers },
      200,
    );
    expect(before.enabled).toBe(false);
    const stranger = await createUser(app);
    await call(
      app,
      { method: 'PUT', url: `/v2/agents/${agentId}/a2a`, headers: stranger.headers, payload: { enabled: true } },
      404,
    );
    const { body } = await call(
      app,
      { method: 'PUT', url: `/v2/agents/${agentId}/a2a`, headers: owner.headers, payload: { enabled: true } },
      200,
    );
    expect(body).toMatchObject({
      enabled: true,
      url: `${base}/a2a/agents/${agentId}`,
      card_url: `${base}/a2a/agents/${agentId}/.well-known/agent-card.json`,
    });
  });

  it('serves the card: skills from the manifest, the platform’s OAuth as security schemes', async () => {
    const res = await fetch(`${base}/a2a/agents/${agentId}/.well-known/agent-card.json`);
    expect(res.status).toBe(200);
    const card = (await res.json()) as any;
    expect(card).toMatchObject({
      name: 'greeter',
      description: 'Greets whoever writes to it',
      version: '1',
      capabilities: { streaming: true },
      skills: [{ id: 'greet', name: 'Greet', description: 'Says hello', tags: ['greeting'], examples: ['hi'] }],
    });
    expect(card.supportedInterfaces[0]).toMatchObject({
      url: `${base}/a2a/agents/${agentId}`,
      protocolBinding: 'JSONRPC',
      protocolVersion: '1.0',
    });
    expect(card.securitySchemes.platform_oauth.oauth2SecurityScheme.flows.clientCredentials.tokenUrl).toBe(
      `${base}/auth/agent/token`,
    );
    expect(card.securitySchemes.bearer.httpAuthSecurityScheme.scheme).toBe('Bearer');
  });

  it('round trip with the SDK client: send, stream, get, cancel refused', async () => {
    const client = await clientFor(owner.headers.authorization);
    const sent = (await client.sendMessage(userMessage('world'))) as Task;
    expect(sent.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(sent.id).toMatch(/^inv_/);
    const part = sent.artifacts[0].parts[0];
    expect(part.content?.$case).toBe('data');
    expect(part.content?.value).toMatchObject({ reply: 'hello world', context_id: sent.contextId, version: 1 });
    expect(sent.history[0].parts[0].content).toEqual({ $case: 'text', value: 'world' });

    // The stream: the submitted task, working, the artifact, completed.
    const events: any[] = [];
    for await (const ev of client.sendMessageStream(userMessage('slow', { contextId: 'ctx-1' })))
      events.push(ev.payload);
    expect(events[0].$case).toBe('task');
    expect(events[0].value.status.state).toBe(TaskState.TASK_STATE_SUBMITTED);
    const last = events[events.length - 1];
    expect(last.$case).toBe('statusUpdate');
    expect(last.value.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const artifact = events.find((e) => e.$case === 'artifactUpdate');
    expect(artifact.value.artifact.parts[0].content.value).toMatchObject({ reply: 'hello slow', context_id: 'ctx-1' });
    const taskId = events[0].value.id as string;

    // GetTask reads the stored invocation; CancelTask is refused (invocations cannot be cancelled).
    const got = await client.getTask({ tenant: '', id: taskId });
    expect(got).toMatchObject({ id: taskId, contextId: 'ctx-1' });
    expect(got.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    await expect(client.cancelTask({ tenant: '', id: taskId, metadata: undefined })).rejects.toThrow(
      /cannot be cancelled/,
    );
    await expect(client.getTask({ tenant: '', id: 'inv_doesnotexist' })).rejects.toThrow(/not found/i);

    // returnImmediately: the submitted task at once; GetTask later finds it completed.
    const queued = (await client.sendMessage(
      SendMessageRequest.fromJSON({
        message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ data: { n: 7 } }] },
        configuration: { returnImmediately: true },
      }),
    )) as Task;
    expect(queued.status?.state).toBe(TaskState.TASK_STATE_SUBMITTED);
    let done: Task = queued;
    for (let i = 0; i < 200 && done.status?.state !== TaskState.TASK_STATE_COMPLETED; i++) {
      await new Promise((r) => setTimeout(r, 50));
      done = await client.getTask({ tenant: '', id: queued.id });
    }
    expect(done.artifacts[0].parts[0].content?.value).toMatchObject({ data: { n: 7 } });

    // The agent's own token may talk to it too (the invoke rule).
    const self = await clientFor(agentAuth.authorization);
    const bySelf = (await self.sendMessage(userMessage('me'))) as Task;
    expect(bySelf.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);

    // Every run is an invocation record with trigger a2a.
    const { body } = await call(
      app,
      { method: 'GET', url: `/v2/agents/${agentId}/executions`, headers: owner.headers },
      200,
    );
    const mine = body.data.filter((i: any) => [sent.id, taskId, queued.id, bySelf.id].includes(i.id));
    expect(mine).toHaveLength(4);
    for (const i of mine) expect(i.trigger).toBe('a2a');
  }, 60_000);

  it('a failing handler is a failed task with the error as its status message', async () => {
    const client = await clientFor(owner.headers.authorization);
    const t = (await client.sendMessage(userMessage('fail'))) as Task;
    expect(t.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    const text = (t.status?.message as Message | undefined)?.parts[0].content?.value;
    expect(text).toMatch(/asked to fail/);
    expect(t.artifacts).toEqual([]);
  }, 30_000);

  it('v0.3 message/send as curl sends it', async () => {
    const res = await fetch(`${base}/a2a/agents/${agentId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: owner.headers.authorization },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'message/send',
        params: {
          message: { kind: 'message', messageId: 'm-1', role: 'user', parts: [{ kind: 'text', text: 'curl' }] },
        },
      }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body.id).toBe(1);
    expect(body.result).toMatchObject({ kind: 'task', status: { state: 'completed' } });
    expect(body.result.artifacts[0].parts[0]).toMatchObject({ kind: 'data', data: { reply: 'hello curl' } });
    const bad = await fetch(`${base}/a2a/agents/${agentId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: owner.headers.authorization, 'a2a-version': '1.0' },
      body: '{not json',
    });
    expect(bad.status).toBe(200);
    expect(((await bad.json()) as any).error.code).toBe(-32700);
  }, 30_000);

  it('401 without a credential; 404 for another account; 404 once withdrawn', async () => {
    const rpc = (headers: Record<string, string>) =>
      fetch(`${base}/a2a/agents/${agentId}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'a2a-version': '1.0', ...headers },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'inv_x' } }),
      });
    const anon = await rpc({});
    expect(anon.status).toBe(401);
    expect(anon.headers.get('content-type')).toMatch(/problem\+json/);
    const stranger = await createUser(app);
    expect((await rpc({ authorization: stranger.headers.authorization })).status).toBe(404);
    // A sibling agent of the same owner is outside the invoke scope too.
    const sibling = await createAgent(app, owner);
    expect((await rpc(await agentToken(app, sibling))).status).toBe(404);
    await expect(
      clientFor(stranger.headers.authorization).then((c) => c.sendMessage(userMessage('x'))),
    ).rejects.toThrow();
    await call(
      app,
      { method: 'PUT', url: `/v2/agents/${agentId}/a2a`, headers: owner.headers, payload: { enabled: false } },
      200,
    );
    expect((await rpc({ authorization: owner.headers.authorization })).status).toBe(404);
    expect((await fetch(`${base}/a2a/agents/${agentId}/.well-known/agent-card.json`)).status).toBe(404);
  }, 30_000);
});
