import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { searchCatalogTools } from '../src/modules/registry/catalog.js';
import { searchTools, toolPopularity } from '../src/modules/search/service.js';
const config = loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/search_dev', SECRETS_KEY: Buffer.alloc(32, 7).toString('base64') });
const { app, ctx } = await buildApp(config);
const p: any = { kind: 'user', userId: 'usr_x', roles: ['user'] };
const pop = (await toolPopularity(ctx)).byTool;
for (const q of ['invoice', 'invoce', 'create shipment']) {
  let a = 0, b = 0; const N = 30;
  for (let i = 0; i < N; i++) {
    let t = performance.now(); await searchCatalogTools(ctx, 'usr_x', { q, limit: 20, offset: 0, popularity: pop }); a += performance.now() - t;
    t = performance.now(); await searchTools(ctx, p, { q }); b += performance.now() - t;
  }
  const r = await searchCatalogTools(ctx, 'usr_x', { q, limit: 20, offset: 0, popularity: pop });
  console.log(q, 'found', r.found, 'catalog ms', (a / N).toFixed(1), 'searchTools ms', (b / N).toFixed(1));
}
await app.close();
