/**
 * Tool-search quality and latency on a real catalog (`npm run bench:search-quality`; issue 19 §1).
 *
 * Catalog: the GitHub REST API descriptions shipped in the npm package `@octokit/openapi`
 * (devDependency): `api.github.com.json` first (1,200+ operations), then `ghec.json` and
 * `ghes-3.{17,18,19}.json` until BENCH_TOOLS tools (10,000 by default; copies of a document get a
 * `-mirrorN` service suffix past the five). Each operation becomes a tool named by its operationId
 * (as the registry's OpenAPI import names them), described by its summary and description; each
 * first tag becomes a service ("GitHub Repos", …, at most 500 tools each), registered through the
 * registry API and published.
 *
 * Queries: `bench/fixtures/search-queries.json` (72, written from a user's point of view: a third
 * with typos, a third plain-language questions, a third keywords; every other one held out).
 *
 * Before/after in the same run, on the same database: `before` = SEARCH_QUERY_REWRITE off (the
 * words as typed, all required, any-word fallback); `after` = on (typo corrections, stop words,
 * IDF weights). Reports top-3 / top-1 hit rates per kind and split, on the GitHub catalog alone
 * (~1,200 tools) and again at BENCH_TOOLS, and the latency of every query over HTTP (sequential,
 * BENCH_ROUNDS rounds, p50/p95/max), plus the first query after a catalog change (vocabulary rebuilt).
 * Prints one JSON object.
 */
import os from 'node:os';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import { startBenchApp } from './lib/app.js';
import { toolNameFrom } from '../src/modules/registry/manifest.js';
import { setServiceStatus } from '../src/modules/registry/service.js';

const TOOLS = Number(process.env.BENCH_TOOLS ?? 10_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const run = randomBytes(3).toString('hex');
const require = createRequire(import.meta.url);

interface Query {
  q: string;
  kind: 'typo' | 'plain' | 'keyword';
  split: 'dev' | 'holdout';
  expect: string[];
}
const { queries } = JSON.parse(readFileSync(new URL('./fixtures/search-queries.json', import.meta.url), 'utf8')) as { queries: Query[] };

type Op = { operationId?: string; summary?: string; description?: string; tags?: string[] };
/** Services (by first tag) of one OpenAPI document: name, display name, description, tools. */
function servicesOf(file: string, suffix: string) {
  const doc = JSON.parse(readFileSync(require.resolve(`@octokit/openapi/generated/${file}`), 'utf8')) as {
    paths: Record<string, Record<string, Op>>;
    tags?: Array<{ name: string; description?: string }>;
  };
  const tagText = new Map((doc.tags ?? []).map((t) => [t.name, t.description ?? '']));
  const byTag = new Map<string, Array<{ name: string; description: string; method: string; path: string; input_schema: object }>>();
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method) || !op.operationId) continue;
      const tag = op.tags?.[0] ?? 'misc';
      const description = [op.summary, op.description].filter(Boolean).join('\n\n').slice(0, 4000);
      const list = byTag.get(tag) ?? [];
      const params = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      const input_schema = { type: 'object', properties: Object.fromEntries(params.map((p) => [p, { type: 'string' }])), required: params };
      let name = toolNameFrom(op.operationId);
      // As the registry's OpenAPI import: a repeated operationId gets a numeric suffix.
      for (let n = 2; list.some((t) => t.name === name); n++) name = `${toolNameFrom(op.operationId).slice(0, 60)}_${n}`;
      list.push({ name, description, method: method.toUpperCase(), path, input_schema });
      byTag.set(tag, list);
    }
  }
  const out = [];
  for (const [tag, tools] of byTag) {
    for (let i = 0; i < tools.length; i += 500) {
      const words = tag.split('-').map((w) => w[0].toUpperCase() + w.slice(1)).join(' ');
      out.push({
        name: `gh${suffix}-${tag}${i ? `-${i / 500 + 1}` : ''}-${run}`.slice(0, 63),
        display_name: `GitHub ${words}${suffix ? ` (${suffix})` : ''}`,
        description: tagText.get(tag) || `GitHub ${words} API`,
        category: 'developer',
        tags: [tag, 'github'],
        tools: tools.slice(i, i + 500),
      });
    }
  }
  return out;
}

const { app, ctx, base } = await startBenchApp({ ANALYTICS_REDIS_PREFIX: `bench:sq:${run}:` });

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] * 10) / 10;
}

