import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
const db = await PGlite.create('memory://', { extensions: { vector, pg_trgm } });
await db.query('create table t (id text primary key, n int)');
await db.query(`insert into t values ('a', 0)`);
async function time(name: string, n: number, fn: () => Promise<unknown>) { for (let i = 0; i < 50; i++) await fn(); const c = process.cpuUsage(); const t = performance.now(); for (let i = 0; i < n; i++) await fn(); const cu = process.cpuUsage(c); console.log(name.padEnd(24), 'wall', ((performance.now() - t) / n * 1000).toFixed(0), 'µs cpu', ((cu.user + cu.system) / n).toFixed(0), 'µs'); }
await time('select pk param', 2000, () => db.query('select * from t where id = $1', ['a']));
await db.exec('create extension if not exists vector; create extension if not exists pg_trgm;');
await time('select pk (ext created)', 2000, () => db.query('select * from t where id = $1', ['a']));
for (let i = 0; i < 40; i++) await db.exec(`create table x${i} (id text primary key, a jsonb, b text, c timestamptz default now()); create index on x${i}(b);`);
await time('select pk (40 tables)', 2000, () => db.query('select * from t where id = $1', ['a']));
