/**
 * A growable row-major float32 matrix with a SIMD scan: the dot product of every row with a query
 * vector, for the in-process vector arm (vector-cache.ts). The rows live in a WebAssembly memory and
 * a 217-byte module multiplies them four lanes at a time (`f32x4`); in JavaScript the same scan
 * costs ~3× as long (figures in docs/adr/0258-memory-simd-scan-the-in-process-vector-arm.md). Sums are single precision,
 * as pgvector's (|difference| to a double sum ~1e-6 on unit vectors). Where WebAssembly SIMD is
 * missing, or the width is not a multiple of 4, the scan runs in JavaScript over the same layout.
 *
 * The module's source (WebAssembly text, compiled with wabt 1.0.37 `wat2wasm --enable-simd`):
 *
 *   (module (import "env" "memory" (memory 1))
 *     ;; out[r] = Σ_j m[r·dims + j] · q[j] for r < n (byte offsets m, q, out; dims a multiple of 4)
 *     (func (export "scan") (param $m i32) (param $q i32) (param $n i32) (param $dims i32) (param $out i32)
 *       (local $row i32) (local $rowEnd i32) (local $qi i32) (local $acc v128) (local $outEnd i32) (local $stride i32)
 *       (local.set $stride (i32.shl (local.get $dims) (i32.const 2)))
 *       (local.set $row (local.get $m))
 *       (local.set $outEnd (i32.add (local.get $out) (i32.shl (local.get $n) (i32.const 2))))
 *       (block $done (loop $rows
 *         (br_if $done (i32.ge_u (local.get $out) (local.get $outEnd)))
 *         (local.set $acc (v128.const f32x4 0 0 0 0))
 *         (local.set $qi (local.get $q))
 *         (local.set $rowEnd (i32.add (local.get $row) (local.get $stride)))
 *         (block $rowDone (loop $cols
 *           (br_if $rowDone (i32.ge_u (local.get $row) (local.get $rowEnd)))
 *           (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul (v128.load (local.get $row)) (v128.load (local.get $qi)))))
 *           (local.set $row (i32.add (local.get $row) (i32.const 16)))
 *           (local.set $qi (i32.add (local.get $qi) (i32.const 16)))
 *           (br $cols)))
 *         (f32.store (local.get $out) (f32.add
 *           (f32.add (f32x4.extract_lane 0 (local.get $acc)) (f32x4.extract_lane 1 (local.get $acc)))
 *           (f32.add (f32x4.extract_lane 2 (local.get $acc)) (f32x4.extract_lane 3 (local.get $acc)))))
 *         (local.set $out (i32.add (local.get $out) (i32.const 4)))
 *         (br $rows)))))
 */

const SCAN_WASM =
  'AGFzbQEAAAABCQFgBX9/f39/AAIPAQNlbnYGbWVtb3J5AgABAwIBAAcIAQRzY2FuAAAKpAEBoQEDA38BewJ/IANBAnQhCiAAIQUgBCACQQJ0aiEJAkADQCAEIAlPDQH9DAAAAAAAAAAAAAAAAAAAAAAhCCABIQcgBSAKaiEGAkADQCAFIAZPDQEgCCAF/QAEACAH/QAEAP3mAf3kASEIIAVBEGohBSAHQRBqIQcMAAsLIAQgCP0fACAI/R8BkiAI/R8CIAj9HwOSkjgCACAEQQRqIQQMAAsLCw==';

const PAGE = 65_536;

let compiled: WebAssembly.Module | null | undefined;

/** The scan module, or null where WebAssembly SIMD is not available. */
function scanModule(): WebAssembly.Module | null {
  if (compiled === undefined) {
    try {
      compiled = new WebAssembly.Module(Buffer.from(SCAN_WASM, 'base64'));
    } catch {
      compiled = null;
    }
  }
  return compiled;
}

/**
 * Dot product of `q` with the `dims` components of `m` from `base`, in double precision with four
 * independent sums (the CPU overlaps them; one chain waits for each addition).
 */
export function dotAt(m: Float32Array, base: number, q: Float32Array, dims: number): number {
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  let j = 0;
  for (; j + 3 < dims; j += 4) {
    s0 += m[base + j] * q[j];
    s1 += m[base + j + 1] * q[j + 1];
    s2 += m[base + j + 2] * q[j + 2];
    s3 += m[base + j + 3] * q[j + 3];
  }
  for (; j < dims; j++) s0 += m[base + j] * q[j];
  return s0 + s1 + (s2 + s3);
}

/** Rows of `dims` float32 components, appended at the end, scanned against a query; see the module comment. */
export class ScanMatrix {
  /** The rows (`capacity × dims` components; only rows written are meaningful). Replaced when the matrix grows. */
  data: Float32Array;
  private capacity = 0;
  private memory: WebAssembly.Memory | null = null;
  private scanFn: ((m: number, q: number, n: number, dims: number, out: number) => void) | null = null;
  private plainOut = new Float32Array(0);

  /** @param simd false forces the JavaScript scan (tests compare the two). */
  constructor(
    readonly dims: number,
    rows: number,
    simd = true,
  ) {
    const mod = simd && dims % 4 === 0 ? scanModule() : null;
    if (mod) {
      this.memory = new WebAssembly.Memory({ initial: 1 });
      this.scanFn = new WebAssembly.Instance(mod, { env: { memory: this.memory } }).exports.scan as typeof this.scanFn;
    }
    this.data = new Float32Array(0);
    this.reserve(Math.max(64, rows));
  }

  /** Whether the scan runs in WebAssembly SIMD. */
  get simd(): boolean {
    return this.scanFn !== null;
  }

  /** Bytes held (the memory's size, or the arrays'). */
  get byteLength(): number {
    return this.memory ? this.memory.buffer.byteLength : this.data.byteLength + this.plainOut.byteLength;
  }

  /** Make room for at least `rows` rows (capacity doubles), keeping the rows written. */
  reserve(rows: number): void {
    if (rows <= this.capacity) return;
    const capacity = Math.max(rows, this.capacity * 2);
    const dims = this.dims;
    if (this.memory) {
      // layout: rows [0, capacity·dims), then the query (dims), then the scores (capacity)
      const need = (capacity * dims + dims + capacity) * 4;
      const have = this.memory.buffer.byteLength;
      if (need > have) this.memory.grow(Math.ceil((need - have) / PAGE));
      // rows written stay where they are (growing keeps the memory's bytes); the query and scores
      // regions move past the new capacity, so rows beyond those written may hold old bytes
      this.data = new Float32Array(this.memory.buffer, 0, capacity * dims);
    } else {
      const grown = new Float32Array(capacity * dims);
      grown.set(this.data);
      this.data = grown;
      this.plainOut = new Float32Array(capacity);
    }
    this.capacity = capacity;
  }

  /**
   * The dot products of the first `n` rows with `q` (length `dims`), as float32 (summed in single
   * precision in SIMD, in double in JavaScript). The returned array is reused by the next scan.
   */
  scan(q: Float32Array, n: number): Float32Array {
    const dims = this.dims;
    if (this.memory && this.scanFn) {
      const qAt = this.capacity * dims * 4;
      const outAt = qAt + dims * 4;
      new Float32Array(this.memory.buffer, qAt, dims).set(q);
      this.scanFn(0, qAt, n, dims, outAt);
      return new Float32Array(this.memory.buffer, outAt, n);
    }
    const out = this.plainOut;
    for (let r = 0; r < n; r++) out[r] = dotAt(this.data, r * dims, q, dims);
    return out.subarray(0, n);
  }
}
