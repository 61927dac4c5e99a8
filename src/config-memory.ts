/**
 * User-memory settings (`src/modules/memory`): embeddings, fusion weights, summaries. Part of
 * {@link ./config.ts}'s `Config` (`config.memory`); split out to keep each file readable.
 */
import { bool, fail, int, ratio, str, url, type Env } from './config-parse.js';

/** User-memory settings (`src/modules/memory`). */
export interface MemoryConfig {
  /** Largest memory `content`, UTF-8 bytes (more → 413). */
  maxContentBytes: number;
  embeddings: {
    /**
     * `sentence-encoder` (default; `defaulted` when no EMBEDDINGS_PROVIDER/URL chose it, so a store of the
     * earlier default `local` keeps its space, decisions memory/default-encoder): USE Lite, offline, worker
     * thread, 512-d; `local`: hashed n-grams, lexical; `openai`: an OpenAI-compatible server (`EMBEDDINGS_URL`).
     */
    provider: 'local' | 'sentence-encoder' | 'openai';
    defaulted: boolean;
    /** Base URL of the OpenAI-compatible server (`EMBEDDINGS_URL`); set → provider `openai`. */
    url?: string;
    model: string;
    apiKey?: string;
    /** Vector length; the `embedding` column is sized to it at start-up (local: 384 or 512). */
    dimensions: number;
    /** Texts per `/v1/embeddings` request. */
    batchSize: number;
    timeoutMs: number;
  };
  /** Re-embed every stored memory at start-up when the embedding model or dimensions changed. */
  reembedOnStart: boolean;
  /**
   * pgvector `hnsw.ef_search` of memory search (candidate list of the HNSW scan): one per 100 of the
   * caller's memories, at least `hnswEfSearch` and at most `hnswEfSearchMax` (~0.95 recall@10 against
   * exact search measured at 10k memories with 100 and at 100k with 1000; bench/memory.ts).
   */
  hnswEfSearch: number;
  /** Upper bound of the memory-count-sized `hnsw.ef_search` (`MEMORY_HNSW_EF_SEARCH_MAX`, 1000). */
  hnswEfSearchMax: number;
  /**
   * Ranking of memory search (modules/memory/ranking.ts): relevance = (text / best text +
   * `vectorWeight` × similarity) / (1 + `vectorWeight`) (`MEMORY_VECTOR_WEIGHT`: 2 with the sentence
   * encoder, 0.5 with the local embedder, 1 with an OpenAI-compatible model); in hybrid mode a "when"
   * question or a named period scales the memories that do not match it by 1 / (1 + `timeBoost`)
   * (`MEMORY_TIME_BOOST`, 0.5), and each memory adds `neighbourWeight` × its better neighbouring
   * memory's relevance (`MEMORY_NEIGHBOUR_WEIGHT`, 0.5), a turn that is mainly a question counting
   * its own part / (1 + `questionPenalty`). Chosen on real conversations,
   * leave-one-conversation-out (bench/memory-locomo.ts); 0 turns a part off.
   */
  fusion: {
    vectorWeight: number;
    neighbourWeight: number;
    timeBoost: number;
    localVectorWeight: number;
    /** Hybrid mode: a conversation turn that is mainly a question (turn-facts.ts `asksMainly`) has its own relevance scaled by 1 / (1 + this) (`MEMORY_QUESTION_PENALTY`, 0.5; 0–10). */
    questionPenalty: number;
  };
  /** OpenAI-compatible chat model for session summaries; unset → the local extractive summariser. */
  summaryLlm: { url?: string; model?: string; apiKey?: string; timeoutMs: number };
}

/** Default fusion weight of the vector arm per embedder (`MEMORY_VECTOR_WEIGHT` overrides all). */
const VECTOR_WEIGHT = { local: 0.5, 'sentence-encoder': 2, openai: 1 } as const;

