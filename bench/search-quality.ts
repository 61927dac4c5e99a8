/**
 * Tool-search quality and latency on a real catalog (`npm run bench:search-quality`; issue 19 §1).
 *
 * Catalog: the GitHub REST API descriptions (github/rest-api-description via `@octokit/openapi`
 * 23.0.2, MIT), the fields used here vendored in `bench/fixtures/github-openapi.json.br` (100 KB;
 * `generate-github-catalog.ts` rebuilds it): `api.github.com.json` first (1,200+ operations), then
 * `ghec.json` and `ghes-3.{17,18,19}.json` until BENCH_TOOLS tools (10,000 by default; copies of a document get a
 * `-mirrorN` service suffix past the five). Each operation becomes a tool named by its operationId
 * (as the registry's OpenAPI import names them), described by its summary and description; each
 * first tag becomes a service ("GitHub Repos", …, at most 500 tools each), registered through the
 * registry API and published.
 *
 * Queries: `bench/fixtures/search-queries.json` (72, written from a user's point of view: a third
 * with typos, a third plain-language questions, a third keywords; every other one held out), and
 * apart from them `search-queries-dev-extra.json` (24 more plain-language questions, all dev, for
 * tuning: `dev_extra`, and the semantic weight sweep over them).
 *
 * Variants in the same run, on the same database: `before` = SEARCH_QUERY_REWRITE and
 * SEARCH_SEMANTIC off (the words as typed, all required, any-word fallback); `sql` = rewrite on,
 * ranked by the registry's SQL (`SEARCH_INDEX` off); `lexical` = rewrite on (typo corrections, stop
 * words, IDF weights), ranked over the in-process tool index (the default); `after` = that and the semantic arm on
 * (sentence vectors fused by weighted reciprocal rank, SEARCH_SEMANTIC_WEIGHT). Tool vectors are
 * computed once after seeding (`embed_seconds`). Reports top-3 / top-1 hit rates per kind and
 * split, on the GitHub catalog alone (~1,200 tools, with a sweep of the semantic weight on the dev
 * half: the weight is chosen there, never on the held-out half) and again at BENCH_TOOLS, and at
 * both sizes the latency of every query over HTTP (sequential, BENCH_ROUNDS rounds interleaving the
 * variants, p50/p95/max wall time and the process's CPU time per search; the query's sentence
 * vector is computed inside it) and the tool index's build (`index_build_ms`, then the refresh
 * after the catalog grew, `index_refresh_ms`), plus the first query after a
 * catalog change (`first_query_after_catalog_change_ms`: it answers with the previous vocabulary
 * while the new one is built in the background) and that build (`vocabulary_rebuild_ms`).
 * `BENCH_SEMANTIC=off` leaves the semantic arm out (no embedding, no `after` variant).
 * Prints one JSON object.
 */
import os from 'node:os';
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { brotliDecompressSync } from 'node:zlib';
import { benchUser, startBenchApp } from './lib/app.js';
import { toolNameFrom } from '../src/modules/registry/manifest.js';
import { setServiceStatus } from '../src/modules/registry/service.js';
import { refreshToolVectors } from '../src/modules/search/semantic.js';
import { searchStateOf } from '../src/modules/search/state.js';
import { refreshToolIndex } from '../src/modules/search/tool-index.js';

