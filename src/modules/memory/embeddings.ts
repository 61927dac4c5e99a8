/**
 * Embedding providers for user memory.
 *
 * - {@link LocalHashEmbedder} (`EMBEDDINGS_PROVIDER=local`; the default before the sentence encoder): offline, deterministic, no model download. Feature hashing
 *   (Weinberger et al. 2009) of word unigrams, adjacent word bigrams and character 3–5-grams of each
 *   word (fastText-style `<word>` boundaries), sub-linear TF (`1 + ln tf`), signed buckets, then
 *   L2-normalised. It is honest about being lexical: it matches shared words and word pieces
 *   ("deploy" ~ "deployment"), not meaning ("car" !~ "automobile").
 * - {@link SentenceEncoderEmbedder} (default): Universal Sentence Encoder Lite, offline, in a worker thread.
 * - {@link OpenAIEmbedder}: any server speaking OpenAI's `POST /v1/embeddings` (OpenAI, Ollama,
 *   vLLM, TEI…), batched, with retries on 429/5xx. The URL is operator configuration (trusted), so it
 *   does not go through the guarded upstream client.
 *
 * Every vector a provider returns is L2-normalised (unit length), so cosine similarity = dot product
 * on both storage paths.
 */
import type { MemoryConfig } from '../../config.js';
import { AppError } from '../../http/errors.js';
import { normalise } from '../../lib/sentence-encoder-core.js';
import {
  createSentenceEncoder,
  SENTENCE_ENCODER_DIMENSIONS,
  SENTENCE_ENCODER_MODEL,
  type SentenceEncoder,
} from '../../lib/sentence-encoder.js';

/** Turns texts into unit-length vectors of a fixed dimension. */
export interface EmbeddingProvider {
  /** `local`, `sentence-encoder` or `openai` (reported by `GET /memory/stats`). */
  readonly provider: MemoryConfig['embeddings']['provider'];
  readonly model: string;
  readonly dimensions: number;
  /**
   * One vector per text, in order, each of length {@link dimensions} and unit L2 norm. `opts.query`
   * marks a search query (the sentence encoder serves it before queued writes).
   * @throws AppError upstream_error / upstream_timeout when a remote provider fails
   */
  embed(texts: string[], opts?: { query?: boolean }): Promise<Float32Array[]>;
  /** Release what the provider holds (a worker thread); called when the app closes. */
  close?(): Promise<void>;
}

/** Scale `v` to unit length in place and return it (a zero vector stays zero): lib/sentence-encoder-core.ts `normalise`. */
export const l2normalize: (v: Float32Array) => Float32Array = normalise;

/** Dot product (= cosine similarity of unit vectors). */
export function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}

// ------------------------------------------------------------------------------------------ local

/**
 * English stop words: no features for them. The SMART system's stop list (as distributed with SMART
 * and reused by most IR toolkits); it includes question boilerplate such as "everything", "know" or
 * "looking", so a query's content words decide its neighbours.
 */
export const STOPWORDS: ReadonlySet<string> = new Set(
  (
    "a a's able about above according accordingly across actually after afterwards again against ain't all allow allows almost alone along already also although always am among amongst an and another any anybody anyhow anyone anything anyway anyways anywhere apart appear appreciate appropriate are aren't around as aside ask asking associated at available away awfully " +
    'b be became because become becomes becoming been before beforehand behind being believe below beside besides best better between beyond both brief but by ' +
    "c c'mon c's came can can't cannot cant cause causes certain certainly changes clearly co com come comes concerning consequently consider considering contain containing contains corresponding could couldn't course currently " +
    "d definitely described despite did didn't different do does doesn't doing don't done down downwards during " +
    'e each edu eg eight either else elsewhere enough entirely especially et etc even ever every everybody everyone everything everywhere ex exactly example except ' +
    'f far few fifth first five followed following follows for former formerly forth four from further furthermore ' +
    'g get gets getting given gives go goes going gone got gotten greetings ' +
    "h had hadn't happens hardly has hasn't have haven't having he he's hello help hence her here here's hereafter hereby herein hereupon hers herself hi him himself his hither hopefully how howbeit however " +
    "i i'd i'll i'm i've ie if ignored immediate in inasmuch inc indeed indicate indicated indicates inner insofar instead into inward is isn't it it'd it'll it's its itself " +
    'j just k keep keeps kept know knows known ' +
    "l last lately later latter latterly least less lest let let's like liked likely little look looking looks ltd " +
    'm mainly many may maybe me mean meanwhile merely might more moreover most mostly much must my myself ' +
    'n name namely nd near nearly necessary need needs neither never nevertheless new next nine no nobody non none noone nor normally not nothing novel now nowhere ' +
    'o obviously of off often oh ok okay old on once one ones only onto or other others otherwise ought our ours ourselves out outside over overall own ' +
    'p particular particularly per perhaps placed please plus possible presumably probably provides ' +
    'q que quite qv r rather rd re really reasonably regarding regardless regards relatively respectively right ' +
    "s said same saw say saying says second secondly see seeing seem seemed seeming seems seen self selves sensible sent serious seriously seven several shall she should shouldn't since six so some somebody somehow someone something sometime sometimes somewhat somewhere soon sorry specified specify specifying still sub such sup sure " +
    "t t's take taken tell tends th than thank thanks thanx that that's thats the their theirs them themselves then thence there there's thereafter thereby therefore therein theres thereupon these they they'd they'll they're they've think third this thorough thoroughly those though three through throughout thru thus to together too took toward towards tried tries truly try trying twice two " +
    'u un under unfortunately unless unlikely until unto up upon us use used useful uses using usually uucp ' +
    "v value various very via viz vs w want wants was wasn't way we we'd we'll we're we've welcome well went were weren't what what's whatever when whence whenever where where's whereafter whereas whereby wherein whereupon wherever whether which while whither who who's whoever whole whom whose why will willing wish with within without won't wonder would wouldn't " +
    "x y yes yet you you'd you'll you're you've your yours yourself yourselves z zero"
  )
    .split(' ')
    .flatMap((w) => w.split("'")),
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
  return (
    text
      .normalize('NFKC')
      .toLowerCase()
      .match(/[\p{L}\p{N}]+/gu) ?? []
  );
}

