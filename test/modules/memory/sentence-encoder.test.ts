/** The offline sentence encoder (src/lib/sentence-encoder.ts): Universal Sentence Encoder Lite in a worker thread. */
import { afterAll, describe, expect, it } from 'vitest';
import {
  createSentenceEncoder,
  SENTENCE_ENCODER_DIMENSIONS,
  sentenceEncoderStats,
} from '../../../src/lib/sentence-encoder.js';

const dot = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i], 0);

describe('sentence encoder', () => {
  const enc = createSentenceEncoder();
  afterAll(() => enc.close());

  it('gives unit-length 512-d vectors that place paraphrases closer than unrelated sentences, off the event loop', async () => {
    // the event loop must keep turning while the model loads and runs (it runs in a worker)
    let maxGap = 0;
    let last = performance.now();
    const tick = setInterval(() => {
      const now = performance.now();
      maxGap = Math.max(maxGap, now - last);
      last = now;
    }, 5);
    const t0 = performance.now();
    const [q, para, other, empty] = await enc.embed([
      'How is your dog doing?',
      'My puppy has been sick all week, the vet gave him antibiotics.',
      'The quarterly tax return is due at the end of March.',
      '   ',
    ]);
    const took = performance.now() - t0;
    clearInterval(tick);
    expect(enc.dimensions).toBe(SENTENCE_ENCODER_DIMENSIONS);
    for (const v of [q, para, other, empty]) {
      expect(v).toBeInstanceOf(Float32Array);
      expect(v.length).toBe(512);
      expect(v.every(Number.isFinite)).toBe(true);
      expect(Math.abs(dot(v, v) - 1)).toBeLessThan(1e-4);
    }
    expect(dot(q, para)).toBeGreaterThan(dot(q, other) + 0.1);
    // loading + embedding takes seconds; the main thread never stalled for a fraction of that
    expect(took).toBeGreaterThan(200);
    expect(maxGap).toBeLessThan(Math.max(250, took / 4));
  }, 120_000);

  it('is deterministic and keeps the order of its inputs across internal batches', async () => {
    const texts = Array.from(
      { length: 40 },
      (_, i) => `sentence number ${i} about ${i % 2 ? 'cooking pasta' : 'climbing mountains'}`,
    );
    const all = await enc.embed(texts);
    const [five] = await enc.embed([texts[5]]);
    const [thirtyThree] = await enc.embed([texts[33]]);
    expect(all).toHaveLength(40);
    expect(dot(all[5], five)).toBeGreaterThan(0.9999);
    expect(dot(all[33], thirtyThree)).toBeGreaterThan(0.9999);
    expect(dot(all[5], all[33])).toBeLessThan(0.99);
    expect(await enc.embed([])).toEqual([]);
  }, 120_000);

  it('is one worker per process: handles share it, a query overtakes a queued write batch, closing one handle keeps it for the others', async () => {
    const other = createSentenceEncoder({ batchSize: 4 });
    const before = sentenceEncoderStats();
    expect(before.running).toBe(true); // started by the first test
    const writes = Array.from(
      { length: 96 },
      (_, i) => `note ${i}: the ${i % 3 ? 'garden' : 'boat'} needs work before ${i % 7 ? 'spring' : 'winter'}`,
    );
    let writesDone = 0;
    const write = other.embed(writes).then((v) => ((writesDone = performance.now()), v));
    await new Promise((r) => setTimeout(r, 20)); // the write batch is in the worker's queue
    const [q] = await enc.embed(['is the boat ready?'], { query: true });
    const queryDone = performance.now();
    const [w, [again]] = await Promise.all([write, other.embed([writes[0]])]);
    expect(queryDone).toBeLessThan(writesDone); // 96 texts in chunks of 4: the query was not last
    expect(w).toHaveLength(96);
    expect(dot(w[0], again)).toBeGreaterThan(0.9999);
    expect(q.length).toBe(512);
    expect(sentenceEncoderStats().started).toBe(before.started); // no second worker
    expect(sentenceEncoderStats().handles).toBe(before.handles);
    await other.close();
    expect(sentenceEncoderStats().running).toBe(true); // `enc` still holds it
    expect((await enc.embed(['still here'])).length).toBe(1);
  }, 120_000);

  it('rejects after close', async () => {
    const other = createSentenceEncoder();
    await other.close();
    await expect(other.embed(['hello'])).rejects.toThrow(/closed/);
  });
});
