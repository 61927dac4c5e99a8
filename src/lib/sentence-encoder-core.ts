/**
 * The model's side of the sentence encoder's worker (lib/sentence-encoder.ts), as source text: the
 * TF.js graph's `prepare` and `embedChunk`, and the L2 normalisation both runtimes share (from
 * lib/sentence-encoder-onnx.cjs). Kept apart from the worker's management so each file stays small.
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/** Absolute path of lib/sentence-encoder-onnx.cjs (beside this file, also in the `npm start` bundle's dist/). */
export const ONNX_MODULE = fileURLToPath(new URL('./sentence-encoder-onnx.cjs', import.meta.url));

/**
 * Scale `v` to unit length (L2) in place and return it; a zero vector stays zero (sum of squares in
 * double precision, each component rounded to float32 once). lib/sentence-encoder-onnx.cjs's
 * function, the one normalisation of the project: the ONNX encoder calls it, {@link
 * ENCODER_CORE_SOURCE} embeds its source text (that source runs where nothing can be required: in
 * the worker, and in bench/memory-encoder-profile.ts with only `tf` and `DIMS`), and the memory
 * module's embedders use it (`l2normalize`).
 */
export const { normalise } = createRequire(import.meta.url)(ONNX_MODULE) as {
  normalise(v: Float32Array): Float32Array;
};

/**
 * The model's side of the worker (CommonJS functions; they expect `tf` = `@energetic-ai/core` and
 * `DIMS` in scope): `prepare(model)` turns the package's loaded `EmbeddingsModel` into the encoder
 * the worker uses, `embedChunk(enc, texts, ms)` embeds texts (unit rows) adding its stage times to
 * `ms`. Exported so bench/memory-encoder-profile.ts measures this very code in its own thread.
 *
 * The graph runs synchronously (`GraphModel.execute`), not through `executeAsync` as the package's
 * `EmbeddingsModel.embed` runs it. The model's only asynchronous ops are its two `Where` nodes
 * (`ClipToMaxLength/Where`, `FFN/StoreMask/Where`: the positions of the tokens kept); they are
 * renamed to a custom op that computes what `tf.whereAsync` computes — the row-major coordinates of
 * the true elements of `cast(condition, bool)` — reading the condition with `dataSync` instead of
 * `await data()` (no difference on the WebAssembly backend). Everything else is unchanged: the same
 * kernels on the same inputs in the same order, so the vectors are bit-identical. `prepare` checks
 * that on one sentence at load and falls back to `executeAsync` if they differ or the graph cannot
 * run synchronously (another model); test/modules/memory/sentence-encoder.exact.test.ts compares
 * hundreds of texts with the package's own `embed`. The gain: `execute` plans the graph once and
 * keeps the plan, where `executeAsync` walks the 317-node graph again on every call and runs its
 * ~250 ops through a stack of promises (figures: docs/benchmarks.md#memory-on-real-conversations).
 *
 * The inputs are built from typed arrays and the output read once with `dataSync` (the package
 * builds nested arrays and reads `array()`; the same numbers); each row is then L2-normalised in
 * double precision, as before, by `normalise`: lib/sentence-encoder-onnx.cjs's function, its source
 * text included here, so the two runtimes share one implementation.
 */
export const ENCODER_CORE_SOURCE = `
const now = () => performance.now();
// L2 normalisation in place (lib/sentence-encoder-onnx.cjs)
${normalise.toString()}
const SYNC_WHERE = 'SentenceEncoderSyncWhere';

// tf.whereAsync without the await: coordinates (row-major) of the true elements of cast(x, bool)
function syncWhere(node) {
  const cond = tf.cast(node.inputs[0], 'bool');
  const shape = cond.shape;
  let vals;
  try { vals = cond.dataSync(); } finally { cond.dispose(); }
  let n = 0;
  for (let i = 0; i < vals.length; i++) if (vals[i]) n++;
  const rank = shape.length;
  const out = new Int32Array(n * rank);
  for (let i = 0, k = 0; i < vals.length; i++) {
    if (!vals[i]) continue;
    let r = i;
    for (let d = rank - 1; d >= 0; d--) { out[k * rank + d] = r % shape[d]; r = Math.floor(r / shape[d]); }
    k++;
  }
  return tf.tensor2d(out, [n, rank], 'int32');
}

// the graph's Where nodes as the synchronous op; returns a function undoing it
function makeSync(graph) {
  const nodes = Object.values((graph.executor && graph.executor.graph && graph.executor.graph.nodes) || {});
  const where = nodes.filter((n) => n.op === 'Where');
  if (!where.length) return null;
  tf.registerOp(SYNC_WHERE, syncWhere);
  const was = where.map((n) => [n, n.op, n.category]);
  for (const n of where) { n.op = SYNC_WHERE; n.category = 'custom'; }
  return () => { for (const [n, op, category] of was) { n.op = op; n.category = category; } };
}

// one chunk: tokens → the graph → unit rows; adds its stage times (ms) to ms
async function embedChunk(enc, texts, ms) {
  let t = now();
  const ids = texts.map((x) => enc.model.tokenizer.encode(x));
  let n = 0;
  for (const e of ids) n += e.length;
  const ind = new Int32Array(2 * n);
  const val = new Int32Array(n);
  for (let i = 0, k = 0; i < ids.length; i++)
    for (let j = 0; j < ids[i].length; j++, k++) { ind[2 * k] = i; ind[2 * k + 1] = j; val[k] = ids[i][j]; }
  const t1 = now();
  ms.tokenize += t1 - t;
  const indices = tf.tensor2d(ind, [n, 2], 'int32');
  const values = tf.tensor1d(val, 'int32');
  let out;
  try {
    out = enc.sync ? enc.model.model.execute({ indices, values }) : await enc.model.model.executeAsync({ indices, values });
  } finally { indices.dispose(); values.dispose(); }
  const t2 = now();
  ms.graph += t2 - t1;
  let data;
  try { data = out.dataSync(); } finally { out.dispose(); }
  const rows = [];
  for (let i = 0; i < texts.length; i++) rows.push(normalise(data.slice(i * DIMS, (i + 1) * DIMS)));
  ms.read += now() - t2;
  return rows;
}

const same = (a, b) => a.length === b.length && a.every((v, i) => v.length === b[i].length && v.every((x, j) => Object.is(x, b[i][j])));

// load, then check the synchronous graph against executeAsync on one text (and warm both paths up)
async function prepare(model) {
  const probe = ['The quick brown fox jumps over the lazy dog.'];
  const ms = { tokenize: 0, graph: 0, read: 0 };
  const enc = { model, sync: false };
  const reference = await embedChunk(enc, probe, ms);
  let undo = null;
  try {
    undo = makeSync(model.model);
    if (undo) {
      enc.sync = true;
      if (!same(await embedChunk(enc, probe, ms), reference)) throw new Error('differs');
    }
  } catch {
    if (undo) undo();
    enc.sync = false;
  }
  return enc;
}
`;
