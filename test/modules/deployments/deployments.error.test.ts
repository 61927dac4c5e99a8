import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { call, createUser, setupApp, type TestUser } from '../../helpers/app.js';
import { eq } from 'drizzle-orm';
import { agentInvocations, deployments } from '../../../src/db/schema/index.js';
import { recoverInterrupted } from '../../../src/modules/deployments/jobs.js';
import { HANDLERS, createAgent, deploy, deployReady, multipart, pack, tarball, tempDir } from './fixtures.js';

const { app, ctx } = await setupApp({
  DATA_DIR: tempDir(),
  DEPLOY_MAX_BYTES: String(64 * 1024),
  DEPLOY_MAX_UNPACKED_BYTES: String(256 * 1024),
  DEPLOY_MAX_FILES: '20',
  SANDBOX_MAX_TIMEOUT_MS: '5000',
});

async function agentOf(): Promise<{ u: TestUser; id: string; base: string }> {
  const u = await createUser(app);
  const a = await createAgent(app, u);
  return { u, id: a.id, base: `/v2/agents/${a.id}` };
}

describe('deployments — invocation failures are recorded, not thrown', () => {
  it('a handler that throws → failed with the error and the logs before it', async () => {
    const { u, id, base } = await agentOf();
    await deployReady(app, u.headers, id, await tarball({ 'index.mjs': HANDLERS.throws }));
    const { body } = await call(
      app,
      { method: 'POST', url: `${base}/invoke`, headers: u.headers, payload: { input: 1 } },
      200,
    );
    expect(body).toMatchObject({
      status: 'failed',
      output: null,
      error: { code: 'handler_error', name: 'TypeError', message: 'handler exploded' },
    });
    expect(body.error.stack).toContain('/app/index.mjs');
    expect(body.logs.map((l: any) => l.message)).toEqual(['about to fail']);
  });

  it('a handler that loops forever → timed_out after timeout_ms, process killed', async () => {
    const { u, id, base } = await agentOf();
    // Loops from its second invocation on: the first warms an environment, so the 600 ms are the
    // handler's alone (a cold start on a loaded host can take longer than that by itself).
    await deployReady(
      app,
      u.headers,
      id,
      await tarball({
        'index.mjs': `let n = 0;\n${HANDLERS.loops.replace('async function () {', 'async function () { if (n++ === 0) return "warm";')}`,
      }),
    );
    expect(
      (await call(app, { method: 'POST', url: `${base}/invoke`, headers: u.headers, payload: {} }, 200)).body.output,
    ).toBe('warm');
    const t0 = Date.now();
    const { body } = await call(
      app,
      { method: 'POST', url: `${base}/invoke`, headers: u.headers, payload: { timeout_ms: 600 } },
      200,
    );
    expect(Date.now() - t0).toBeLessThan(4000);
    expect(body).toMatchObject({ status: 'timed_out', error: { code: 'timeout' }, timeout_ms: 600 });
    expect(body.duration_ms).toBeGreaterThanOrEqual(600);
    expect(body.logs.map((l: any) => l.message)).toEqual(['spinning']);
  });

  it('a promise that never settles, process.exit and a non-JSON result are reported', async () => {
    const { u, id, base } = await agentOf();
    await deployReady(
      app,
      u.headers,
      id,
      await tarball({
        'index.mjs': `export default async (i) => {
        if (i === 'never') return new Promise(() => {});
        if (i === 'exit') process.exit(3);
        if (i === 'big') return 'x'.repeat(2 * 1024 * 1024);
        if (i === 'cyclic') { const a = {}; a.a = a; return a; }
        return null;
      };`,
      }),
    );
    const run = async (input: string) =>
      (await call(app, { method: 'POST', url: `${base}/invoke`, headers: u.headers, payload: { input } }, 200)).body;
    expect((await run('never')).error.code).toBe('no_result');
    expect((await run('exit')).error).toMatchObject({ code: 'crashed', message: expect.stringContaining('code 3') });
    expect((await run('big')).error.code).toBe('output_too_large');
    expect((await run('cyclic')).error.code).toBe('output_not_serializable');
  });

  it('an output with U+0000 and a lone surrogate is answered and recorded with U+FFFD (jsonb cannot hold them)', async () => {
    const { u, id, base } = await agentOf();
    const code = `export default async function () { console.log('odd \\u0000 line'); return { text: 'a\\u0000b', lone: 'x\\ud800y', fine: 'ok' }; }\n`;
    await deployReady(app, u.headers, id, await tarball({ 'index.mjs': code }));
    const { body } = await call(app, { method: 'POST', url: `${base}/invoke`, headers: u.headers, payload: {} }, 200);
    expect(body.status).toBe('succeeded');
    // Two invocations in the same batch window: one odd row must not cost the other its record.
    const { body: second } = await call(
      app,
      { method: 'POST', url: `${base}/invoke`, headers: u.headers, payload: {} },
      200,
    );
    for (const inv of [body, second]) {
      const { body: stored } = await call(
        app,
        { method: 'GET', url: `${base}/executions/${inv.id}`, headers: u.headers },
        200,
      );
      expect(stored.output).toEqual({ text: 'a\uFFFDb', lone: 'x\uFFFDy', fine: 'ok' });
      expect(stored.logs.map((l: any) => l.message)).toEqual(['odd \uFFFD line']);
    }
  });

  it('a module without a handler, or that throws at load, fails the prepare step', async () => {
    const { u, id, base } = await agentOf();
    const d1 = await deployReady(app, u.headers, id, await tarball({ 'index.mjs': `export const notAHandler = 1;` }));
    expect(d1.status).toBe('failed');
    expect(d1.failure_reason).toMatch(/invalid_handler/);
    const d2 = await deployReady(app, u.headers, id, await tarball({ 'index.mjs': `throw new Error('bad init');` }));
    expect(d2).toMatchObject({ status: 'failed', version: 2 });
    expect(d2.failure_reason).toMatch(/load_error.*bad init/);
    const { body } = await call(app, { method: 'POST', url: `${base}/invoke`, headers: u.headers, payload: {} }, 409);
    expect(body.code).toBe('invalid_state');
    // redeploy of a failed version fails again (same code), and is allowed
    await call(app, { method: 'POST', url: `${base}/deployments/redeploy`, headers: u.headers }, 202);
  });
});