/** Feature families: hash seed and relative weight (the vector is normalised afterwards). */
const WORD = { seed: 1 };
const BIGRAM = { seed: 2 };
const CHAR = { seed: 3 };

/** Relative weights of word unigrams, word bigrams and character n-grams (`local-hash-v1`). */
export const LOCAL_WEIGHTS = { word: 1.0, bigram: 0.5, char: 0.25 };

/**
 * Offline hashed n-gram embedder (`local-hash-v1`). Deterministic: the same text always gives the
 * same vector, on every machine. Tens of microseconds for a 200-character sentence.
 */
export class LocalHashEmbedder implements EmbeddingProvider {
  readonly provider = 'local' as const;
  private readonly weights: number[];

  constructor(
    readonly dimensions: number,
    readonly model = 'local-hash-v1',
    weights: { word: number; bigram: number; char: number } = LOCAL_WEIGHTS,
  ) {
    this.weights = [weights.word, weights.bigram, weights.char];
  }

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
      if (STOPWORDS.has(w)) continue;
      add(hashString(w, WORD.seed), 0);
      if (prev) add(hashString(`${prev} ${w}`, BIGRAM.seed), 1);
      prev = w;
      // word pieces only for words: numbers and codes match as whole tokens
      if (w.length < 3 || /\d/.test(w)) continue;
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
      v[h % this.dimensions] += sign * this.weights[family] * (1 + Math.log(tf));
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
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          ...(opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {}),
        },
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
        throw new AppError(
          'upstream_error',
          `The embedding provider returned ${data?.length ?? 'no'} vectors for ${batch.length} inputs`,
        );
      }
      const sorted = [...data].sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
      for (const d of sorted) {
        const e = d.embedding;
        if (
          !Array.isArray(e) ||
          e.length !== this.dimensions ||
          !e.every((x) => typeof x === 'number' && Number.isFinite(x))
        ) {
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

// ------------------------------------------------------------------------------ sentence encoder

/**
 * Universal Sentence Encoder Lite (the default; `EMBEDDINGS_PROVIDER=sentence-encoder`;
 * src/lib/sentence-encoder.ts): offline, 512 dimensions, in the process's one encoder worker thread,
 * started on the first embedding (the model loads in a few seconds and adds ~70 MB of RSS). Semantic,
 * unlike {@link LocalHashEmbedder}.
 */
export class SentenceEncoderEmbedder implements EmbeddingProvider {
  readonly provider = 'sentence-encoder' as const;
  readonly model = SENTENCE_ENCODER_MODEL;
  readonly dimensions = SENTENCE_ENCODER_DIMENSIONS;
  private readonly encoder: SentenceEncoder;

  constructor(batchSize: number) {
    // chunks of 32 in the worker: a search query waits for at most one chunk of a write batch
    this.encoder = createSentenceEncoder({ batchSize: Math.min(batchSize, 32) });
  }

  /** @throws AppError upstream_error when the model cannot be loaded or its worker fails */
  async embed(texts: string[], opts: { query?: boolean } = {}): Promise<Float32Array[]> {
    try {
      return await this.encoder.embed(texts, opts);
    } catch (err) {
      throw new AppError('upstream_error', `The sentence encoder failed: ${(err as Error).message}`);
    }
  }

  close(): Promise<void> {
    return this.encoder.close();
  }
}

/** The provider selected by configuration (`EMBEDDINGS_URL` set → OpenAI-compatible; `EMBEDDINGS_PROVIDER`). */
export function createEmbeddingProvider(cfg: MemoryConfig['embeddings']): EmbeddingProvider {
  if (cfg.provider === 'openai') return new OpenAIEmbedder(cfg);
  if (cfg.provider === 'sentence-encoder') return new SentenceEncoderEmbedder(cfg.batchSize);
  return new LocalHashEmbedder(cfg.dimensions, cfg.model);
}
