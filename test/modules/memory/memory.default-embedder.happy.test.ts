/**
 * The default embedding provider (issue 21): the sentence encoder for a new store, while a store
 * embedded with the earlier default (the local hashed embedder) keeps its space until re-embedded —
 * unless the operator named a provider, which keeps the strict start-up check.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import type { AppContext } from '../../../src/context.js';
import { sentenceEncoderStats } from '../../../src/lib/sentence-encoder.js';
import { embeddingProviderOf, initMemory } from '../../../src/modules/memory/runtime.js';
import { addMemory, searchMemories } from '../../../src/modules/memory/service.js';
import { call, createUser, setupApp, testEnv } from '../../helpers/app.js';

// a private in-memory database embedded with the local embedder (as every store was before issue 21)
const own = await setupApp({ DATABASE_URL: undefined, EMBEDDINGS_PROVIDER: 'local' });

/** `own`'s context as a restart with `env` would build it (fresh memory runtime). */
function restartWith(env: Record<string, string | undefined>): AppContext {
  const memory = loadConfig(testEnv({ EMBEDDINGS_PROVIDER: undefined, ...env })).memory;
  return { ...own.ctx, config: { ...own.ctx.config, memory }, onClose: [], memory: undefined };
}

describe('memory — default embedder', () => {
  it('is the sentence encoder when nothing is configured', () => {
    const c = loadConfig({ NODE_ENV: 'test' }).memory;
    expect(c.embeddings).toMatchObject({
      provider: 'sentence-encoder',
      defaulted: true,
      model: 'universal-sentence-encoder-lite',
      dimensions: 512,
    });
    expect(c.fusion).toMatchObject({ vectorWeight: 2, localVectorWeight: 0.5 });
    expect(loadConfig({ NODE_ENV: 'test', EMBEDDINGS_PROVIDER: 'sentence-encoder' }).memory.embeddings.defaulted).toBe(
      false,
    );
    expect(loadConfig({ NODE_ENV: 'test', EMBEDDINGS_PROVIDER: 'local' }).memory.embeddings).toMatchObject({
      provider: 'local',
      dimensions: 384,
      defaulted: false,
    });
    expect(loadConfig({ NODE_ENV: 'test', EMBEDDINGS_URL: 'http://127.0.0.1:9' }).memory.embeddings).toMatchObject({
      provider: 'openai',
      defaulted: false,
    });
  });

  it('a store embedded with the earlier default keeps it (no worker, local fusion weight) until MEMORY_REEMBED', async () => {
    const u = await createUser(own.app);
    await call(
      own.app,
      { method: 'POST', url: '/memory', headers: u.headers, payload: { content: 'Flight to Lisbon with TAP' } },
      201,
    );
    await call(
      own.app,
      { method: 'POST', url: '/memory', headers: u.headers, payload: { content: 'Snow in Oslo' } },
      201,
    );
    const actor = { accountId: u.userId, agentId: null };
    const workers = sentenceEncoderStats().started; // (other files of this test process may have started one)

    // an operator who names the encoder gets the strict check
    await expect(initMemory(restartWith({ EMBEDDINGS_PROVIDER: 'sentence-encoder' }))).rejects.toThrow(
      /MEMORY_REEMBED=on/,
    );

    // the default: the store keeps local-hash-v1, searches and writes work, the encoder never starts
    const kept = restartWith({});
    await initMemory(kept);
    expect(embeddingProviderOf(kept)).toMatchObject({ provider: 'local', model: 'local-hash-v1', dimensions: 384 });
    expect(kept.memory!.vectorWeight).toBe(0.5);
    const hits = await searchMemories(kept, actor, { q: 'flight Lisbon', mode: 'vector' });
    expect(hits.data[0].content).toBe('Flight to Lisbon with TAP');
    expect(hits.data[0].similarity).toBeGreaterThan(0.2);
    await addMemory(kept, actor, { content: 'Ferry to Tangier on Friday' });
    const ferry = await searchMemories(kept, actor, { q: 'ferry Tangier', mode: 'vector' });
    expect(ferry.data[0].content).toBe('Ferry to Tangier on Friday');
    expect(sentenceEncoderStats().started).toBe(workers);
    const { body: stats } = await call(own.app, { method: 'GET', url: '/memory/stats', headers: u.headers }, 200);
    expect(stats.embedding).toEqual({ provider: 'local', model: 'local-hash-v1', dimensions: 384 });
  });

  it('an explicit MEMORY_VECTOR_WEIGHT is kept when the store keeps its space', async () => {
    const kept = restartWith({ MEMORY_VECTOR_WEIGHT: '0.7' });
    await initMemory(kept);
    expect(embeddingProviderOf(kept).provider).toBe('local');
    expect(kept.memory!.vectorWeight).toBe(0.7);
  });
});
