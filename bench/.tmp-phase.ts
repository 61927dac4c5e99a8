import { sql } from 'drizzle-orm';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { execRows } from '../src/db/client.js';
import { setServiceStatus } from '../src/modules/registry/service.js';
const config = loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', DATABASE_IN_MEMORY: 'on', SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'), RATE_LIMIT_USER: '1000000', ALLOW_LOOPBACK_UPSTREAMS: 'on' });
const { app, ctx } = await buildApp(config);
const login = await app.inject({ method: 'POST', url: '/auth/test', payload: { email: `b@example.test` } });
const headers = { authorization: `Bearer ${login.json().access_token}` };
const NOUNS = ['weather','forecast','invoice','customer','order','payment','shipment','ticket','message','email','calendar','event','document','image','video','playlist','song','stock','quote','currency','flight','hotel','booking','recipe','ingredient','user','profile','repository','issue','commit','deployment','metric','alert','contact','lead','campaign','product','inventory','review','translation'];
const VERBS = ['get','list','create','update','delete','search','send','fetch','convert','track','analyze','translate'];
for (let s = 0; s < 200; s++) {
  const tools = Array.from({ length: 10 }, (_, i) => ({ name: `${VERBS[(s + i) % 12]}_${NOUNS[(s * 7 + i * 3) % 40]}_${i}`, description: `Do a ${NOUNS[(s * 7 + i * 3) % 40]} by id in the ${NOUNS[(s + 11) % 40]} service`, method: 'GET', path: `/x/${i}`, input_schema: { type: 'object' } }));
  const res = await app.inject({ method: 'POST', url: '/owner/services', headers, payload: { name: `b-${s}`, display_name: `Bench ${NOUNS[s % 40]} ${s}`, description: `A ${NOUNS[s % 40]} API`, base_url: 'http://127.0.0.1:9', category: 'c', tools } });
  if (res.statusCode !== 201) { console.log(res.body); process.exit(1); }
  await setServiceStatus(ctx, res.json().id, 'published');
}
const doc = `(setweight(to_tsvector('english'::regconfig, regexp_replace(regexp_replace(t.name, '([a-z0-9])([A-Z])', '\\1 \\2', 'g'), '[_-]+', ' ', 'g')), 'A') || setweight(to_tsvector('english'::regconfig, t.description), 'B'))`;
const time = async (label: string, q: string) => { const t = performance.now(); for (let i = 0; i < 10; i++) await execRows(ctx.db, sql.raw(q)); console.log(label, ((performance.now() - t) / 10).toFixed(2), 'ms'); };
await time('count all', 'select count(*) from tools');
await time('ts_rank computed x2000', `select sum(ts_rank('{0.05,0.15,0.4,1.0}', ${doc}, to_tsquery('english','invoice'))) from tools t`);
await time('to_tsvector desc x2000', `select sum(length(to_tsvector('english', description))) from tools t`);
await time('regexp x2000', `select sum(length(regexp_replace(regexp_replace(t.name, '([a-z0-9])([A-Z])', '\\1 \\2', 'g'), '[_-]+', ' ', 'g'))) from tools t`);
await time('word_sim x2000', `select sum(word_similarity('invoce', lower(t.name))) from tools t`);
await time('fts idx match', `select count(*) from tools t where ${doc} @@ to_tsquery('english','invoice')`);
for (const q of (process.env.QS ?? 'invoice,invoce,create shipment').split(',')) {
  const t = performance.now(); let took = 0; let found = 0;
  for (let i = 0; i < Number(process.env.REPS ?? 10); i++) { const r = (await app.inject({ method: 'GET', url: `/search/tools?q=${encodeURIComponent(q)}`, headers })).json(); took += r.took_ms; found = r.found; }
  console.log('http', q, 'found', found, 'avg ms', ((performance.now() - t) / 10).toFixed(1), 'took', took / 10);
}
await app.close();
