/**
 * A ready server process for the SDK and CLI tests: {@link startServerProcess} on a free loopback
 * port with the test environment ({@link testEnv}: PGlite in memory, or the engines of
 * TEST_DATABASE_URL / TEST_REDIS_URL) and its own data directory.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { testEnv } from './app.js';
import { freePort } from './net.js';
import { startServerProcess, type ServerProcess } from './server-process.js';

/** Start and wait for "agent platform ready". `stop()` sends SIGTERM, waits for the exit and removes the data directory. */
export async function startTestServer(
  overrides: Record<string, string> = {},
): Promise<ServerProcess & { stop(): Promise<void> }> {
  const port = String(await freePort());
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-srv-'));
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(
    testEnv({ LOG_LEVEL: 'info', PORT: port, PUBLIC_URL: `http://127.0.0.1:${port}`, DATA_DIR: dataDir, ...overrides }),
  ))
    if (v !== undefined) env[k] = v;
  const server = startServerProcess(env);
  await server.waitFor(/agent platform ready/, 300_000);
  return {
    ...server,
    async stop() {
      if (server.child.exitCode === null && server.child.signalCode === null) {
        server.child.kill('SIGTERM');
        await server.exited;
      }
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
