/**
 * Starts sandbox processes from a small helper process (a "fork server"), so the server's own
 * event loop never pays for `fork()`.
 *
 * Why: libuv spawns with `fork()` + `exec()`, and `spawn()` blocks the calling thread until the
 * child has exec'd. The cost of `fork()` grows with the parent's resident memory (its page tables
 * are copied): measured on the 2-vCPU bench host, `spawn('/bin/true')` blocked a 46 MB process
 * 1.2 ms, a 572 MB one 46 ms and a 1.6 GB one 106 ms (p50 of 20). The platform's process holds the
 * embedded database, caches and models, so every cold start stalled every request of the instance
 * for tens of milliseconds. The helper is a bare Node.js process (~40 MB) started once per sandbox.
 *
 * Protocol. The server listens on a unix socket in a private directory (mode 0700: only this
 * user can connect; the sandbox user cannot even traverse it). Per process to start, the server
 * sends the helper one JSON line `{ id, token, file, args, cwd, env, uid?, gid? }` on its stdin; the
 * helper opens four connections to the socket, writes `<token> <fd>\n` (fd 0, 1, 2, 3) on each,
 * spawns the process (detached: its own process group) with those connections as its stdin,
 * stdout, stderr and fd 3, closes its own copies, and answers `{ id, pid }` or `{ id, error }`, later
 * `{ id, exit: code, signal }`. The server matches each connection to its process by the token (128
 * random bits, never given to the sandboxed process, single use), so the sandboxed process ends up
 * with the same four channels as with a direct spawn, connected straight to the server.
 *
 * If the helper dies, the processes it started are killed (their process groups) and reported as
 * exited; the next start spawns a new helper.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { processStartTicks } from './freezer.js';

/** What {@link Environment} uses of a started process (a subset of Node's `ChildProcess`). */
export interface SandboxChild extends EventEmitter {
  readonly pid?: number;
  readonly stdin: Writable | null;
  readonly stdout: Readable | null;
  readonly stderr: Readable | null;
  readonly stdio: ReadonlyArray<Readable | Writable | null | undefined>;
  kill(signal?: NodeJS.Signals): boolean;
}

/** How to start one process: argv[0] is the executable; `ids` the uid/gid to switch to. */
export interface SpawnRequest {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  ids: { uid?: number; gid?: number };
}

/** The helper's program (CommonJS, passed with `-e`). */
const HELPER_SOURCE = String.raw`
const { spawn } = require('node:child_process');
const net = require('node:net');
const sock = process.argv[1];
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
const connect = (token, fd) => new Promise((resolve, reject) => {
  const c = net.connect(sock, () => c.write(token + ' ' + fd + '\n', () => resolve(c)));
  c.on('error', reject);
});
async function start(m) {
  let conns = [];
  try {
    conns = await Promise.all([0, 1, 2, 3].map((fd) => connect(m.token, fd)));
    const opts = { cwd: m.cwd, env: m.env, detached: true, stdio: conns };
    if (typeof m.uid === 'number') opts.uid = m.uid;
    if (typeof m.gid === 'number') opts.gid = m.gid;
    const child = spawn(m.file, m.args, opts);
    let failed = false;
    child.on('error', (e) => { failed = true; send({ id: m.id, error: String(e && e.message) }); });
    child.on('exit', (code, signal) => { if (!failed) send({ id: m.id, exit: code, signal }); });
    if (child.pid) send({ id: m.id, pid: child.pid });
  } catch (e) {
    send({ id: m.id, error: String(e && e.message) });
  } finally {
    for (const c of conns) c.destroy();
  }
}
let buf = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d) => {
  buf += d;
  let nl;
  while ((nl = buf.indexOf('\n')) >= 0) {
    const line = buf.slice(0, nl);
    buf = buf.slice(nl + 1);
    try { start(JSON.parse(line)); } catch {}
  }
});
process.stdin.on('end', () => process.exit(0));
`;

/** Longest header line a connection may send before it is matched (`<32 hex> <fd>\n`). */
const HEADER_MAX = 64;

/** A process started through the helper: the sockets arrive first, then the helper's answer. */
class RemoteChild extends EventEmitter implements SandboxChild {
  pid?: number;
  readonly sockets: Array<net.Socket | null> = [null, null, null, null];
  private exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  private open = 4;
  private closed = false;
  /** Settles once the four sockets are in and the helper reported the pid, or on failure. */
  readyResolve!: (err: Error | null) => void;
  readonly ready = new Promise<Error | null>((r) => (this.readyResolve = r));

  get stdin(): Writable | null {
    return this.sockets[0];
  }
  get stdout(): Readable | null {
    return this.sockets[1];
  }
  get stderr(): Readable | null {
    return this.sockets[2];
  }
  get stdio(): ReadonlyArray<Readable | Writable | null> {
    return this.sockets;
  }