describe('deployments — rejected uploads', () => {
  it('rejects a ../ path at deploy time (400 invalid_artifact) and stores nothing', async () => {
    const { u, id, base } = await agentOf();
    const root = tempDir();
    fs.mkdirSync(path.join(root, 'app'));
    fs.writeFileSync(path.join(root, 'app', 'index.js'), 'module.exports = async () => 1;');
    fs.writeFileSync(path.join(root, 'evil.js'), 'x');
    const evil = await pack(path.join(root, 'app'), ['index.js', '../evil.js'], true);
    const res = await deploy(app, u.headers, id, evil, { entrypoint: 'index.js' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'invalid_artifact', detail: expect.stringContaining('..') });
    const { body } = await call(app, { method: 'GET', url: `${base}/deployments`, headers: u.headers }, 200);
    expect(body.data).toEqual([]);
  });

  it('rejects a body that is not gzip, a tar that is not a tar, and an artifact with no entrypoint', async () => {
    const { u, id } = await agentOf();
    const r1 = await deploy(app, u.headers, id, Buffer.from('just some text, not an archive'));
    expect(r1.statusCode).toBe(400);
    expect(r1.json().detail).toMatch(/gzip/);
    const { gzipSync } = await import('node:zlib');
    const r2 = await deploy(app, u.headers, id, gzipSync(Buffer.alloc(2048, 'a')));
    expect(r2.statusCode).toBe(400);
    expect(r2.json().code).toBe('invalid_artifact');
    const r3 = await deploy(app, u.headers, id, await tarball({ 'lib/other.js': 'x' }));
    expect(r3.statusCode).toBe(400);
    expect(r3.json().detail).toMatch(/entrypoint/);
    const r4 = await deploy(app, u.headers, id, await tarball({ 'index.js': 'x' }), { entrypoint: 'missing.js' });
    expect(r4.statusCode).toBe(400);
    expect(r4.json().detail).toMatch(/missing\.js/);
  });

  it('413 above DEPLOY_MAX_BYTES; 400 above the unpacked-size and file-count limits (zip-bomb guard)', async () => {
    const { u, id } = await agentOf();
    const { randomBytes } = await import('node:crypto');
    const big = await tarball({
      'index.js': 'module.exports = async () => 1;',
      'blob.bin': randomBytes(100 * 1024).toString('base64'),
    });
    const r1 = await deploy(app, u.headers, id, big);
    expect(r1.statusCode).toBe(413);
    expect(r1.json().code).toBe('payload_too_large');
    // 1 MiB of zeros compresses to ~1 KiB: small upload, too large unpacked.
    const bomb = await tarball({
      'index.js': 'module.exports = async () => 1;',
      'zeros.txt': '\0'.repeat(1024 * 1024),
    });
    expect(bomb.length).toBeLessThan(64 * 1024);
    const r2 = await deploy(app, u.headers, id, bomb);
    expect(r2.statusCode).toBe(400);
    expect(r2.json().detail).toMatch(/unpacks to more than/);
    const many: Record<string, string> = { 'index.js': 'module.exports = async () => 1;' };
    for (let i = 0; i < 25; i++) many[`f${i}.txt`] = String(i);
    const r3 = await deploy(app, u.headers, id, await tarball(many));
    expect(r3.statusCode).toBe(400);
    expect(r3.json().detail).toMatch(/more than 20 entries/);
  });

  it('415 without multipart; 400 without a file part, with unknown fields or bad env', async () => {
    const { u, id, base } = await agentOf();
    const r1 = await app.inject({
      method: 'POST',
      url: `${base}/deploy`,
      headers: u.headers,
      payload: { artifact: 'x' },
    });
    expect(r1.statusCode).toBe(415);
    const f = multipart([{ name: 'entrypoint', value: 'index.js' }]);
    const r2 = await app.inject({
      method: 'POST',
      url: `${base}/deploy`,
      headers: { ...u.headers, ...f.headers },
      payload: f.payload,
    });
    expect(r2.statusCode).toBe(400);
    expect(r2.json().errors[0].pointer).toBe('/artifact');
    const art = await tarball({ 'index.js': 'module.exports = async () => 1;' });
    const r3 = await deploy(app, u.headers, id, art, { colour: 'blue' });
    expect(r3.statusCode).toBe(400);
    expect(r3.json().detail).toMatch(/colour/);
    for (const env of [
      'not json',
      '[1]',
      '{"NODE_OPTIONS":"--allow-fs-read=*"}',
      '{"bad-name":"x"}',
      '{"A":{"nested":true}}',
    ]) {
      const r = await deploy(app, u.headers, id, art, { env });
      expect(r.statusCode, env).toBe(400);
      expect(r.json().errors[0].pointer).toBe('/env');
    }
  });
});

