/**
 * Tool-search latency (`npm run bench:search`).
 *
 * Starts the service on a loopback port (in-memory PGlite, or PostgreSQL with BENCH_DATABASE_URL),
 * registers ~BENCH_TOOLS tools (services of 10 tools each, through the registry API) and publishes
 * them, records usage for a third of them through the execution recorder (so popularity blending
 * has data), then runs autocannon against:
 *  - `bare`: a route on a second Fastify instance in the same process doing `select 1` on the same
 *    database (floor: HTTP + one query round trip, no auth),
 *  - `GET /v1/auth/me` (the platform's auth, rate-limit and analytics hooks + one lookup),
 *  - `GET /search/tools` with an exact word, a typo, two words, and a browse by category (with
 *    BENCH_CONNECTIONS connections), then the exact word and the typo over one connection.
 * Prints one JSON object. Env: BENCH_TOOLS (2000), BENCH_SECONDS (5), BENCH_CONNECTIONS (10).
 */
import os from 'node:os';
import { randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import Fastify from 'fastify';
import { sql } from 'drizzle-orm';
import { benchUser, startBenchApp } from './lib/app.js';
import { execRows } from '../src/db/client.js';
import { newId } from '../src/http/ids.js';
import { setServiceStatus } from '../src/modules/registry/service.js';
import { recordExecution } from '../src/modules/sessions/usage.js';

const TOOLS = Number(process.env.BENCH_TOOLS ?? 2000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const run = randomBytes(3).toString('hex');

const VERBS = [
  'get',
  'list',
  'create',
  'update',
  'delete',
  'search',
  'send',
  'fetch',
  'convert',
  'track',
  'analyze',
  'translate',
];
const NOUNS = [
  'weather',
  'forecast',
  'invoice',
  'customer',
  'order',
  'payment',
  'shipment',
  'ticket',
  'message',
  'email',
  'calendar',
  'event',
  'document',
  'image',
  'video',
  'playlist',
  'song',
  'stock',
  'quote',
  'currency',
  'flight',
  'hotel',
  'booking',
  'recipe',
  'ingredient',
  'user',
  'profile',
  'repository',
  'issue',
  'commit',
  'deployment',
  'metric',
  'alert',
  'contact',
  'lead',
  'campaign',
  'product',
  'inventory',
  'review',
  'translation',
];
const CATEGORIES = ['weather', 'finance', 'travel', 'productivity', 'media', 'developer', 'commerce', 'communication'];

const { app, ctx, base } = await startBenchApp({
  ALLOW_LOOPBACK_UPSTREAMS: 'on',
  ANALYTICS_REDIS_PREFIX: `bench:rt:${run}:`,
});

const bare = Fastify();
bare.get('/bare', async () => (await execRows(ctx.db, sql`select 1 as ok`))[0]);
await bare.listen({ port: 0, host: '127.0.0.1' });
const bareUrl = `http://127.0.0.1:${(bare.server.address() as { port: number }).port}/bare`;

function pick<T>(xs: T[], i: number): T {
  return xs[i % xs.length];
}

async function measure(url: string, headers: Record<string, string> = {}, connections = CONNECTIONS) {
  const r = await autocannon({ url, headers, connections, duration: SECONDS });
  return {
    rps: Math.round(r.requests.average),
    p50_ms: r.latency.p50,
    p90_ms: r.latency.p90,
    p99_ms: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors,
  };
}

try {
  const { headers, userId } = await benchUser(app, `bench-${run}@example.test`);

  const t0 = performance.now();
  const toolIds: Array<{ service: string; tool: string; name: string }> = [];
  for (let s = 0; toolIds.length < TOOLS; s++) {
    const tools = Array.from({ length: 10 }, (_, i) => {
      const verb = pick(VERBS, s + i);
      const noun = pick(NOUNS, s * 7 + i * 3);
      return {
        name: `${verb}_${noun}_${i}`,
        description: `${verb[0].toUpperCase()}${verb.slice(1)} a ${noun} by id in the ${pick(NOUNS, s + 11)} service`,
        method: 'GET',
        path: `/x/${i}`,
        input_schema: { type: 'object' },
      };
    });
    const res = await app.inject({
      method: 'POST',
      url: '/owner/services',
      headers,
      payload: {
        name: `bench-${run}-${s}`,
        display_name: `Bench ${pick(NOUNS, s)} ${s}`,
        description: `A ${pick(NOUNS, s)} API`,
        base_url: 'http://127.0.0.1:9',
        category: pick(CATEGORIES, s),
        tags: [pick(NOUNS, s), pick(NOUNS, s + 5)],
        tools,
      },
    });
    if (res.statusCode !== 201) throw new Error(`register: ${res.statusCode} ${res.body}`);
    const body = res.json();
    await setServiceStatus(ctx, body.id, 'published');
    for (const t of body.tools) toolIds.push({ service: body.id, tool: t.id, name: t.name });
  }
  const seedMs = performance.now() - t0;

  const session = (await app.inject({ method: 'POST', url: '/v1/agents', headers, payload: { name: 'bench' } })).json()
    .id as string;
  for (let i = 0; i < Math.floor(toolIds.length / 3); i++) {
    const t = toolIds[(i * 7919) % toolIds.length];
    const calls = 1 + (i % 5);
    for (let c = 0; c < calls; c++) {
      await recordExecution(ctx, {
        id: newId('exe'),
        sessionId: session,
        userId,
        agentId: null,
        serviceId: t.service,
        toolId: t.tool,
        toolName: t.name,
        arguments: {},
        status: 'succeeded',
        httpStatus: 200,
        output: null,
        error: null,
        durationMs: 10 + c,
      });
    }
  }

  const indexes = await execRows<{ indexname: string }>(
    ctx.db,
    sql`select indexname from pg_indexes where indexname in ('tools_search_idx', 'services_search_idx', 'tools_name_trgm_idx', 'services_name_trgm_idx') order by 1`,
  );
  // Warm up (plans, popularity cache).
  for (const q of ['weather', 'wether']) await fetch(`${base}/search/tools?q=${q}`, { headers });

  const results = {
    bare_select_1: await measure(bareUrl),
    authed_me: await measure(`${base}/v1/auth/me`, headers),
    search_exact: await measure(`${base}/search/tools?q=invoice`, headers),
    search_typo: await measure(`${base}/search/tools?q=invoce`, headers),
    search_two_words: await measure(`${base}/search/tools?q=${encodeURIComponent('create shipment')}`, headers),
    browse_category: await measure(`${base}/search/tools?category=travel`, headers),
    // One connection: the latency of a lone request (no queueing behind others).
    search_exact_1_connection: await measure(`${base}/search/tools?q=invoice`, headers, 1),
    search_typo_1_connection: await measure(`${base}/search/tools?q=invoce`, headers, 1),
  };
  const sample = await (await fetch(`${base}/search/tools?q=invoce&limit=3`, { headers })).json();
  console.log(
    JSON.stringify(
      {
        node: process.version,
        cpus: os.cpus().length,
        loadavg_1m: Math.round(os.loadavg()[0] * 100) / 100,
        engine: ctx.database.engine,
        tools: toolIds.length,
        seed_seconds: Math.round(seedMs / 100) / 10,
        search_indexes: indexes.map((i) => i.indexname),
        connections: CONNECTIONS,
        seconds: SECONDS,
        results,
        sample_typo_query: {
          q: 'invoce',
          found: sample.found,
          fuzzy: sample.fuzzy,
          took_ms: sample.took_ms,
          top: sample.data.map((d: { name: string; match: string }) => `${d.name} (${d.match})`),
        },
      },
      null,
      2,
    ),
  );
} finally {
  await bare.close();
  await app.close();
}