  attach(fd: number, s: net.Socket): void {
    this.sockets[fd] = s;
    s.once('close', () => {
      this.open--;
      this.maybeClose();
    });
    if (this.sockets.every(Boolean) && this.pid) this.readyResolve(null);
  }

  started(pid: number): void {
    this.pid = pid;
    if (this.sockets.every(Boolean)) this.readyResolve(null);
  }

  exited(code: number | null, signal: NodeJS.Signals | null): void {
    this.exit ??= { code, signal };
    this.maybeClose();
  }

  /** Spawn failed (or the helper died first): no process, report the error. */
  failed(err: Error): void {
    for (const s of this.sockets) s?.destroy();
    this.readyResolve(err);
  }

  private maybeClose(): void {
    if (this.closed || !this.exit || this.open > 0) return;
    this.closed = true;
    this.emit('close', this.exit.code, this.exit.signal);
  }

  kill(signal: NodeJS.Signals = 'SIGTERM'): boolean {
    if (!this.pid || this.exit) return false;
    try {
      process.kill(this.pid, signal);
      return true;
    } catch {
      return false;
    }
  }
}

/** One helper and its socket; see the module comment. Create with {@link Spawner.start}. */
export class Spawner {
  private helper: ChildProcess | null = null;
  private seq = 0;
  private readonly byToken = new Map<string, RemoteChild>();
  private readonly byId = new Map<number, RemoteChild>();
  private out = '';
  /** Set by {@link close}: later spawns fail instead of starting a helper that cannot connect. */
  private shut = false;

  private constructor(
    private readonly dir: string,
    private readonly server: net.Server,
  ) {}

  /** Listen on a new private socket. Rejects when unix sockets are unavailable. */
  static async start(): Promise<Spawner> {
    const dir = fs.mkdtempSync(
      path.join(os.tmpdir(), `ap-spawn-${process.pid}-${processStartTicks(process.pid) ?? 0}-`),
    );
    fs.chmodSync(dir, 0o700);
    const server = net.createServer();
    const sp = new Spawner(dir, server);
    server.on('connection', (s) => sp.accept(s));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(path.join(dir, 's'), () => resolve());
    });
    server.unref();
    return sp;
  }

  /** Start `req` through the helper. Resolves with the process (streams connected) or rejects (spawn failed). */
  async spawn(req: SpawnRequest): Promise<SandboxChild> {
    if (this.shut) throw new Error('the sandbox spawner is closed');
    const helper = this.helperProcess();
    const id = ++this.seq;
    const token = randomBytes(16).toString('hex');
    const child = new RemoteChild();
    this.byToken.set(token, child);
    this.byId.set(id, child);
    helper.stdin!.write(
      `${JSON.stringify({ id, token, file: req.argv[0], args: req.argv.slice(1), cwd: req.cwd, env: req.env, ...req.ids })}\n`,
    );
    this.hold();
    const err = await child.ready;
    this.byToken.delete(token);
    if (err) {
      this.byId.delete(id);
      this.hold();
      throw err;
    }
    child.once('close', () => {
      this.byId.delete(id);
      this.hold();
    });
    return child;
  }

  /** Keep the event loop alive while processes are starting or running (as their own handles would), not otherwise. */
  private hold(): void {
    const out = this.helper?.stdout as unknown as { ref?: () => void; unref?: () => void } | undefined;
    if (this.byId.size > 0) out?.ref?.();
    else out?.unref?.();
  }

  /**
   * Stop the helper and the socket (shutdown): processes it started are killed and reported exited,
   * starts still in progress fail, and later {@link spawn} calls fail at once.
   */
  close(): void {
    this.shut = true;
    this.helper?.stdin?.end();
    this.helper = null;
    this.abandon();
    this.server.close();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  private helperProcess(): ChildProcess {
    if (this.helper) return this.helper;
    const h = spawn(process.execPath, ['-e', HELPER_SOURCE, path.join(this.dir, 's')], {
      stdio: ['pipe', 'pipe', 'inherit'],
      env: {},
    });
    this.helper = h;
    h.stdin!.on('error', () => {});
    h.stdout!.setEncoding('utf8');
    h.stdout!.on('data', (d: string) => this.onHelperData(d));
    h.on('exit', () => this.helperDied(h));
    h.on('error', () => this.helperDied(h));
    h.unref();
    (h.stdin as unknown as { unref?: () => void }).unref?.();
    (h.stdout as unknown as { unref?: () => void }).unref?.();
    return h;
  }

  /** The helper is gone: see {@link abandon}. */
  private helperDied(h: ChildProcess): void {
    if (this.helper !== h) return;
    this.helper = null;
    this.abandon();
  }

  /** Kill what the helper started (their exits can no longer be reported: they are reported killed) and fail what it was starting. */
  private abandon(): void {
    this.out = '';
    for (const c of this.byId.values()) {
      if (c.pid) {
        try {
          process.kill(-c.pid, 'SIGKILL');
        } catch {
          /* gone */
        }
        c.exited(null, 'SIGKILL');
        // its streams may never arrive now (the socket is closed): a start still waiting for them fails
        if (!c.sockets.every(Boolean)) c.failed(new Error('the sandbox spawner exited'));
      } else c.failed(new Error('the sandbox spawner exited'));
    }
    this.byId.clear();
    this.byToken.clear();
  }

  private onHelperData(d: string): void {
    this.out += d;
    let nl;
    while ((nl = this.out.indexOf('\n')) >= 0) {
      const line = this.out.slice(0, nl);
      this.out = this.out.slice(nl + 1);
      let m: { id?: number; pid?: number; error?: string; exit?: number | null; signal?: NodeJS.Signals | null };
      try {
        m = JSON.parse(line);
      } catch {
        continue;
      }
      const c = typeof m.id === 'number' ? this.byId.get(m.id) : undefined;
      if (!c) continue;
      if (typeof m.error === 'string') c.failed(new Error(m.error));
      else if (typeof m.pid === 'number') c.started(m.pid);
      else if ('exit' in m) c.exited(m.exit ?? null, m.signal ?? null);
    }
  }

  /** A connection from the helper: read its header line (paused mode), then hand the socket to its process. */
  private accept(s: net.Socket): void {
    let head = Buffer.alloc(0);
    const onReadable = () => {
      let chunk: Buffer | null;
      while ((chunk = s.read() as Buffer | null) !== null) {
        head = Buffer.concat([head, chunk]);
        const nl = head.indexOf(10);
        if (nl < 0) {
          if (head.length > HEADER_MAX) s.destroy();
          continue;
        }
        // Removing the last 'readable' listener leaves the stream to whoever adds a 'data' listener.
        s.off('readable', onReadable);
        const [token, fd] = head.subarray(0, nl).toString('latin1').split(' ');
        const child = this.byToken.get(token);
        const n = Number(fd);
        if (!child || !(n >= 0 && n <= 3) || child.sockets[n]) {
          s.destroy();
          return;
        }
        if (nl + 1 < head.length) s.unshift(head.subarray(nl + 1));
        child.attach(n, s);
        return;
      }
    };
    s.on('error', () => {});
    s.on('readable', onReadable);
  }
}

