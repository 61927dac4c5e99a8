import { describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { HANDLERS, agentToken, createAgent, deploy, deployReady, tarball, tempDir, waitFor } from './fixtures.js';

const { app } = await setupApp({ DATA_DIR: tempDir() });

describe('deployments — happy paths', () => {
  it('runs the full lifecycle: deploy v1 → invoke → v2 → rollback → stop → redeploy', async () => {
    const u = await createUser(app);
    const agent = await createAgent(app, u);
    const base = `/v2/agents/${agent.id}`;

    // v1: 202 with a preparing deployment, then active.
    const res = await deploy(app, u.headers, agent.id, await tarball({ 'index.mjs': HANDLERS.versioned('one') }), {
      description: 'first',
    });
    expect(res.statusCode).toBe(202);
    const created = res.json();
    expect(created).toMatchObject({
      agent_id: agent.id,
      version: 1,
      status: 'preparing',
      entrypoint: 'index.mjs',
      description: 'first',
      env_keys: [],
    });
    expect(created.id).toMatch(/^dep_[0-9a-z]{26}$/);
    expect(created.artifact.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(created.artifact.size_bytes).toBeGreaterThan(0);
    const v1 = await waitFor(async () => {
      const { body } = await call(app, { method: 'GET', url: `${base}/deployments`, headers: u.headers }, 200);
      return body.data[0]?.status === 'active' ? body.data[0] : null;
    });
    expect(v1.prepared_at).not.toBeNull();
    expect(v1.activated_at).not.toBeNull();

    const { body: inv1 } = await call(
      app,
      { method: 'POST', url: `${base}/invoke`, headers: u.headers, payload: { input: { n: 1 } } },
      200,
    );
    expect(inv1).toMatchObject({
      status: 'succeeded',
      output: { v: 'one', input: { n: 1 } },
      error: null,
      version: 1,
      deployment_id: v1.id,
    });
    expect(inv1.id).toMatch(/^inv_/);
    expect(inv1.duration_ms).toBeGreaterThan(0);

    // v2 supersedes v1.
    const v2 = await deployReady(app, u.headers, agent.id, await tarball({ 'index.mjs': HANDLERS.versioned('two') }));
    expect(v2).toMatchObject({ version: 2, status: 'active' });
    const { body: hist } = await call(app, { method: 'GET', url: `${base}/deployments`, headers: u.headers }, 200);
    expect(hist.data.map((d: any) => [d.version, d.status])).toEqual([
      [2, 'active'],
      [1, 'superseded'],
    ]);
    const { body: inv2 } = await call(
      app,
      { method: 'POST', url: `${base}/invoke`, headers: u.headers, payload: { input: 'x' } },
      200,
    );
    expect(inv2).toMatchObject({ status: 'succeeded', output: { v: 'two', input: 'x' }, version: 2 });

    // Rollback: v1 active again, v2 rolled_back.
    const { body: rb } = await call(
      app,
      { method: 'POST', url: `${base}/deployments/rollback`, headers: u.headers },
      200,
    );
    expect(rb).toMatchObject({ id: v1.id, version: 1, status: 'active' });
    const { body: hist2 } = await call(app, { method: 'GET', url: `${base}/deployments`, headers: u.headers }, 200);
    expect(hist2.data.map((d: any) => [d.version, d.status])).toEqual([
      [2, 'rolled_back'],
      [1, 'active'],
    ]);
    const { body: inv3 } = await call(app, { method: 'POST', url: `${base}/invoke`, headers: u.headers }, 200); // no body: input null
    expect(inv3).toMatchObject({ status: 'succeeded', output: { v: 'one', input: null }, version: 1 });

    // Stop: invocations answer 409.
    const { body: stopped } = await call(
      app,
      { method: 'POST', url: `${base}/deployments/stop`, headers: u.headers },
      200,
    );
    expect(stopped).toMatchObject({ version: 1, status: 'stopped' });
    const { body: p409 } = await call(
      app,
      { method: 'POST', url: `${base}/invoke`, headers: u.headers, payload: {} },
      409,
    );
    expect(p409.code).toBe('invalid_state');
    expect(p409.detail).toMatch(/stopped/);

    // Redeploy: the stopped version is prepared again and serves.
    const { body: re } = await call(
      app,
      { method: 'POST', url: `${base}/deployments/redeploy`, headers: u.headers },
      202,
    );
    expect(re).toMatchObject({ version: 1, status: 'preparing' });
    await waitFor(async () => {
      const { body } = await call(app, { method: 'GET', url: `${base}/deployments`, headers: u.headers }, 200);
      return body.data.find((d: any) => d.version === 1)?.status === 'active';
    });
    const { body: inv4 } = await call(
      app,
      { method: 'POST', url: `${base}/invoke`, headers: u.headers, payload: { input: 4 } },
      200,
    );
    expect(inv4).toMatchObject({ status: 'succeeded', output: { v: 'one', input: 4 }, version: 1 });

    // Rollback to an explicit version (v2) works too.
    const { body: rb2 } = await call(
      app,
      { method: 'POST', url: `${base}/deployments/rollback`, headers: u.headers, payload: { version: 2 } },
      200,
    );
    expect(rb2).toMatchObject({ version: 2, status: 'active' });

    // Executions: newest first, paginated, without logs in the list.
    const { body: page1 } = await call(
      app,
      { method: 'GET', url: `${base}/executions?limit=2`, headers: u.headers },
      200,
    );
    expect(page1.data.map((e: any) => e.id)).toEqual([inv4.id, inv3.id]);
    expect(page1.data[0].logs).toBeUndefined();
    expect(page1.next_cursor).toBeTruthy();
    const { body: page2 } = await call(
      app,
      { method: 'GET', url: `${base}/executions?limit=2&cursor=${page1.next_cursor}`, headers: u.headers },
      200,
    );
    expect(page2.data.map((e: any) => e.id)).toEqual([inv2.id, inv1.id]);
    expect(page2.next_cursor).toBeNull();
  });

  it('captures logs with timestamps and streams, and passes the context', async () => {
    const u = await createUser(app);
    const agent = await createAgent(app, u);
    await deployReady(app, u.headers, agent.id, await tarball({ 'index.mjs': HANDLERS.echo }));
    const { body: inv } = await call(
      app,
      {
        method: 'POST',
        url: `/v2/agents/${agent.id}/invoke`,
        headers: u.headers,
        payload: { input: { hello: 'world' } },
      },
      200,
    );
    expect(inv.output).toEqual({ echo: { hello: 'world' }, version: 1, invocationId: inv.id, remaining: true });
    const { body: detail } = await call(
      app,
      { method: 'GET', url: `/v2/agents/${agent.id}/executions/${inv.id}`, headers: u.headers },
      200,
    );
    expect(detail).toMatchObject({ id: inv.id, status: 'succeeded', input: { hello: 'world' }, logs_truncated: false });
    expect(detail.logs).toEqual([
      { ts: expect.any(String), stream: 'stdout', message: 'echo called {"hello":"world"}' },
      { ts: expect.any(String), stream: 'stderr', message: 'to stderr' },
    ]);
    expect(Number.isNaN(Date.parse(detail.logs[0].ts))).toBe(false);
  });

  it('runs an async invocation as a job: queued → final, polled to completion', async () => {
    const u = await createUser(app);
    const agent = await createAgent(app, u);
    await deployReady(app, u.headers, agent.id, await tarball({ 'index.mjs': HANDLERS.echo }));
    const { body: q } = await call(
      app,
      {
        method: 'POST',
        url: `/v2/agents/${agent.id}/invoke?async=true`,
        headers: u.headers,
        payload: { input: [1, 2] },
      },
      202,
    );
    expect(q).toMatchObject({ status: 'queued', async: true, output: null, duration_ms: null });
    const done = await waitFor(async () => {
      const { body } = await call(
        app,
        { method: 'GET', url: `/v2/agents/${agent.id}/executions/${q.id}`, headers: u.headers },
        200,
      );
      return ['succeeded', 'failed', 'timed_out'].includes(body.status) ? body : null;
    });
    expect(done).toMatchObject({ status: 'succeeded', output: { echo: [1, 2], version: 1 }, async: true });
    expect(done.started_at).not.toBeNull();
    expect(done.finished_at).not.toBeNull();
    // body flag works too
    const { body: q2 } = await call(
      app,
      { method: 'POST', url: `/v2/agents/${agent.id}/invoke`, headers: u.headers, payload: { input: 1, async: true } },
      202,
    );
    expect(q2.status).toBe('queued');
  });

  it('uses package.json main, the npm pack layout, CommonJS and environment variables', async () => {
    const u = await createUser(app);
    const agent = await createAgent(app, u);
    const art = await tarball(
      {
        'package.json': JSON.stringify({ name: 'x', main: 'lib/main' }),
        'lib/main.js': `const helper = require('./helper.js'); exports.handler = async (input) => ({ greeting: helper(input.name), mode: process.env.MODE, home: process.env.DATABASE_URL ?? null });`,
        'lib/helper.js': `module.exports = (n) => 'hi ' + n;`,
      },
      { prefix: 'package' },
    );
    const d = await deployReady(app, u.headers, agent.id, art, {
      env: JSON.stringify({ MODE: 'prod', API_TOKEN: 's3cret' }),
    });
    expect(d).toMatchObject({ status: 'active', entrypoint: 'lib/main.js', env_keys: ['API_TOKEN', 'MODE'] });
    expect(JSON.stringify(d)).not.toContain('s3cret');
    const { body } = await call(
      app,
      { method: 'POST', url: `/v2/agents/${agent.id}/invoke`, headers: u.headers, payload: { input: { name: 'ada' } } },
      200,
    );
    expect(body.output).toEqual({ greeting: 'hi ada', mode: 'prod', home: null });
  });

  it('lets the agent itself deploy and invoke with its own token', async () => {
    const u = await createUser(app);
    const agent = await createAgent(app, u);
    const t = await agentToken(app, agent);
    const d = await deployReady(
      app,
      t,
      agent.id,
      await tarball({ 'index.js': `module.exports = async () => 'self';` }),
    );
    expect(d).toMatchObject({ status: 'active', entrypoint: 'index.js', created_by: agent.id });
    const { body } = await call(
      app,
      { method: 'POST', url: `/v2/agents/${agent.id}/invoke`, headers: t, payload: {} },
      200,
    );
    expect(body.output).toBe('self');
    // the owner sees the agent's invocation
    const { body: list } = await call(
      app,
      { method: 'GET', url: `/v2/agents/${agent.id}/executions`, headers: u.headers },
      200,
    );
    expect(list.data[0].id).toBe(body.id);
  });

  it('documents every route in OpenAPI', async () => {
    const { body } = await call(app, { method: 'GET', url: '/openapi.json' }, 200);
    const ops = Object.values(body.paths as Record<string, Record<string, { operationId?: string }>>)
      .flatMap((p) => Object.values(p).map((o) => o.operationId))
      .filter((id) => id?.startsWith('deployments.'));
    expect(ops.sort()).toEqual([
      'deployments.deploy',
      'deployments.executions.get',
      'deployments.executions.list',
      'deployments.executions.logs',
      'deployments.invoke',
      'deployments.list',
      'deployments.logs',
      'deployments.redeploy',
      'deployments.rollback',
      'deployments.stop',
    ]);
    expect(Object.keys(body.paths['/v2/agents/{id}/deploy'].post.requestBody.content)).toContain('multipart/form-data');
  });
});