/** Parse the memory settings from `env`. @throws ConfigError naming the first bad variable. */
export function memoryConfig(env: Env): MemoryConfig {
  const embUrl = url(env, 'EMBEDDINGS_URL', ['http', 'https']);
  const named = str(env, 'EMBEDDINGS_PROVIDER');
  if (named !== undefined && !['local', 'sentence-encoder', 'openai'].includes(named))
    fail('EMBEDDINGS_PROVIDER', 'local, sentence-encoder or openai', named);
  if (named === 'openai' && !embUrl) fail('EMBEDDINGS_URL', 'set when EMBEDDINGS_PROVIDER is openai', '');
  if (embUrl && named !== undefined && named !== 'openai')
    fail('EMBEDDINGS_PROVIDER', 'openai (or unset) when EMBEDDINGS_URL is set', named);
  const provider = embUrl ? 'openai' : named === 'local' ? 'local' : 'sentence-encoder';
  const dimensions = int(
    env,
    'EMBEDDINGS_DIMENSIONS',
    { local: 384, 'sentence-encoder': 512, openai: 1536 }[provider],
    1,
    2000,
  );
  if (provider === 'local' && dimensions !== 384 && dimensions !== 512)
    fail('EMBEDDINGS_DIMENSIONS', '384 or 512 for the local embedding provider', String(dimensions));
  if (provider === 'sentence-encoder' && dimensions !== 512)
    fail(
      'EMBEDDINGS_DIMENSIONS',
      '512 for the sentence-encoder provider (the default; EMBEDDINGS_PROVIDER=local takes 384 or 512)',
      String(dimensions),
    );
  // One read of MEMORY_VECTOR_WEIGHT; unset → each embedder's own default.
  const vectorWeight =
    str(env, 'MEMORY_VECTOR_WEIGHT') === undefined ? undefined : ratio(env, 'MEMORY_VECTOR_WEIGHT', 0);
  const summaryUrl = url(env, 'SUMMARY_LLM_URL', ['http', 'https']);
  const summaryModel = str(env, 'SUMMARY_LLM_MODEL');
  if (summaryUrl && !summaryModel) fail('SUMMARY_LLM_MODEL', 'set when SUMMARY_LLM_URL is set', '');
  return {
    maxContentBytes: int(env, 'MEMORY_MAX_CONTENT_BYTES', 16 * 1024, 1, 1024 * 1024),
    embeddings: {
      provider,
      defaulted: !embUrl && named === undefined,
      url: embUrl,
      model:
        provider === 'sentence-encoder'
          ? 'universal-sentence-encoder-lite'
          : str(env, 'EMBEDDINGS_MODEL', provider === 'local' ? 'local-hash-v1' : 'text-embedding-3-small')!,
      apiKey: str(env, 'EMBEDDINGS_API_KEY'),
      dimensions,
      batchSize: int(env, 'EMBEDDINGS_BATCH_SIZE', 64, 1, 2048),
      timeoutMs: int(env, 'EMBEDDINGS_TIMEOUT_MS', 30_000, 100, 300_000),
    },
    reembedOnStart: bool(env, 'MEMORY_REEMBED', false),
    hnswEfSearch: int(env, 'MEMORY_HNSW_EF_SEARCH', 100, 1, 1000),
    hnswEfSearchMax: int(env, 'MEMORY_HNSW_EF_SEARCH_MAX', 1000, 1, 1000),
    fusion: {
      vectorWeight: vectorWeight ?? VECTOR_WEIGHT[provider],
      localVectorWeight: vectorWeight ?? VECTOR_WEIGHT.local,
      neighbourWeight: ratio(env, 'MEMORY_NEIGHBOUR_WEIGHT', 0.5),
      timeBoost: ratio(env, 'MEMORY_TIME_BOOST', 0.5),
      questionPenalty: ratio(env, 'MEMORY_QUESTION_PENALTY', 0.5),
    },
    summaryLlm: {
      url: summaryUrl,
      model: summaryModel,
      apiKey: str(env, 'SUMMARY_LLM_API_KEY'),
      timeoutMs: int(env, 'SUMMARY_LLM_TIMEOUT_MS', 60_000, 100, 600_000),
    },
  };
}