/** Name of a spawn directory: `ap-spawn-<owner pid>-<owner start ticks>-<random>` (older servers: `ap-spawn-<random>`). */
const SPAWN_DIR = /^ap-spawn-(?:(\d+)-(\d+)-)?[A-Za-z0-9]{6}$/;

/** A legacy directory (no owner in its name) younger than this may belong to a server still starting, ms. */
const LEGACY_GRACE_MS = 60_000;

/** Is the process `pid` that started at `ticks` (`0`: unknown) still running? */
function ownerAlive(pid: number, ticks: string): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
  }
  const now = processStartTicks(pid);
  return ticks === '0' || now === null || now === ticks;
}

/** Does anything listen on the unix socket `sock`? (`false` only for a refused connection or a missing socket.) */
function listening(sock: string): Promise<boolean> {
  return new Promise((resolve) => {
    const c = net.connect(sock, () => {
      c.destroy();
      resolve(true);
    });
    c.on('error', (e: NodeJS.ErrnoException) => resolve(!(e.code === 'ECONNREFUSED' || e.code === 'ENOENT')));
  });
}

/**
 * Remove the spawn directories in `tmp` (default `os.tmpdir()`) left by servers that died without
 * closing their spawner (`kill -9`, a crash). A directory is removed only when it is this user's
 * and its owner is gone: the pid in its name no longer runs, or runs but started at another time
 * (pid reuse); for a directory of an older server (no pid in its name), when nothing listens on its
 * socket and it is older than a minute. A live server's directory is never touched.
 * @returns the removed directories
 */
export async function sweepSpawnDirs(tmp: string = os.tmpdir()): Promise<string[]> {
  let names: string[];
  try {
    names = fs.readdirSync(tmp);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const m = SPAWN_DIR.exec(name);
    if (!m) continue;
    const dir = path.join(tmp, name);
    let st: fs.Stats;
    try {
      st = fs.lstatSync(dir);
    } catch {
      continue;
    }
    if (!st.isDirectory() || st.uid !== process.getuid?.()) continue;
    const dead = m[1]
      ? !ownerAlive(Number(m[1]), m[2])
      : Date.now() - st.mtimeMs > LEGACY_GRACE_MS && !(await listening(path.join(dir, 's')));
    if (!dead) continue;
    fs.rmSync(dir, { recursive: true, force: true });
    removed.push(dir);
  }
  return removed;
}