describe('deployments — impossible transitions answer 409 invalid_state', () => {
  it('invoke, rollback, stop and redeploy with nothing deployed', async () => {
    const { u, base } = await agentOf();
    for (const url of ['/invoke', '/deployments/rollback', '/deployments/stop', '/deployments/redeploy']) {
      const { body } = await call(app, { method: 'POST', url: `${base}${url}`, headers: u.headers, payload: {} }, 409);
      expect(body.code, url).toBe('invalid_state');
    }
  });

  it('rollback without an earlier good version, stop twice, rollback to a failed or active version', async () => {
    const { u, id, base } = await agentOf();
    await deployReady(app, u.headers, id, await tarball({ 'index.mjs': HANDLERS.versioned('a') }));
    const { body: b1 } = await call(
      app,
      { method: 'POST', url: `${base}/deployments/rollback`, headers: u.headers },
      409,
    );
    expect(b1.detail).toMatch(/No earlier good version/);
    await call(
      app,
      { method: 'POST', url: `${base}/deployments/rollback`, headers: u.headers, payload: { version: 1 } },
      409,
    );
    await call(
      app,
      { method: 'POST', url: `${base}/deployments/rollback`, headers: u.headers, payload: { version: 9 } },
      404,
    );
    await deployReady(app, u.headers, id, await tarball({ 'index.mjs': 'export const nothing = 1;' })); // v2 failed
    await call(
      app,
      { method: 'POST', url: `${base}/deployments/rollback`, headers: u.headers, payload: { version: 2 } },
      409,
    );
    await call(app, { method: 'POST', url: `${base}/deployments/stop`, headers: u.headers }, 200);
    await call(app, { method: 'POST', url: `${base}/deployments/stop`, headers: u.headers }, 409);
    await call(app, { method: 'POST', url: `${base}/deployments/rollback`, headers: u.headers }, 409);
  });

  it('validates invoke bodies and timeouts', async () => {
    const { u, base } = await agentOf();
    const r1 = await app.inject({
      method: 'POST',
      url: `${base}/invoke`,
      headers: u.headers,
      payload: { input: 1, extra: true },
    });
    expect(r1.statusCode).toBe(400);
    const r2 = await app.inject({
      method: 'POST',
      url: `${base}/invoke`,
      headers: u.headers,
      payload: { timeout_ms: 10 },
    });
    expect(r2.statusCode).toBe(400);
    const r3 = await app.inject({
      method: 'POST',
      url: `${base}/invoke`,
      headers: u.headers,
      payload: { timeout_ms: 60_000 },
    });
    expect(r3.statusCode).toBe(400);
    expect(r3.json().detail).toMatch(/at most 5000/);
    const r4 = await app.inject({ method: 'GET', url: `${base}/executions?cursor=%%%`, headers: u.headers });
    expect(r4.statusCode).toBe(400);
    const r5 = await app.inject({ method: 'GET', url: `${base}/executions/inv_doesnotexist`, headers: u.headers });
    expect(r5.statusCode).toBe(404);
  });

  it('a disabled agent cannot be deployed or invoked', async () => {
    const { u, id, base } = await agentOf();
    await deployReady(app, u.headers, id, await tarball({ 'index.mjs': HANDLERS.versioned('a') }));
    // invoked once first: the scope check of invoke reads through the agents' liveness cache
    await call(app, { method: 'POST', url: `${base}/invoke`, headers: u.headers, payload: {} }, 200);
    await call(app, { method: 'PATCH', url: base, headers: u.headers, payload: { status: 'disabled' } }, 200);
    const { body } = await call(app, { method: 'POST', url: `${base}/invoke`, headers: u.headers, payload: {} }, 409);
    expect(body.detail).toMatch(/disabled/);
    const r = await deploy(app, u.headers, id, await tarball({ 'index.mjs': HANDLERS.versioned('b') }));
    expect(r.statusCode).toBe(409);
    // re-enabled: invocable again at once; another account still gets 404; deleted: 404
    await call(app, { method: 'PATCH', url: base, headers: u.headers, payload: { status: 'active' } }, 200);
    await call(app, { method: 'POST', url: `${base}/invoke`, headers: u.headers, payload: {} }, 200);
    const other = await createUser(app);
    await call(app, { method: 'POST', url: `${base}/invoke`, headers: other.headers, payload: {} }, 404);
    await call(app, { method: 'DELETE', url: base, headers: u.headers }, 204);
    await call(app, { method: 'POST', url: `${base}/invoke`, headers: u.headers, payload: {} }, 404);
  });
});

