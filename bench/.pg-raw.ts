import { PGlite } from '@electric-sql/pglite';
const db = await PGlite.create('memory://');
await db.query('create table t (id text primary key, n int)');
await db.query(`insert into t values ('a', 0)`);
async function time(name: string, n: number, fn: () => Promise<unknown>) { for (let i = 0; i < 50; i++) await fn(); const c = process.cpuUsage(); const t = performance.now(); for (let i = 0; i < n; i++) await fn(); const cu = process.cpuUsage(c); console.log(name.padEnd(24), 'wall', ((performance.now() - t) / n * 1000).toFixed(0), 'µs cpu', ((cu.user + cu.system) / n).toFixed(0), 'µs'); }
await time('select 1', 2000, () => db.query('select 1'));
await time('select pk param', 2000, () => db.query('select * from t where id = $1', ['a']));
await time('update pk', 2000, () => db.query('update t set n = n + 1 where id = $1', ['a']));
await time('exec select 1', 2000, () => db.exec('select 1'));
