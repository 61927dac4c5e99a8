/** How sandbox processes are started (no app): the fork server (`spawner.ts`) and provisioned environments (`spares.ts`). */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Sandbox, type SandboxRun } from '../../../src/sandbox/runner.js';
import { Spawner } from '../../../src/sandbox/spawner.js';
import { tempDir } from './fixtures.js';

const root = fs.realpathSync(tempDir('ap-spawn-'));
fs.writeFileSync(
  path.join(root, 'index.mjs'),
  `let count = 0;
const loadedAt = Date.now();
// A new process each load (its pid is 2 in every sandbox's own PID namespace, so not the pid).
const instance = Math.random();
console.log('module loaded');
export default async function () {
  count++;
  return { count, loadedAt, pid: instance };
}
`,
);

describe('fork server', () => {
  const spawners: Spawner[] = [];
  afterAll(() => spawners.forEach((s) => s.close()));
  const collect = (s: NodeJS.ReadableStream | null | undefined) => {
    let out = '';
    s?.on('data', (d: Buffer) => (out += d.toString()));
    return () => out;
  };

  it('starts the process from the helper, with stdin, stdout, stderr and fd 3 connected to this process', async () => {
    const sp = await Spawner.start();
    spawners.push(sp);
    const c = await sp.spawn({
      argv: ['/bin/sh', '-c', 'echo ppid=$PPID; echo err >&2; echo three >&3; read x; echo got=$x; exit 7'],
      cwd: '/',
      env: {},
      ids: {},
    });
    const [out, err, three] = [collect(c.stdout), collect(c.stderr), collect(c.stdio[3] as NodeJS.ReadableStream)];
    c.stdin!.write('hello\n');
    const [code] = await new Promise<[number | null, string | null]>((resolve) =>
      c.on('close', (code, signal) => resolve([code, signal])),
    );
    expect(code).toBe(7);
    expect(err()).toBe('err\n');
    expect(three()).toBe('three\n');
    expect(out()).toContain('got=hello\n');
    const ppid = Number(/ppid=(\d+)/.exec(out())?.[1]);
    // Forked by the helper, not by this (large) process.
    expect(ppid).toBeGreaterThan(0);
    expect(ppid).not.toBe(process.pid);
  });

  it('ignores connections without a known token, and kill() ends the process group', async () => {
    const sp = await Spawner.start();
    spawners.push(sp);
    const c = await sp.spawn({ argv: ['/bin/sh', '-c', 'sleep 30'], cwd: '/', env: {}, ids: {} });
    const closed = new Promise<string | null>((resolve) => c.on('close', (_code, signal) => resolve(signal)));
    process.kill(-c.pid!, 'SIGKILL');
    expect(await closed).toBe('SIGKILL');
    await expect(sp.spawn({ argv: ['/nonexistent/binary'], cwd: '/', env: {}, ids: {} })).rejects.toThrow(/ENOENT/);
  });

  it('close() kills what the helper started and reports it exited (nothing waits for an exit that cannot come)', async () => {
    const sp = await Spawner.start();
    const c = await sp.spawn({ argv: ['/bin/sh', '-c', 'sleep 30'], cwd: '/', env: {}, ids: {} });
    const closed = new Promise<string | null>((resolve) => c.on('close', (_code, signal) => resolve(signal)));
    sp.close();
    // 'close' also waits for the four connections to close, which only the process's death does.
    expect(await closed).toBe('SIGKILL');
  });

  it('close() settles a start whose process is running but whose streams have not all connected', async () => {
    // Regression: such a start waited forever (and the app's close with it, behind a prepare job).
    // The spawner here leaves the helper's connections unread, so the helper reports the pid of a
    // process whose streams never reach the spawner.
    const sp = await Spawner.start();
    (sp as unknown as { accept: (s: import('node:net').Socket) => void }).accept = () => {};
    let pid: number | undefined;
    const onHelperData = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(sp), 'onHelperData')!.value;
    const reported = new Promise<void>((resolve) => {
      (sp as unknown as { onHelperData: (d: string) => void }).onHelperData = function (this: unknown, d: string) {
        const m = /"pid":(\d+)/.exec(d);
        if (m) {
          pid = Number(m[1]);
          resolve();
        }
        onHelperData.call(this, d);
      };
    });
    const start = sp.spawn({ argv: ['/bin/sh', '-c', 'sleep 30'], cwd: '/', env: {}, ids: {} });
    await reported;
    sp.close();
    const outcome = await Promise.race([
      start.then(
        () => 'started',
        (err: Error) => `failed ${err.message}`,
      ),
      new Promise<string>((r) => setTimeout(() => r('hung'), 3000)),
    ]);
    expect(outcome).toBe('failed the sandbox spawner exited');
    // the process itself was killed (gone, or a zombie until something reaps it)
    const dead = () => {
      try {
        return fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z') ?? true;
      } catch {
        return true;
      }
    };
    for (let i = 0; i < 40 && !dead(); i++) await new Promise((r) => setTimeout(r, 50));
    expect(dead()).toBe(true);
    await expect(sp.spawn({ argv: ['/bin/true'], cwd: '/', env: {}, ids: {} })).rejects.toThrow(/closed/);
  });
});

describe('provisioned environments', () => {
  const sandbox = new Sandbox({
    memoryMb: 64,
    maxLogBytes: 4096,
    maxOutputBytes: 4096,
    concurrency: 4,
    network: 'auto',
  });
  afterAll(() => sandbox.killAll());
  const run = (key = 'v1', extra: Partial<SandboxRun> = {}) =>
    sandbox.run({ mode: 'invoke', root, entrypoint: 'index.mjs', input: {}, timeoutMs: 5000, key, ...extra });
  const settle = () => new Promise((r) => setTimeout(r, 1500));

  it('the next cold start of a version takes an environment loaded ahead, used once (fresh module state, its load logs)', async () => {
    const a = await run();
    await settle();
    const requested = Date.now();
    const b = await run();
    expect([a.cold, b.cold]).toEqual([true, true]);
    const [oa, ob] = [
      a.output as { count: number; loadedAt: number; pid: number },
      b.output as { count: number; loadedAt: number; pid: number },
    ];
    // Loaded before it was asked for, and still a new process with fresh module state.
    expect(ob.loadedAt).toBeLessThan(requested);
    expect(ob.count).toBe(1);
    expect(ob.pid).not.toBe(oa.pid);
    expect(b.logs.map((l) => l.message)).toContain('module loaded');
  });

  it('drain kills the spares of a version; runs without a key get none', async () => {
    await run('v2');
    await settle();
    sandbox.drain((k) => k === 'v2');
    const requested = Date.now();
    const c = await run('v2');
    expect((c.output as { loadedAt: number }).loadedAt).toBeGreaterThanOrEqual(requested);
    await run('', { key: undefined });
    await settle();
    const requested2 = Date.now();
    const d = await run('', { key: undefined });
    expect((d.output as { loadedAt: number }).loadedAt).toBeGreaterThanOrEqual(requested2);
  });
});
