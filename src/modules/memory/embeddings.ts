/**
 * Embedding providers for user memory (issue 5 §1).
 *
 * - {@link LocalHashEmbedder} (default): offline, deterministic, no model download. Feature hashing
 *   (Weinberger et al. 2009) of word unigrams, adjacent word bigrams and character 3–5-grams of each
 *   word (fastText-style `<word>` boundaries), sub-linear TF (`1 + ln tf`), signed buckets, then
 *   L2-normalised. It is honest about being lexical: it matches shared words and word pieces
 *   ("deploy" ~ "deployment"), not meaning ("car" !~ "automobile").
 * - {@link OpenAIEmbedder}: any server speaking OpenAI's `POST /v1/embeddings` (OpenAI, Ollama,
 *   vLLM, TEI…), batched, with retries on 429/5xx. The URL is operator configuration (trusted), so it
 *   does not go through the guarded upstream client.
 *
 * Every vector a provider returns is L2-normalised (unit length), so cosine similarity = dot product
 * on both storage paths.
 */
import type { MemoryConfig } from '../../config.js';
import { AppError } from '../../http/errors.js';

/** Turns texts into unit-length vectors of a fixed dimension. */
export interface EmbeddingProvider {
  /** `local` or `openai` (reported by `GET /memory/stats`). */
  readonly provider: 'local' | 'openai';
  readonly model: string;
  readonly dimensions: number;
  /**
   * One vector per text, in order, each of length {@link dimensions} and unit L2 norm.
   * @throws AppError upstream_error / upstream_timeout when a remote provider fails
   */
  embed(texts: string[]): Promise<Float32Array[]>;
}

/** Scale `v` to unit length in place (a zero vector stays zero). */
export function l2normalize(v: Float32Array): Float32Array {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i] * v[i];
  if (s > 0) {
    const inv = 1 / Math.sqrt(s);
    for (let i = 0; i < v.length; i++) v[i] *= inv;
  }
  return v;
}

/** Dot product (= cosine similarity of unit vectors). */
export function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}

// ------------------------------------------------------------------------------------------ local

/** Common English function words: no word features for them (their n-grams still count). */
const STOPWORDS = new Set(
  (
    'a an and are as at be been being but by can could did do does doing done for from had has have having he her here hers him his how i if in into ' +
    'is it its itself just me more most my no nor not of off on once only or other our ours out over own same she should so some such than that the ' +
    'their theirs them then there these they this those through to too under until up very was we were what when where which while who whom why will ' +
    'with would you your yours about above after again against all any because before below between both during each few further'
  ).split(' '),
);

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** murmur3 fmix32: final avalanche so the low bits are well mixed for the modulo. */
function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** 32-bit FNV-1a of a string (UTF-16 code units), seeded per feature family, then fmix32. */
function hashString(s: string, seed: number): number {
  let h = (FNV_OFFSET ^ seed) >>> 0;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), FNV_PRIME);
  return fmix(h);
}

