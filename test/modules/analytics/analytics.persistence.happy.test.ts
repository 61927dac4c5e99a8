/**
 * Per-route aggregates survive restarts and add up over instances: instance A counts requests in
 * memory and writes them at shutdown (its periodic flush is far away); instance B, on the same
 * database (a PGlite directory, or TEST_DATABASE_URL), reports A's requests plus its own.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildApp, type BuiltApp } from '../../../src/app.js';
import { loadConfig } from '../../../src/config.js';
import { call, createUser, testEnv } from '../../helpers/app.js';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-analytics-'));
const shared = !!process.env.TEST_DATABASE_URL;
const env = testEnv({ DATABASE_IN_MEMORY: shared ? 'on' : 'off', DATA_DIR: dataDir, ANALYTICS_FLUSH_MS: '600000' });
const open: BuiltApp[] = [];
afterAll(async () => {
  for (const b of open) await b.app.close().catch(() => undefined);
  fs.rmSync(dataDir, { recursive: true, force: true });
});

async function start(): Promise<BuiltApp> {
  const b = await buildApp(loadConfig(env));
  open.push(b);
  return b;
}

describe('analytics — endpoint aggregates across restarts and instances', () => {
  it('reports requests counted by an instance that has shut down', async () => {
    const from = new Date(Date.now() - 60_000).toISOString();
    const a = await start();
    for (let i = 0; i < 5; i++) await call(a.app, { method: 'GET', url: '/healthz' }, 200);
    let b = shared ? await start() : null; // PostgreSQL: two instances side by side
    await a.app.close();
    open.splice(open.indexOf(a), 1);
    b ??= await start(); // PGlite: the same directory, reopened
    for (let i = 0; i < 3; i++) await call(b.app, { method: 'GET', url: '/healthz' }, 200);
    const admin = await createUser(b.app, { roles: ['admin'] });
    const { body } = await call(
      b.app,
      { method: 'GET', url: `/analytics/endpoints?route=/healthz&from=${from}`, headers: admin.headers },
      200,
    );
    const row = body.data.find((d: { route: string }) => d.route === '/healthz');
    if (shared) expect(row.requests).toBeGreaterThanOrEqual(8);
    else
      expect(row).toMatchObject({
        method: 'GET',
        requests: 8,
        errors: 0,
        by_status: { '200': 8 },
        operation_id: 'ops.healthz',
      });
  }, 60_000);
});