describe('deployments — recovery after a restart', () => {
  it('marks long-running invocations interrupted and re-prepares lost prepares (in-process queue)', async () => {
    const { u, id, base } = await agentOf();
    const d = await deployReady(app, u.headers, id, await tarball({ 'index.mjs': HANDLERS.versioned('r') }));
    const { body: inv } = await call(
      app,
      { method: 'POST', url: `${base}/invoke`, headers: u.headers, payload: {} },
      200,
    );
    // The record is written behind the answer; a read of this instance waits for it (record.ts).
    await call(app, { method: 'GET', url: `${base}/executions/${inv.id}`, headers: u.headers }, 200);
    const hourAgo = new Date(Date.now() - 3600_000);
    await ctx.db
      .update(agentInvocations)
      .set({ status: 'running', startedAt: hourAgo, finishedAt: null })
      .where(eq(agentInvocations.id, inv.id));
    await ctx.db.update(deployments).set({ status: 'preparing', updatedAt: hourAgo }).where(eq(deployments.id, d.id));
    await recoverInterrupted(ctx);
    const { body: after } = await call(
      app,
      { method: 'GET', url: `${base}/executions/${inv.id}`, headers: u.headers },
      200,
    );
    expect(after).toMatchObject({ status: 'failed', error: { code: 'interrupted' } });
    if (ctx.jobs.kind === 'in-process') {
      await ctx.jobs.drain();
      const { body } = await call(app, { method: 'GET', url: `${base}/deployments`, headers: u.headers }, 200);
      expect(body.data[0]).toMatchObject({ id: d.id, status: 'active' });
    } else {
      // BullMQ keeps its jobs: a stale prepare is retried by an explicit redeploy instead.
      await call(
        app,
        { method: 'POST', url: `${base}/deployments/redeploy`, headers: u.headers, payload: { version: 1 } },
        202,
      );
    }
  });
});