const TOOLS = Number(process.env.BENCH_TOOLS ?? 10_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
/** `BENCH_SEMANTIC=off`: no tool vectors, no `after` variant (minutes of embedding on a loaded machine). */
const SEMANTIC = process.env.BENCH_SEMANTIC !== 'off';
const run = randomBytes(3).toString('hex');

interface Query {
  q: string;
  kind: 'typo' | 'plain' | 'keyword';
  split: 'dev' | 'holdout';
  expect: string[];
}
const readQueries = (file: string) =>
  (JSON.parse(readFileSync(new URL(file, import.meta.url), 'utf8')) as { queries: Query[] }).queries;
const queries = readQueries('./fixtures/search-queries.json');
/**
 * Extra plain-language dev queries (`search-queries-dev-extra.json`, 24, all dev): a tuning signal
 * now that the dev half's plain questions are 10 of 12 right; reported apart (`dev_extra`), never
 * part of the 72-query headline.
 */
const extraQueries = readQueries('./fixtures/search-queries-dev-extra.json');

/** The vendored documents: per file, its tags and operations `[path, method, operationId, summary, description, first tag]`. */
const documents = JSON.parse(
  brotliDecompressSync(readFileSync(new URL('./fixtures/github-openapi.json.br', import.meta.url))).toString('utf8'),
) as Record<
  string,
  {
    tags: Array<{ name: string; description?: string }>;
    operations: Array<[string, string, string, string, string, string]>;
  }
>;

/** Services (by first tag) of one OpenAPI document: name, display name, description, tools. */
function servicesOf(file: string, suffix: string) {
  const doc = documents[file];
  const tagText = new Map(doc.tags.map((t) => [t.name, t.description ?? '']));
  const byTag = new Map<
    string,
    Array<{ name: string; description: string; method: string; path: string; input_schema: object }>
  >();
  for (const [path, method, operationId, summary, text, tag] of doc.operations) {
    const description = [summary, text].filter(Boolean).join('\n\n').slice(0, 4000);
    const list = byTag.get(tag) ?? [];
    const params = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
    const input_schema = {
      type: 'object',
      properties: Object.fromEntries(params.map((p) => [p, { type: 'string' }])),
      required: params,
    };
    let name = toolNameFrom(operationId);
    // As the registry's OpenAPI import: a repeated operationId gets a numeric suffix.
    for (let n = 2; list.some((t) => t.name === name); n++) name = `${toolNameFrom(operationId).slice(0, 60)}_${n}`;
    list.push({ name, description, method: method.toUpperCase(), path, input_schema });
    byTag.set(tag, list);
  }
  const out = [];
  for (const [tag, tools] of byTag) {
    for (let i = 0; i < tools.length; i += 500) {
      const words = tag
        .split('-')
        .map((w) => w[0].toUpperCase() + w.slice(1))
        .join(' ');
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
  const { headers } = await benchUser(app, `bench-sq-${run}@example.test`);
  let tools = 0;
  async function load(file: string, suffix: string, cap: number) {
    for (const svc of servicesOf(file, suffix)) {
      if (tools >= cap) return;
      svc.tools = svc.tools.slice(0, cap - tools);
      const res = await app.inject({
        method: 'POST',
        url: '/owner/services',
        headers,
        payload: { ...svc, base_url: 'https://api.github.com', auth: { type: 'none' } },
      });
      if (res.statusCode !== 201) throw new Error(`register ${svc.name}: ${res.statusCode} ${res.body.slice(0, 300)}`);
      await setServiceStatus(ctx, res.json().id, 'published');
      tools += svc.tools.length;
    }
  }

  type Variant = 'before' | 'sql' | 'lexical' | 'after' | number;
  const defaultWeight = ctx.config.search.semanticWeight;
  /** Top-3 names for `q` under a variant (a number: `after` with that semantic weight; same database). */
  async function top(q: string, variant: Variant): Promise<{ names: string[]; ms: number; cpuMs: number }> {
    ctx.config.search.queryRewrite = variant !== 'before';
    ctx.config.search.index = variant !== 'sql';
    ctx.config.search.semantic = variant === 'after' || typeof variant === 'number';
    ctx.config.search.semanticWeight = typeof variant === 'number' ? variant : defaultWeight;
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    const res = await fetch(`${base}/search/tools?q=${encodeURIComponent(q)}&limit=3`, { headers });
    const body = (await res.json()) as { data: Array<{ name: string }> };
    const ms = performance.now() - t0;
    const c = process.cpuUsage(c0);
    if (res.status !== 200) throw new Error(`search ${q}: ${res.status}`);
    return { names: body.data.map((d) => d.name), ms, cpuMs: (c.user + c.system) / 1000 };
  }

  async function quality(variant: Variant, only?: Query['split'], set: Query[] = queries) {
    const rows: Array<Query & { rank: number; got: string[] }> = [];
    for (const q of set) {
      if (only && q.split !== only) continue;
      const { names } = await top(q.q, variant);
      const want = q.expect.map(toolNameFrom);
      const rank = names.findIndex((n) => want.includes(n));
      rows.push({ ...q, rank, got: names });
    }
    const rate = (f: (r: Query & { rank: number }) => boolean, k: number) => {
      const sel = rows.filter(f);
      return {
        n: sel.length,
        top3: sel.length
          ? Math.round((sel.filter((r) => r.rank >= 0 && r.rank < k).length / sel.length) * 1000) / 10
          : null,
      };
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
    return {
      top3_percent: by,
      misses: rows.filter((r) => r.rank < 0).map((r) => `${r.kind}: "${r.q}" → ${r.got.join(', ') || '(none)'}`),
    };
  }

  /** The plain-language share of a {@link quality} result over the extra dev queries: top-3 and top-1 %, and the misses. */
  function plainOf(r: Awaited<ReturnType<typeof quality>>) {
    const p = r.top3_percent.plain as { dev: number | null; top1: number | null };
    return { n: extraQueries.length, top3: p.dev, top1: p.top1, misses: r.misses };
  }

  /**
   * Wall time and process CPU time per search over HTTP (the server, PGlite included, runs in this
   * process: its CPU is the search's own work, less sensitive to machine load than wall time):
   * BENCH_ROUNDS rounds of every query, the variants interleaved per query.
   */
  async function latency(variants: readonly Variant[]) {
    const wall: Record<string, number[]> = Object.fromEntries(variants.map((v) => [v, []]));
    const cpu: Record<string, number[]> = Object.fromEntries(variants.map((v) => [v, []]));
    for (let r = 0; r < ROUNDS; r++) {
      for (const q of queries) {
        for (const v of variants) {
          const t = await top(q.q, v);
          wall[v].push(t.ms);
          cpu[v].push(t.cpuMs);
        }
      }
    }
    const out: Record<
      string,
      {
        p50_ms: number;
        p95_ms: number;
        max_ms: number;
        cpu_p50_ms: number;
        cpu_p95_ms: number;
        n: number;
        loadavg_1m: number;
      }
    > = {};
    for (const v of variants) {
      const xs = wall[v];
      out[v] = {
        p50_ms: percentile(xs, 50),
        p95_ms: percentile(xs, 95),
        max_ms: percentile(xs, 100),
        cpu_p50_ms: percentile(cpu[v], 50),
        cpu_p95_ms: percentile(cpu[v], 95),
        n: xs.length,
        loadavg_1m: Math.round(os.loadavg()[0] * 100) / 100,
      };
    }
    return out;
  }
  /** Build the in-process tool index now (a search would start it; quality and latency are measured on a built one); ms. */
  async function buildIndex() {
    const i0 = performance.now();
    await refreshToolIndex(ctx);
    return Math.round(performance.now() - i0);
  }

  const t0 = performance.now();
  await load('api.github.com.json', '', TOOLS);
  const githubTools = tools;
  const e0 = performance.now();
  if (SEMANTIC) await refreshToolVectors(ctx);
  const embedSmall = Math.round((performance.now() - e0) / 100) / 10;
  // Quality is measured on a settled vocabulary (a query starts its background build).
  await top('settle', 'lexical');
  await searchStateOf(ctx).vocabularyRefresh;
  const indexSmall = await buildIndex();
  const sweep: Record<string, unknown> = {};
  const sweepExtra: Record<string, unknown> = {};
  if (SEMANTIC) {
    for (const w of [0.25, 0.5, 1, 2]) {
      sweep[String(w)] = (await quality(w, 'dev')).top3_percent;
      sweepExtra[String(w)] = plainOf(await quality(w, 'dev', extraQueries));
    }
  }
  const small = {
    tools: githubTools,
    embed_seconds: embedSmall,
    semantic_weight_sweep_dev: sweep,
    semantic_weight_sweep_dev_extra: sweepExtra,
    index_build_ms: indexSmall,
    before: await quality('before'),
    sql: await quality('sql'),
    lexical: await quality('lexical'),
    after: SEMANTIC ? await quality('after') : null,
    dev_extra: {
      lexical: plainOf(await quality('lexical', 'dev', extraQueries)),
      after: SEMANTIC ? plainOf(await quality('after', 'dev', extraQueries)) : null,
    },
  };
  const variants = SEMANTIC
    ? (['before', 'sql', 'lexical', 'after'] as const)
    : (['before', 'sql', 'lexical'] as const);
  const latencySmall = await latency(variants);

  const docs = ['ghec.json', 'ghes-3.19.json', 'ghes-3.18.json', 'ghes-3.17.json'];
  for (let i = 0; tools < TOOLS; i++) {
    const file = i < docs.length ? docs[i] : ['api.github.com.json', ...docs][i % (docs.length + 1)];
    await load(file, i < docs.length ? `-${file.replace(/\.json$/, '').replace(/\./g, '-')}` : `-mirror${i}`, TOOLS);
  }
  const seedSeconds = Math.round((performance.now() - t0) / 100) / 10;
  const e1 = performance.now();
  if (SEMANTIC) await refreshToolVectors(ctx);
  const embedLarge = Math.round((performance.now() - e1) / 100) / 10;

  // First query after a catalog change: it answers with the previous vocabulary while the new one
  // is built in the background (`vocabulary_rebuild_ms`, awaited here before measuring quality).
  const coldLiteral = await top('wether forcast', 'before');
  const cold = await top('wether forcast', 'lexical');
  const r0 = performance.now();
  await searchStateOf(ctx).vocabularyRefresh;
  const rebuildMs = Math.round(performance.now() - r0 + cold.ms);
  const indexLarge = await buildIndex();
  const large = {
    tools,
    embed_seconds: embedLarge,
    index_refresh_ms: indexLarge,
    before: await quality('before'),
    sql: await quality('sql'),
    lexical: await quality('lexical'),
    after: SEMANTIC ? await quality('after') : null,
  };
  const latencyLarge = await latency(variants);

  console.log(
    JSON.stringify(
      {
        node: process.version,
        cpus: os.cpus().length,
        loadavg_1m: Math.round(os.loadavg()[0] * 100) / 100,
        semantic_weight: defaultWeight,
        engine: ctx.database.engine,
        catalog:
          'GitHub REST API descriptions (@octokit/openapi 23.0.2, vendored): api.github.com, ghec, ghes-3.19, ghes-3.18, ghes-3.17 (then mirrors)',
        seed_seconds: seedSeconds,
        queries: queries.length,
        github_catalog: small,
        at_scale: large,
        latency_github_catalog: latencySmall,
        latency_at_scale: latencyLarge,
        first_query_after_catalog_change_ms: { literal: Math.round(coldLiteral.ms), rewrite: Math.round(cold.ms) },
        vocabulary_rebuild_ms: rebuildMs,
      },
      null,
      2,
    ),
  );
} finally {
  await app.close();
}