try {
  const login = await app.inject({ method: 'POST', url: '/auth/test', payload: { email: `bench-sq-${run}@example.test`, roles: ['pro'] } });
  const headers = { authorization: `Bearer ${login.json().access_token}` };
  let tools = 0;
  async function load(file: string, suffix: string, cap: number) {
    for (const svc of servicesOf(file, suffix)) {
      if (tools >= cap) return;
      svc.tools = svc.tools.slice(0, cap - tools);
      const res = await app.inject({ method: 'POST', url: '/owner/services', headers, payload: { ...svc, base_url: 'https://api.github.com', auth: { type: 'none' } } });
      if (res.statusCode !== 201) throw new Error(`register ${svc.name}: ${res.statusCode} ${res.body.slice(0, 300)}`);
      await setServiceStatus(ctx, res.json().id, 'published');
      tools += svc.tools.length;
    }
  }

  /** Top-3 names for `q` with the query rewrite on or off (same database). */
  async function top(q: string, rewrite: boolean): Promise<{ names: string[]; ms: number }> {
    ctx.config.search.queryRewrite = rewrite;
    const t0 = performance.now();
    const res = await fetch(`${base}/search/tools?q=${encodeURIComponent(q)}&limit=3`, { headers });
    const body = (await res.json()) as { data: Array<{ name: string }> };
    const ms = performance.now() - t0;
    if (res.status !== 200) throw new Error(`search ${q}: ${res.status}`);
    return { names: body.data.map((d) => d.name), ms };
  }

  async function quality(rewrite: boolean) {
    const rows: Array<Query & { rank: number; got: string[] }> = [];
    for (const q of queries) {
      const { names } = await top(q.q, rewrite);
      const want = q.expect.map(toolNameFrom);
      const rank = names.findIndex((n) => want.includes(n));
      rows.push({ ...q, rank, got: names });
    }
    const rate = (f: (r: Query & { rank: number }) => boolean, k: number) => {
      const sel = rows.filter(f);
      return { n: sel.length, top3: Math.round((sel.filter((r) => r.rank >= 0 && r.rank < k).length / sel.length) * 1000) / 10 };
    };
    const by: Record<string, unknown> = {};
    for (const kind of ['typo', 'plain', 'keyword'] as const) {
      by[kind] = {
        all: rate((r) => r.kind === kind, 3).top3,
        dev: rate((r) => r.kind === kind && r.split === 'dev', 3).top3,
        holdout: rate((r) => r.kind === kind && r.split === 'holdout', 3).top3,
        top1: rate((r) => r.kind === kind, 1).top3,
      };
    }
    return { top3_percent: by, misses: rows.filter((r) => r.rank < 0).map((r) => `${r.kind}: "${r.q}" → ${r.got.join(', ') || '(none)'}`) };
  }

  const t0 = performance.now();
  await load('api.github.com.json', '', TOOLS);
  const githubTools = tools;
  const small = { tools: githubTools, before: await quality(false), after: await quality(true) };

  const docs = ['ghec.json', 'ghes-3.19.json', 'ghes-3.18.json', 'ghes-3.17.json'];
  for (let i = 0; tools < TOOLS; i++) {
    const file = i < docs.length ? docs[i] : ['api.github.com.json', ...docs][i % (docs.length + 1)];
    await load(file, i < docs.length ? `-${file.replace(/\.json$/, '').replace(/\./g, '-')}` : `-mirror${i}`, TOOLS);
  }
  const seedSeconds = Math.round((performance.now() - t0) / 100) / 10;

  // First query after a catalog change: the vocabulary is rebuilt.
  const cold = await top('wether forcast', true);
  const large = { tools, before: await quality(false), after: await quality(true) };

  const latency: Record<string, { p50_ms: number; p95_ms: number; max_ms: number; n: number }> = {};
  const times: Record<string, number[]> = { before: [], after: [] };
  for (let r = 0; r < ROUNDS; r++) {
    for (const q of queries) {
      times.before.push((await top(q.q, false)).ms);
      times.after.push((await top(q.q, true)).ms);
    }
  }
  for (const [k, xs] of Object.entries(times)) latency[k] = { p50_ms: percentile(xs, 50), p95_ms: percentile(xs, 95), max_ms: percentile(xs, 100), n: xs.length };

  console.log(
    JSON.stringify(
      {
        node: process.version,
        cpus: os.cpus().length,
        loadavg_1m: Math.round(os.loadavg()[0] * 100) / 100,
        engine: ctx.database.engine,
        catalog: '@octokit/openapi: api.github.com, ghec, ghes-3.19, ghes-3.18, ghes-3.17 (then mirrors)',
        seed_seconds: seedSeconds,
        queries: queries.length,
        github_catalog: small,
        at_scale: large,
        latency_at_scale: latency,
        first_query_after_catalog_change_ms: Math.round(cold.ms),
      },
      null,
      2,
    ),
  );
} finally {
  await app.close();
}
