/**
 * Environments are frozen between invocations (`src/sandbox/freezer.ts`): work a handler leaves
 * running gets no CPU until the next invocation; idle kill and drain still end frozen environments;
 * each invocation's CPU time is recorded (`cpu_ms`). Real deployments through the HTTP API.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { cpuTicks, createAgent, deployReady, processesWithEnv, tarball, tempDir, waitFor } from './fixtures.js';

const { app, config } = await setupApp({ DATA_DIR: tempDir(), SANDBOX_WARM_IDLE_MS: '4000' });
afterAll(() => app.close());

const BURNER = `import fs from 'node:fs';
let n = 0;
export default async (input) => {
  fs.writeFileSync('/tmp/invoked', 'yes');
  if (input && input.noop) return 'noop';
  if (input && input.spin) { const end = Date.now() + input.spin; while (Date.now() < end); return 'spun'; }
  setInterval(() => { for (let i = 0; i < 1e7; i++); }, 1);
  return 'ok ' + ++n;
};
`;

async function deployBurner() {
  const u = await createUser(app);
  const a = await createAgent(app, u);
  const mark = randomBytes(6).toString('hex');
  await deployReady(app, u.headers, a.id, await tarball({ 'index.mjs': BURNER }), {
    env: JSON.stringify({ AP_FREEZE_MARK: mark }),
  });
  const invoke = async (input: unknown = {}) =>
    (await call(app, { method: 'POST', url: `/v2/agents/${a.id}/invoke`, headers: u.headers, payload: { input } }, 200))
      .body;
  return { u, a, mark, invoke };
}

/** CPU ticks of each of `pids` (gone processes: null). */
const ticksOf = (pids: number[]) => new Map(pids.map((p) => [p, cpuTicks(p)]));

/** CPU ticks the processes alive both times used between snapshots `a` and `b`. */
function used(a: Map<number, number | null>, b: Map<number, number | null>): number {
  let n = 0;
  for (const [p, t] of b) if (t !== null && a.get(p) != null) n += t - a.get(p)!;
  return n;
}

/**
 * The processes of the environment that served an invocation (its process group), and its Node.js
 * process: pid 2 of its own PID namespace, whose private /tmp holds the file the handler wrote (a
 * provisioned environment of the same version, never invoked, has none).
 */
function servingEnv(mark: string): { node: number; pids: number[] } {
  const marked = processesWithEnv('AP_FREEZE_MARK', mark);
  const node = marked.find((p) => {
    try {
      return (
        /^NSpid:\s+\d+\s+2$/m.test(fs.readFileSync(`/proc/${p}/status`, 'utf8')) &&
        fs.existsSync(`/proc/${p}/root/tmp/invoked`)
      );
    } catch {
      return false;
    }
  });
  if (!node) throw new Error(`no invoked environment among ${marked.join(',')}`);
  const pgrp = (p: number) => fs.readFileSync(`/proc/${p}/stat`, 'latin1').split(') ')[1].split(' ')[2];
  return { node, pids: marked.filter((p) => pgrp(p) === pgrp(node)) };
}

/** State letter of `pid` (`T`: stopped). */
const stateOf = (pid: number) => fs.readFileSync(`/proc/${pid}/stat`, 'latin1').split(') ')[1][0];

describe('frozen between invocations', () => {
  // The environment's processes are told apart by its PID namespace and private /tmp (bubblewrap).
  it.skipIf(config.sandbox.isolation !== 'bwrap')(
    'a handler that leaves a busy setInterval behind: its processes use no CPU for 2 s after it returns; the next invocation works',
    async () => {
      const { mark, invoke } = await deployBurner();
      expect(await invoke()).toMatchObject({ status: 'succeeded', output: 'ok 1' });
      const { node, pids } = servingEnv(mark);
      expect(pids.length).toBeGreaterThanOrEqual(2);
      expect(stateOf(node)).toBe('T');
      const before = ticksOf(pids);
      await new Promise((r) => setTimeout(r, 2000));
      const after2s = ticksOf(pids);
      expect(after2s.get(node)).not.toBeNull();
      expect(used(before, after2s)).toBe(0);
      // Thawed for the next invocation: same environment (module state kept), answers.
      const next = await invoke();
      expect(next).toMatchObject({ status: 'succeeded', output: 'ok 2', cold: false });
      // The check can fail: while an invocation runs, the leftover interval burns CPU again.
      const during = ticksOf(pids);
      expect(await invoke({ spin: 300 })).toMatchObject({ status: 'succeeded', output: 'spun' });
      const after = ticksOf(pids);
      expect(used(during, after)).toBeGreaterThan(0);
      await new Promise((r) => setTimeout(r, 1000));
      expect(used(after, ticksOf(pids))).toBe(0);
    },
  );

  it('records the CPU time of each invocation (cpu_ms, measured by the host)', async () => {
    const { u, a, invoke } = await deployBurner();
    await invoke();
    const spun = await invoke({ spin: 400 });
    // CPU time, not wall time: on a busy host the 400 ms of spinning get less than 400 ms of CPU.
    expect(spun.cpu_ms).toBeGreaterThanOrEqual(30);
    expect(spun.cpu_ms % 10).toBe(0);
    const noop = await invoke({ noop: true });
    expect(noop.cpu_ms).toBeGreaterThanOrEqual(0);
    expect(noop.cpu_ms).toBeLessThan(spun.cpu_ms);
    const { body } = await call(
      app,
      { method: 'GET', url: `/v2/agents/${a.id}/executions/${spun.id}`, headers: u.headers },
      200,
    );
    expect(body.cpu_ms).toBe(spun.cpu_ms);
    const { body: list } = await call(
      app,
      { method: 'GET', url: `/v2/agents/${a.id}/executions`, headers: u.headers },
      200,
    );
    expect(list.data.find((x: any) => x.id === spun.id).cpu_ms).toBe(spun.cpu_ms);
  });

  it('the idle kill ends a frozen environment', async () => {
    const { mark, invoke } = await deployBurner();
    await invoke();
    const pids = processesWithEnv('AP_FREEZE_MARK', mark);
    expect(pids.length).toBeGreaterThan(0);
    await waitFor(
      async () => processesWithEnv('AP_FREEZE_MARK', mark).length === 0,
      20_000,
      'the idle environment to be killed',
    );
    expect(await invoke()).toMatchObject({ status: 'succeeded', cold: true, output: 'ok 1' });
  });
});
