/**
 * Where tool search spends its time (`npx tsx bench/search-profile.ts`; issue 19 §1 latency).
 *
 * Seeds BENCH_TOOLS (10,000) tools from the vendored GitHub REST API descriptions (api.github.com,
 * ghec, ghes-3.19/3.18/3.17, then again), once: with `LAB_DIR=<dir>` the PGlite database persists
 * there and later runs reuse it (A/B of two commits on the same data), else in memory. Then, for
 * ROUNDS (3) rounds of the 72 labelled queries (`fixtures/search-queries.json`, limit 3, over HTTP):
 *  - `TIMING=1`: CPU time of the process per search (PGlite runs on this thread, so it is the
 *    search's own work, much less sensitive to machine load than wall time) and the wall time of
 *    each SQL statement, summed by statement;
 *  - `EXPLAIN='q1|q2'`: EXPLAIN (ANALYZE, BUFFERS) of every statement those searches run (each in
 *    a transaction with the search settings applied);
 *  - always: a V8 CPU profile of the searches (`PROF_OUT`, /tmp/search-only.cpuprofile) and
 *    their wall-time p50/p95.
 * Prints plain lines and one JSON line.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { Session } from 'node:inspector/promises';
import { brotliDecompressSync } from 'node:zlib';
import { benchUser, startBenchApp } from './lib/app.js';
import { toolNameFrom } from '../src/modules/registry/manifest.js';
import { setServiceStatus } from '../src/modules/registry/service.js';
import { searchStateOf } from '../src/modules/search/state.js';

const TOOLS = Number(process.env.BENCH_TOOLS ?? 10_000);
const run = randomBytes(3).toString('hex');
const { queries } = JSON.parse(readFileSync(new URL('./fixtures/search-queries.json', import.meta.url), 'utf8')) as {
  queries: Array<{ q: string }>;
};
const documents = JSON.parse(
  brotliDecompressSync(readFileSync(new URL('./fixtures/github-openapi.json.br', import.meta.url))).toString('utf8'),
) as Record<
  string,
  {
    tags: Array<{ name: string; description?: string }>;
    operations: Array<[string, string, string, string, string, string]>;
  }
>;
const { app, ctx, base } = await startBenchApp({
  ANALYTICS_REDIS_PREFIX: `bench:lp:${run}:`,
  ...(process.env.LAB_DIR ? { DATABASE_IN_MEMORY: 'off', DATA_DIR: process.env.LAB_DIR } : {}),
});
try {
  const { headers } = await benchUser(app, `bench-lp-${run}@example.test`);
  const { sql } = await import('drizzle-orm');
  const { execRows } = await import('../src/db/client.js');
  let tools = Number((await execRows<{ n: string }>(ctx.db, sql`select count(*) as n from tools`))[0].n);
  const files = ['api.github.com.json', 'ghec.json', 'ghes-3.19.json', 'ghes-3.18.json', 'ghes-3.17.json'];
  for (let i = 0; tools < TOOLS; i++) {
    const doc = documents[files[i % files.length]];
    const byTag = new Map<
      string,
      Array<{ name: string; description: string; method: string; path: string; input_schema: object }>
    >();
    for (const [path, method, operationId, summary, text, tag] of doc.operations) {
      const list = byTag.get(tag) ?? [];
      let name = toolNameFrom(operationId);
      for (let n = 2; list.some((t) => t.name === name); n++) name = `${toolNameFrom(operationId).slice(0, 60)}_${n}`;
      list.push({
        name,
        description: [summary, text].filter(Boolean).join('\n\n').slice(0, 4000),
        method: method.toUpperCase(),
        path,
        input_schema: {
          type: 'object',
          properties: Object.fromEntries([...path.matchAll(/\{([^}]+)\}/g)].map((m) => [m[1], { type: 'string' }])),
        },
      });
      byTag.set(tag, list);
    }
    for (const [tag, list] of byTag) {
      for (let j = 0; j < list.length && tools < TOOLS; j += 500) {
        const chunk = list.slice(j, j + 500).slice(0, TOOLS - tools);
        const res = await app.inject({
          method: 'POST',
          url: '/owner/services',
          headers,
          payload: {
            name: `gh${i}-${tag}-${j}-${run}`.slice(0, 63),
            display_name: `GitHub ${tag} ${i}`,
            description: doc.tags.find((t) => t.name === tag)?.description || `GitHub ${tag}`,
            category: 'developer',
            tags: [tag, 'github'],
            base_url: 'https://api.github.com',
            auth: { type: 'none' },
            tools: chunk,
          },
        });
        if (res.statusCode !== 201) throw new Error(res.body);
        await setServiceStatus(ctx, res.json().id, 'published');
        tools += chunk.length;
      }
    }
  }
  await fetch(`${base}/search/tools?q=settle`, { headers });
  await searchStateOf(ctx).vocabularyRefresh;
  for (const q of queries) await fetch(`${base}/search/tools?q=${encodeURIComponent(q.q)}&limit=3`, { headers });
  if (process.env.TIMING) {
    type Q = (q: string, p?: unknown[], o?: unknown) => Promise<unknown>;
    const client = (
      ctx.db as unknown as {
        $client: { query: Q; transaction: (fn: (tx: { query: Q }) => Promise<unknown>) => Promise<unknown> };
      }
    ).$client;
    const stats = new Map<string, number[]>();
    const wrap =
      (f: Q, self: unknown): Q =>
      async (q, p, o) => {
        const t0 = performance.now();
        try {
          return await f.call(self, q, p, o);
        } finally {
          const key = q.replace(/\s+/g, ' ').slice(0, 70);
          (stats.get(key) ?? stats.set(key, []).get(key)!).push(performance.now() - t0);
        }
      };
    const origQuery = client.query;
    const origTx = client.transaction;
    client.query = wrap(origQuery, client);
    client.transaction = (fn) =>
      origTx.call(client, (tx: { query: Q }) => {
        tx.query = wrap(tx.query, tx);
        return fn(tx);
      });
    const whole: number[] = [];
    const cpu: number[] = [];
    for (let r = 0; r < Number(process.env.ROUNDS ?? 3); r++)
      for (const q of queries) {
        const t0 = performance.now();
        const c0 = process.cpuUsage();
        await (await fetch(`${base}/search/tools?q=${encodeURIComponent(q.q)}&limit=3`, { headers })).json();
        const c = process.cpuUsage(c0);
        cpu.push((c.user + c.system) / 1000);
        whole.push(performance.now() - t0);
      }
    const srt = [...cpu].sort((a, b) => a - b);
    console.log('cpu_ms', {
      total: Math.round(cpu.reduce((a, b) => a + b, 0)),
      p50: srt[srt.length >> 1].toFixed(1),
      p95: srt[Math.ceil(0.95 * srt.length) - 1].toFixed(1),
    });
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    console.log('whole', {
      n: whole.length,
      total: Math.round(sum(whole)),
      p50: [...whole].sort((a, b) => a - b)[whole.length >> 1].toFixed(1),
    });
    for (const [k, xs] of [...stats.entries()].sort((a, b) => sum(b[1]) - sum(a[1])))
      console.log(
        Math.round(sum(xs)).toString().padStart(7),
        String(xs.length).padStart(5),
        (sum(xs) / xs.length).toFixed(1).padStart(7),
        k,
      );
    client.query = origQuery;
    client.transaction = origTx;
  }
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  const times: number[] = [];
  const took: number[] = [];
  for (let r = 0; r < Number(process.env.ROUNDS ?? 3); r++)
    for (const q of queries) {
      const t0 = performance.now();
      const body = (await (
        await fetch(`${base}/search/tools?q=${encodeURIComponent(q.q)}&limit=3`, { headers })
      ).json()) as { took_ms: number };
      times.push(performance.now() - t0);
      took.push(body.took_ms);
    }
  const { profile } = await session.post('Profiler.stop');
  writeFileSync(process.env.PROF_OUT ?? '/tmp/search-only.cpuprofile', JSON.stringify(profile));
  if (process.env.EXPLAIN) {
    const captured: Array<{ q: string; params: unknown[] }> = [];
    const logger = { logQuery: (q: string, params: unknown[]) => captured.push({ q, params }) };
    const session = (ctx.db as unknown as { session: { options: { logger?: unknown }; logger: unknown } }).session;
    session.options.logger = logger;
    session.logger = logger;
    const client = (
      ctx.db as unknown as {
        $client: {
          query: (q: string, p?: unknown[]) => Promise<{ rows: Array<Record<string, string>> }>;
          transaction: <T>(
            fn: (tx: {
              query: (q: string, p?: unknown[]) => Promise<{ rows: Array<Record<string, string>> }>;
            }) => Promise<T>,
          ) => Promise<T>;
        };
      }
    ).$client;
    for (const q of process.env.EXPLAIN.split('|')) {
      captured.length = 0;
      const t0 = performance.now();
      const body = await (await fetch(`${base}/search/tools?q=${encodeURIComponent(q)}&limit=3`, { headers })).json();
      console.log(
        `\n=== ${q}: ${Math.round(performance.now() - t0)} ms, relaxed ${body.relaxed}, ${captured.length} statements`,
      );
      const settings = captured.find((c) => c.q.includes('set_config'));
      for (const c of captured) {
        if (c.q.includes('set_config') || c.q.length < 200) {
          console.log('  stmt:', c.q.slice(0, 120).replace(/\s+/g, ' '));
          continue;
        }
        const plan = await client.transaction(async (tx) => {
          if (settings) await tx.query(settings.q, settings.params);
          return tx.query(`explain (analyze, buffers, timing) ${c.q}`, c.params);
        });
        console.log(plan.rows.map((r) => Object.values(r)[0]).join('\n'));
      }
    }
  }
  const pct = (xs: number[], p: number) =>
    [...xs].sort((a, b) => a - b)[Math.ceil((p / 100) * xs.length) - 1].toFixed(1);
  console.log(
    JSON.stringify({
      tools,
      load: (await import('node:os')).loadavg()[0],
      http_p50: pct(times, 50),
      http_p95: pct(times, 95),
      took_p50: pct(took, 50),
      took_p95: pct(took, 95),
    }),
  );
} finally {
  await app.close();
}
