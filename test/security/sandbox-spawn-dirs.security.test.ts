/**
 * A server killed with SIGKILL leaves its fork server's directory (`ap-spawn-<pid>-<start>-*`,
 * `src/sandbox/spawner.ts`) behind; the next server removes it at start — and never a directory
 * whose owner still runs. Real processes: `node --import tsx src/main.ts`, a real deployment, kill -9.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/net.js';
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { tarball, waitFor } from '../modules/deployments/fixtures.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-sweep-'));
fs.chmodSync(tmp, 0o755);
const started: ServerProcess[] = [];
const listeners: net.Server[] = [];
afterAll(async () => {
  for (const s of started) s.child.kill('SIGKILL');
  for (const l of listeners) l.close();
  await Promise.all(started.map((s) => s.exited));
  fs.rmSync(tmp, { recursive: true, force: true });
});

async function server(name: string): Promise<ServerProcess> {
  const port = String(await freePort());
  const dataDir = path.join(tmp, name);
  fs.mkdirSync(dataDir, { mode: 0o755 });
  const s = startServerProcess({ PORT: port, PUBLIC_URL: `http://127.0.0.1:${port}`, DATA_DIR: dataDir, TMPDIR: tmp });
  started.push(s);
  await s.waitFor(/agent platform ready/);
  return s;
}

/** Deploy a trivial handler through the HTTP API and wait until it is active (its prepare step runs in the sandbox). */
async function deploy(s: ServerProcess): Promise<void> {
  const json = async (url: string, init: RequestInit = {}, headers: Record<string, string> = {}) => {
    const res = await fetch(`${s.base}${url}`, {
      ...init,
      headers: {
        ...(init.body && typeof init.body === 'string' ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const login = await json('/auth/test', {
    method: 'POST',
    body: JSON.stringify({ email: `sweep-${Date.now()}@example.test` }),
  });
  const auth = { authorization: `Bearer ${login.body.access_token}` };
  const agent = await json('/v2/agents', { method: 'POST', body: JSON.stringify({ name: 'sweeper' }) }, auth);
  expect(agent.status).toBe(201);
  const form = new FormData();
  form.set(
    'artifact',
    new Blob([new Uint8Array(await tarball({ 'index.mjs': 'export default async () => "ok";' }))]),
    'agent.tar.gz',
  );
  const d = await json(`/v2/agents/${agent.body.id}/deploy`, { method: 'POST', body: form }, auth);
  expect(d.status).toBe(202);
  await waitFor(
    async () => (await json(`/v2/agents/${agent.body.id}/deployments`, {}, auth)).body.data[0]?.status === 'active',
    60_000,
    'the deployment to be active',
  );
}

/** This process's start time in clock ticks since boot (field 22 of /proc/self/stat). */
const selfStart = () => {
  const s = fs.readFileSync('/proc/self/stat', 'latin1');
  return s.slice(s.lastIndexOf(')') + 2).split(' ')[19];
};

describe('spawn directories of a killed server', () => {
  it('kill -9 leaves one; the next start removes it, and keeps those of live owners', async () => {
    const first = await server('first');
    await deploy(first);
    const pid = first.child.pid!;
    const own = fs.readdirSync(tmp).filter((n) => n.startsWith(`ap-spawn-${pid}-`));
    expect(own).toHaveLength(1);

    // Directories that must stay: one of a live process (this one), one of an older server whose socket still listens.
    const live = path.join(tmp, `ap-spawn-${process.pid}-${selfStart()}-Live01`);
    fs.mkdirSync(live, { mode: 0o700 });
    const legacy = path.join(tmp, 'ap-spawn-Lgcy01');
    fs.mkdirSync(legacy, { mode: 0o700 });
    const l = net.createServer().listen(path.join(legacy, 's'));
    listeners.push(l);
    await new Promise((r) => l.once('listening', r));
    // And ones that must go: an older server's without a listener; a dead pid's; a live pid's that started at another time (reused).
    const legacyDead = path.join(tmp, 'ap-spawn-Dead01');
    fs.mkdirSync(legacyDead, { mode: 0o700 });
    const reused = path.join(tmp, `ap-spawn-${process.pid}-1-Reus01`);
    fs.mkdirSync(reused, { mode: 0o700 });
    const old = new Date(Date.now() - 3600_000);
    for (const d of [legacy, legacyDead]) fs.utimesSync(d, old, old);

    first.child.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    await new Promise((r) => setTimeout(r, 300));
    expect(fs.existsSync(path.join(tmp, own[0]))).toBe(true);

    const second = await server('second');
    await waitFor(
      async () => !fs.existsSync(path.join(tmp, own[0])),
      15_000,
      "the dead server's spawn directory to be removed",
    );
    expect(fs.existsSync(legacyDead)).toBe(false);
    expect(fs.existsSync(reused)).toBe(false);
    expect(fs.existsSync(live)).toBe(true);
    expect(fs.existsSync(legacy)).toBe(true);
    expect(second.lines.some((line) => /removed spawn directories of dead servers/.test(line))).toBe(true);
  }, 300_000);
});
