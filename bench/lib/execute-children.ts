/**
 * The child processes of `bench/execute.ts` (`npm run bench:execute`), forked by its driver with
 * the role as first argument:
 * - `upstream`: a tiny HTTP API on loopback (`GET /fast` → small JSON, after
 *   BENCH_UPSTREAM_DELAY_MS); sends `{ port }` when listening.
 * - `platform <upstream url>`: the full service on loopback (PGlite or BENCH_DATABASE_URL), with
 *   the benchmark-only forwarder `POST /__bench/forward`, an owner's published service on that
 *   upstream and an `enterprise` user subscribed to it with an agent session; sends
 *   `{ base, authorization, sessionId, service }` when ready, then answers the driver's `cpu`,
 *   `profile` and `backlog` messages (see the driver for their use).
 * Both end when the driver does (IPC disconnect).
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { performance as perf } from 'node:perf_hooks';
import path from 'node:path';
import { Agent, request } from 'undici';

const role = process.argv[2];
// Children end with the driver.
if (role) process.on('disconnect', () => process.exit(0));

// ------------------------------------------------------------------ child: upstream

if (role === 'upstream') {
  const body = JSON.stringify({ ok: true, temperature: 21.5, unit: 'C', city: 'Lisbon' });
  const delayMs = Number(process.env.BENCH_UPSTREAM_DELAY_MS ?? 0);
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const answer = () => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        res.end(body);
      };
      if (delayMs > 0) setTimeout(answer, delayMs);
      else answer();
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as { port: number }).port }));
}

// ------------------------------------------------------------------ child: platform

if (role === 'platform') {
  const upstreamUrl = process.argv[3];
  const { buildApp } = await import('../../src/app.js');
  const { loadConfig } = await import('../../src/config.js');
  const { setServiceStatus } = await import('../../src/modules/registry/service.js');
  const { memoryBacklog } = await import('../../src/modules/memory/runtime.js');
  const { execRows } = await import('../../src/db/client.js');
  const { sql } = await import('drizzle-orm');
  const config = loadConfig({
    // not production: it refuses test tokens; development runs the same code (only NODE_ENV=test differs)
    NODE_ENV: 'development',
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
    DATABASE_URL: process.env.BENCH_DATABASE_URL,
    DATABASE_IN_MEMORY: process.env.BENCH_PGLITE_STORAGE === 'disk' ? 'off' : 'on',
    PGLITE_THREAD: process.env.BENCH_PGLITE_THREAD,
    REDIS_URL: process.env.BENCH_REDIS_URL,
    // unset: the platform's default embedder (the sentence encoder); `local` for the A/B of issue 18 §1
    EMBEDDINGS_PROVIDER: process.env.BENCH_EMBEDDINGS_PROVIDER,
    DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'ap-bench-exec-')),
    AUTH_TEST_TOKENS: 'on',
    AUTH_TEST_ROLES: 'on',
    ALLOW_LOOPBACK_UPSTREAMS: 'on',
    RATE_LIMIT_USER: '100000000',
    RATE_LIMIT_PRO: '100000000',
    RATE_LIMIT_ANONYMOUS: '100000000',
    SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
  });
  // The forwarder baseline (issue 18), registered by the benchmark only: what an execute path must
  // do at minimum — forward the JSON body to the upstream with undici and return its answer (no
  // auth, no database). Same process, same global hooks as execute.
  const forwardPool = new Agent({ connections: 128, keepAliveTimeout: 60_000 });
  const { app, ctx } = await buildApp(config, (server) => {
    server.post('/__bench/forward', async (req, reply) => {
      const res = await request(`${upstreamUrl}/fast`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer upstream-secret' },
        body: JSON.stringify(req.body),
        dispatcher: forwardPool,
      });
      const answer = await res.body.json();
      return reply.code(res.statusCode).send({ status: 'succeeded', http_status: res.statusCode, output: answer });
    });
  });
  process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  const call = async (method: string, url: string, headers: Record<string, string>, payload?: unknown) => {
    const res = await app.inject({ method: method as 'POST', url, headers, payload: payload as object });
    if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
    return res.json();
  };
  const token = async (email: string, roles?: string[]) =>
    `Bearer ${(await call('POST', '/auth/test', {}, { email, roles })).access_token}`;
  const owner = { authorization: await token('bench-owner@example.test') };
  // The enterprise plan needs the enterprise role (plans follow roles, issue 11).
  const user = { authorization: await token('bench-user@example.test', ['enterprise']) };
  const svc = await call('POST', '/owner/services', owner, {
    name: `bench-weather-${Date.now().toString(36)}`,
    description: 'benchmark upstream',
    base_url: upstreamUrl,
    auth: { type: 'bearer', secret: 'upstream-secret' },
    tools: [
      {
        name: 'current',
        description: 'Current weather',
        method: 'GET',
        path: '/fast',
        input_schema: {
          type: 'object',
          properties: { city: { type: 'string', minLength: 1 }, units: { enum: ['metric', 'imperial'] } },
          required: ['city'],
          additionalProperties: false,
        },
      },
    ],
  });
  await setServiceStatus(ctx, svc.id, 'published');
  await call('POST', '/subscriptions', user, { service_id: svc.id, plan: 'enterprise' });
  const session = await call('POST', '/v1/agents', user, { name: 'bench' });
  // The driver asks for this process's CPU time around each run (CPU per request is steadier than
  // requests/s on a shared machine).
  // BENCH_PROFILE=<dir>: a CPU profile of this process's main thread over each measured execute run
  // (inspector, started and stopped by the driver), not over the set-up and the baselines.
  const inspector = process.env.BENCH_PROFILE ? new (await import('node:inspector')).Session() : null;
  inspector?.connect();
  const post = (method: string, params?: object) =>
    new Promise<any>((resolve, reject) =>
      inspector!.post(method, params ?? {}, (err, res) => (err ? reject(err) : resolve(res))),
    );
  if (inspector) await post('Profiler.enable');
  process.on(
    'message',
    (m: { cpu?: number; backlog?: number; profile?: { id: number; start?: boolean; name?: string } }) => {
      if (m.cpu !== undefined) {
        const u = process.cpuUsage();
        // main-thread busy time (event-loop utilisation), apart from the encoder's worker thread
        const elu = perf.eventLoopUtilization();
        process.send!({ cpuReply: m.cpu, us: u.user + u.system, mainUs: Math.round(elu.active * 1000) });
      }
      if (m.profile && inspector) {
        const { id, start, name } = m.profile;
        void (async () => {
          if (start) await post('Profiler.start');
          else {
            const { profile } = await post('Profiler.stop');
            fs.mkdirSync(process.env.BENCH_PROFILE!, { recursive: true });
            fs.writeFileSync(path.join(process.env.BENCH_PROFILE!, `${name}.cpuprofile`), JSON.stringify(profile));
          }
          process.send!({ profileReply: id });
        })();
      }
      // The automatic memories' backlog (queued in the writer, stored without a vector) and, for the
      // bench user's session, executions recorded vs execution memories stored vs those with a vector.
      if (m.backlog !== undefined) {
        const id = m.backlog;
        void (async () => {
          const b = await memoryBacklog(ctx);
          const [c] = await execRows<{ executions: string; memories: string; embedded: string }>(
            ctx.db,
            sql`select (select count(*) from executions where session_id = ${session.id}) as executions,
                     (select count(*) from memories where session_id = ${session.id} and source = 'execution') as memories,
                     (select count(*) from memories where session_id = ${session.id} and source = 'execution' and embedding is not null) as embedded`,
          );
          process.send!({
            backlogReply: id,
            ...b,
            executions: Number(c.executions),
            memories: Number(c.memories),
            embedded: Number(c.embedded),
          });
        })();
      }
    },
  );
  process.send!({ base, authorization: user.authorization, sessionId: session.id, service: svc.name });
}
