import fs from 'node:fs'; import os from 'node:os'; import path from 'node:path'; import http from 'node:http';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { setServiceStatus, resolveExecutableTool } from '../src/modules/registry/service.js';
import { getSessionFor } from '../src/modules/sessions/service.js';
import { consumeQuota } from '../src/modules/subscriptions/service.js';
import { recordExecution } from '../src/modules/sessions/usage.js';
import { newId } from '../src/http/ids.js';
const body = JSON.stringify({ ok: true });
const up = http.createServer((req, res) => { req.resume(); req.on('end', () => { res.writeHead(200, { 'content-type': 'application/json' }); res.end(body); }); });
await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
const upstreamUrl = `http://127.0.0.1:${(up.address() as any).port}`;
const config = loadConfig({ NODE_ENV: 'production', LOG_LEVEL: 'warn', DATABASE_URL: process.env.BENCH_DATABASE_URL, DATABASE_IN_MEMORY: 'on', DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'ap-prof-')), AUTH_TEST_TOKENS: 'on', ALLOW_LOOPBACK_UPSTREAMS: 'on', RATE_LIMIT_USER: '100000000', SECRETS_KEY: Buffer.alloc(32, 7).toString('base64') });
const { app, ctx } = await buildApp(config);
const call = async (method: string, url: string, headers: Record<string, string>, payload?: unknown) => { const res = await app.inject({ method: method as 'POST', url, headers, payload: payload as object }); if (res.statusCode >= 300) throw new Error(`${url} ${res.statusCode} ${res.body}`); return res.json(); };
const token = async (email: string) => `Bearer ${(await call('POST', '/auth/test', {}, { email })).access_token}`;
const owner = { authorization: await token('o@example.test') }; const user = { authorization: await token('u@example.test') };
const svc = await call('POST', '/owner/services', owner, { name: 'prof' + Date.now().toString(36), description: 'x', base_url: upstreamUrl, tools: [{ name: 'current', description: 'c', method: 'GET', path: '/fast', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }] });
await setServiceStatus(ctx, svc.id, 'published');
await call('POST', '/subscriptions', user, { service_id: svc.id, plan: 'enterprise' });
const session = await call('POST', '/v1/agents', user, { name: 'p' });
const uid = JSON.parse(Buffer.from(user.authorization.split('.')[1], 'base64url').toString()).sub;
async function time(name: string, n: number, fn: () => Promise<unknown>) { for (let i = 0; i < 20; i++) await fn(); const c = process.cpuUsage(); const t = performance.now(); for (let i = 0; i < n; i++) await fn(); const cu = process.cpuUsage(c); console.log(name.padEnd(20), 'wall', ((performance.now() - t) / n).toFixed(3), 'ms  cpu', ((cu.user + cu.system) / 1000 / n).toFixed(3), 'ms'); }
const N = Number(process.env.N ?? 200);
if (process.env.COUNT) { const c = (ctx.db as any).$client; const orig = c.query.bind(c); const seen = new Map<string, number>(); const tm = new Map<string, number>(); c.query = async (q: string, ...rest: unknown[]) => { const k = q.replace(/\s+/g, ' ').slice(0, 90); seen.set(k, (seen.get(k) ?? 0) + 1); const t0 = performance.now(); try { return await orig(q, ...rest); } finally { tm.set(k, (tm.get(k) ?? 0) + performance.now() - t0); } }; for (let i = 0; i < 300; i++) await call('POST', `/v1/agents/${session.id}/execute`, user, { service: svc.name, tool: 'current', arguments: { city: 'x' } }); await new Promise((r) => setTimeout(r, 500)); for (const [k, v] of [...seen].sort((a, b) => b[1] - a[1])) console.log(String(v).padStart(5), ((tm.get(k) ?? 0) / v).toFixed(3).padStart(8), 'ms', k); process.exit(0); }
if (process.env.ONLY_EXEC) { (globalThis as any).__T = []; let rt = 0; const wrapped = async () => { const t0 = performance.now(); await call('POST', `/v1/agents/${session.id}/execute`, user, { service: svc.name, tool: 'current', arguments: { city: 'x' } }); rt += performance.now() - t0; }; await time('inject execute', N, wrapped); const T = (globalThis as any).__T.slice(20) as number[][]; const avg = T[0].map((_, i) => (T.reduce((a, r) => a + r[i], 0) / T.length).toFixed(3)); console.log('phases (lookup, validate+quota, upstream, record):', avg.slice(1).join(' / '), 'ms; whole inject', (rt / (N + 20)).toFixed(3)); await app.close(); up.close(); process.exit(0);
  await time('inject execute', N, () => call('POST', `/v1/agents/${session.id}/execute`, user, { service: svc.name, tool: 'current', arguments: { city: 'x' } })); await app.close(); up.close(); process.exit(0); }
await time('select 1', N, () => ctx.database.ping());
const { sql } = await import('drizzle-orm'); const { execRows } = await import('../src/db/client.js');
await time('raw client.query', N, () => (ctx.db as any).$client.query('select id, status, agent_id from sessions where id = $1 and user_id = $2', [session.id, uid]));
await time('execRows sql', N, () => execRows(ctx.db, sql`select id, status, agent_id from sessions where id = ${session.id} and user_id = ${uid}`));
await time('session', N, () => getSessionFor(ctx, { accountId: uid, agentId: null }, session.id));
await time('resolve', N, () => resolveExecutableTool(ctx, svc.name, 'current'));
await time('quota', N, () => consumeQuota(ctx, uid, svc.id));
await time('record', N, () => recordExecution(ctx, { id: newId('exe'), sessionId: session.id, userId: uid, agentId: null, serviceId: svc.id, toolId: svc.tools[0].id, toolName: 'current', arguments: { city: 'x' }, status: 'succeeded', httpStatus: 200, output: { ok: true }, error: null, durationMs: 1 }));
await time('inject execute', N, () => call('POST', `/v1/agents/${session.id}/execute`, user, { service: svc.name, tool: 'current', arguments: { city: 'x' } }));
await time('inject me', N, () => call('GET', `/v1/auth/me`, user));
await app.close(); up.close();
