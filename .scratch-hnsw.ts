import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { LocalHashEmbedder } from './src/modules/memory/embeddings.js';
const db = await PGlite.create('memory://', { extensions: { vector } });
await db.exec('create extension vector; create table t (id int primary key, e vector(384)); create index on t using hnsw (e vector_cosine_ops);');
const emb = new LocalHashEmbedder(384);
const words = 'flight hotel weather lisbon berlin deploy service invoice customer payment timeout search result booking reservation table dinner run park book chapter idea incident root cause region database'.split(' ');
let t0 = performance.now();
const N = 5000;
for (let b = 0; b < N; b += 250) {
  const vals: string[] = [];
  for (let i = b; i < b + 250; i++) {
    const s = Array.from({ length: 12 }, () => words[Math.floor(Math.random() * words.length)]).join(' ') + ' ' + i;
    const v = emb.embedOne(s);
    vals.push(`(${i}, '[${Array.from(v).map((x) => x.toPrecision(9)).join(',')}]')`);
  }
  await db.exec(`insert into t values ${vals.join(',')}`);
}
console.log('insert with hnsw', N, 'rows', ((performance.now() - t0) / 1000).toFixed(1), 's');