/** Lower-cased word tokens (letters and digits, any script). */
export function tokenize(text: string): string[] {
  return text.normalize('NFKC').toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

/** Feature families: hash seed and relative weight (the vector is normalised afterwards). */
const WORD = { seed: 1, weight: 1.0 };
const BIGRAM = { seed: 2, weight: 0.5 };
const CHAR = { seed: 3, weight: 0.25 };
const FAMILIES = [WORD, BIGRAM, CHAR];

/**
 * Offline hashed n-gram embedder (`local-hash-v1`). Deterministic: the same text always gives the
 * same vector, on every machine. Tens of microseconds for a 200-character sentence.
 */
export class LocalHashEmbedder implements EmbeddingProvider {
  readonly provider = 'local' as const;
  constructor(
    readonly dimensions: number,
    readonly model = 'local-hash-v1',
  ) {}

  async embed(texts: string[]): Promise<Float32Array[]> {
    return texts.map((t) => this.embedOne(t));
  }

  /** Synchronous embedding of one text. */
  embedOne(text: string): Float32Array {
    // key = hash * 4 + family index (exact in a double: < 2^34)
    const counts = new Map<number, number>();
    const add = (hash: number, family: number) => {
      const key = hash * 4 + family;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    };
    const words = tokenize(text);
    let prev: string | null = null;
    for (const w of words) {
      if (!STOPWORDS.has(w)) {
        add(hashString(w, WORD.seed), 0);
        if (prev) add(hashString(`${prev} ${w}`, BIGRAM.seed), 1);
        prev = w;
      }
      if (w.length < 2) continue;
      // character 3..5-grams of "<word>", hashed incrementally (no substrings allocated)
      const len = w.length + 2;
      const at = (k: number) => (k === 0 ? 60 /* < */ : k === len - 1 ? 62 /* > */ : w.charCodeAt(k - 1));
      for (let i = 0; i + 3 <= len; i++) {
        let h = (FNV_OFFSET ^ CHAR.seed) >>> 0;
        for (let j = i; j < i + 5 && j < len; j++) {
          h = Math.imul(h ^ at(j), FNV_PRIME);
          if (j - i >= 2) add(fmix(h), 2);
        }
      }
    }
    if (counts.size === 0) add(hashString(text.trim().toLowerCase(), WORD.seed), 0); // punctuation-only text: never a zero vector
    const v = new Float32Array(this.dimensions);
    for (const [key, tf] of counts) {
      const family = key % 4;
      const h = (key - family) / 4;
      const sign = h & 0x80000000 ? -1 : 1;
      v[h % this.dimensions] += sign * FAMILIES[family].weight * (1 + Math.log(tf));
    }
    return l2normalize(v);
  }
}

// ----------------------------------------------------------------------------------------- openai

/** `base` + the OpenAI path: accepts `http://h`, `http://h/v1` or the full endpoint URL. */
export function openAiEndpoint(base: string, path: 'embeddings' | 'chat/completions'): string {
  const b = base.replace(/\/+$/, '');
  if (b.endsWith(`/${path}`)) return b;
  if (/\/v\d+$/.test(b)) return `${b}/${path}`;
  return `${b}/v1/${path}`;
}

/** POST JSON with timeout and bounded retries on 429/5xx/network errors; returns the parsed body. */
export async function postJson(
  url: string,
  body: unknown,
  opts: { apiKey?: string; timeoutMs: number; what: string; attempts?: number },
): Promise<unknown> {
  const attempts = opts.attempts ?? 3;
  let lastErr: AppError | null = null;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    let res: Response;
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', ...(opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {}) },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(opts.timeoutMs),
      });
    } catch (err) {
      const e = err as Error;
      lastErr =
        e.name === 'TimeoutError'
          ? new AppError('upstream_timeout', `${opts.what} did not answer within ${opts.timeoutMs} ms`)
          : new AppError('upstream_error', `${opts.what} is unreachable: ${e.message}`);
      if (attempt < attempts) await sleep(250 * 2 ** (attempt - 1));
      continue;
    }
    const text = await res.text();
    if (res.ok) {
      try {
        return JSON.parse(text);
      } catch {
        throw new AppError('upstream_error', `${opts.what} answered with malformed JSON`);
      }
    }
    const detail = text.slice(0, 200).replace(/\s+/g, ' ');
    lastErr = new AppError('upstream_error', `${opts.what} answered HTTP ${res.status}: ${detail}`);
    if ((res.status === 429 || res.status >= 500) && attempt < attempts) {
      const ra = Number(res.headers.get('retry-after'));
      await sleep(Number.isFinite(ra) && ra > 0 ? Math.min(ra * 1000, 5000) : 250 * 2 ** (attempt - 1));
      continue;
    }
    throw lastErr;
  }
  throw lastErr ?? new AppError('upstream_error', `${opts.what} failed`);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * OpenAI-compatible embeddings (`POST {EMBEDDINGS_URL}/v1/embeddings`, body
 * `{model, input: string[], dimensions, encoding_format: "float"}`, answer `{data: [{index, embedding}]}`).
 * Inputs are sent in batches of `batchSize`; vectors are re-normalised (some servers do not).
 */
export class OpenAIEmbedder implements EmbeddingProvider {
  readonly provider = 'openai' as const;
  readonly model: string;
  readonly dimensions: number;
  private readonly endpoint: string;

  constructor(private readonly cfg: MemoryConfig['embeddings']) {
    if (!cfg.url) throw new Error('OpenAIEmbedder needs EMBEDDINGS_URL');
    this.model = cfg.model;
    this.dimensions = cfg.dimensions;
    this.endpoint = openAiEndpoint(cfg.url, 'embeddings');
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += this.cfg.batchSize) {
      const batch = texts.slice(i, i + this.cfg.batchSize);
      const body = (await postJson(
        this.endpoint,
        { model: this.model, input: batch, dimensions: this.dimensions, encoding_format: 'float' },
        { apiKey: this.cfg.apiKey, timeoutMs: this.cfg.timeoutMs, what: 'The embedding provider' },
      )) as { data?: Array<{ index?: number; embedding?: unknown }> };
      const data = Array.isArray(body?.data) ? body.data : null;
      if (!data || data.length !== batch.length) {
        throw new AppError('upstream_error', `The embedding provider returned ${data?.length ?? 'no'} vectors for ${batch.length} inputs`);
      }
      const sorted = [...data].sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
      for (const d of sorted) {
        const e = d.embedding;
        if (!Array.isArray(e) || e.length !== this.dimensions || !e.every((x) => typeof x === 'number' && Number.isFinite(x))) {
          throw new AppError(
            'upstream_error',
            `The embedding provider returned a vector of ${Array.isArray(e) ? e.length : 'no'} numbers; EMBEDDINGS_DIMENSIONS is ${this.dimensions}`,
          );
        }
        out.push(l2normalize(Float32Array.from(e as number[])));
      }
    }
    return out;
  }
}

/** The provider selected by configuration (`EMBEDDINGS_URL` set → OpenAI-compatible). */
export function createEmbeddingProvider(cfg: MemoryConfig['embeddings']): EmbeddingProvider {
  return cfg.provider === 'openai' ? new OpenAIEmbedder(cfg) : new LocalHashEmbedder(cfg.dimensions, cfg.model);
}
