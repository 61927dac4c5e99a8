/**
 * The command line of an execution environment: which walls the host can raise and how a
 * sandbox process is started inside them (see `runner.ts` for the list of walls).
 *
 * Sealed (SANDBOX_ISOLATION=bwrap, the default; `isolation.ts`):
 *   `timeout -s KILL <life> prlimit --data=<bytes> -- bwrap <namespaces, binds> -- node <permission flags> -e <bootstrap> /app …`
 * spawned as the sandbox user; bwrap's namespaces include the network's (its loopback is up, for
 * the egress relay), so nothing else (`unshare`, `ip`, `setpriv`) is involved.
 * Unsealed (SANDBOX_ISOLATION=off: Node's permission model is the only file-system wall):
 *   `timeout … prlimit … [unshare --net [-S uid -G gid] --] node …`, and for egress
 *   `unshare --net -- sh -c 'ip link set lo up && exec "$@"' sh [setpriv --reuid … --] node …`.
 */
import { spawnSync } from 'node:child_process';
import { BOOTSTRAP_SOURCE } from './bootstrap.js';
import { copyUndici, findBinary, probeNetworkIsolation } from './host.js';
import { bwrapArgs, probeBwrap, SANDBOX_PATHS } from './isolation.js';

/** What the command line depends on (a subset of the sandbox's options). */
export interface CommandOptions {
  memoryMb: number;
  maxOutputBytes: number;
  network: 'auto' | 'isolated' | 'allowed';
  /** `bwrap` (default): seal the file system; `off`: Node's permission model alone. */
  isolation?: 'bwrap' | 'off';
  nodePath?: string;
  user?: { uid: number; gid: number } | 'auto' | null;
  readableDir?: string;
  processMemoryMb?: number;
}

/** The parts of a run the command line needs. */
export interface CommandRun {
  root: string;
  entrypoint: string;
  timeoutMs: number;
}

/** A built command line: argv, the uid/gid to spawn it as, and whether the group leader is the backstop. */
export interface BuiltCommand {
  argv: string[];
  ids: { uid?: number; gid?: number };
  backstop: boolean;
}

/** `canRead` answers per directory and user (each costs a process start). */
const readable = new Map<string, boolean>();

/** Decides the walls once (probing the host) and builds each environment's command line. */
export class CommandLine {
  /** True when runs start in an empty network namespace (no network at all). */
  readonly networkIsolated: boolean;
  /** True when runs are sealed off the host's file system by bwrap. */
  readonly sealed: boolean;
  /** The uid/gid runs switch to (null: same user as this process). */
  readonly runAs: { uid: number; gid: number } | null = null;
  /** Why runs do not switch to an unprivileged user although this process is root (for a log line). */
  readonly runAsNote: string | null = null;
  private readonly bwrap: string | null = null;
  private readonly prefix: string[];
  /** Prefix for environments with egress (unsealed; see {@link loopbackPrefix}); [] without network isolation; null: egress unavailable. */
  private readonly egressPrefix: string[] | null;
  private undici: { dir: string; entry: string } | null = null;

  /** @throws Error when a required wall is unavailable (SANDBOX_ISOLATION=bwrap, SANDBOX_NETWORK=isolated, an explicit SANDBOX_USER that cannot read) */
  constructor(private readonly opts: CommandOptions) {
    const node = opts.nodePath ?? process.execPath;
    const sealed = (opts.isolation ?? 'bwrap') === 'bwrap';
    const probe = sealed || opts.network === 'allowed' ? null : probeNetworkIsolation();
    if (!sealed && opts.network === 'isolated' && !probe) {
      throw new Error('SANDBOX_NETWORK=isolated but this host cannot create network namespaces (unshare --net failed)');
    }
    const wanted = opts.user === 'auto' ? { uid: 65534, gid: 65534 } : (opts.user ?? null);
    if (wanted && process.getuid?.() === 0) {
      if (this.canRead(sealed ? null : probe, wanted)) this.runAs = wanted;
      else if (opts.user === 'auto')
        this.runAsNote = `uid ${wanted.uid} cannot read ${opts.readableDir}: sandboxed code runs as root (make the path traversable, or set SANDBOX_USER)`;
      else throw new Error(`SANDBOX_USER=${wanted.uid}:${wanted.gid} cannot read ${opts.readableDir}`);
    }
    this.sealed = sealed;
    if (sealed) {
      const b = probeBwrap(node, this.runAs, opts.network === 'allowed');
      if (!b.bin)
        throw new Error(
          `SANDBOX_ISOLATION=bwrap but ${b.error}; install bubblewrap and allow user namespaces, or set SANDBOX_ISOLATION=off (then deployed code can reach the host's Unix sockets, e.g. a database's)`,
        );
      this.bwrap = b.bin;
      this.networkIsolated = opts.network !== 'allowed';
      this.prefix = [];
      this.egressPrefix = [];
      return;
    }
    this.networkIsolated = !!probe;
    const ids = this.runAs && probe ? ['-S', String(this.runAs.uid), '-G', String(this.runAs.gid)] : [];
    this.prefix = probe ? [probe.bin, ...probe.flags, ...ids, '--'] : [];
    this.egressPrefix = probe ? this.loopbackPrefix(probe) : [];
  }

  /** True when deployments with `egress` can reach the host proxy (the sandbox's loopback can come up). */
  get egressReady(): boolean {
    return this.egressPrefix !== null;
  }

  /**
   * Prefix of an unsealed environment with egress: the same empty network namespace, with its
   * loopback interface up (iproute2 `ip`, before dropping to the unprivileged user with util-linux
   * `setpriv`) so the in-sandbox relay can listen on 127.0.0.1. Null when a tool is missing.
   */
  private loopbackPrefix(probe: { bin: string; flags: string[] }): string[] | null {
    const ip = findBinary('ip');
    const sh = findBinary('sh');
    const setpriv = this.runAs ? findBinary('setpriv') : null;
    if (!ip || !sh || (this.runAs && !setpriv)) return null;
    const drop = this.runAs
      ? [setpriv!, `--reuid=${this.runAs.uid}`, `--regid=${this.runAs.gid}`, '--clear-groups', '--']
      : [];
    return [probe.bin, ...probe.flags, '--', sh, '-c', `${ip} link set lo up && exec "$@"`, 'sh', ...drop];
  }

  /** The platform's `undici`, readable by the sandbox user (see {@link copyUndici}). */
  undiciCopy(): { dir: string; entry: string } {
    return (this.undici ??= copyUndici(this.opts.readableDir));
  }

  /** Can `user` (entered the same way unsealed runs are) read and traverse `readableDir`? */
  private canRead(probe: { bin: string; flags: string[] } | null, user: { uid: number; gid: number }): boolean {
    const dir = this.opts.readableDir;
    if (!dir) return true;
    const node = this.opts.nodePath ?? process.execPath;
    const key = `${dir}\0${user.uid}:${user.gid}\0${probe ? 'ns' : ''}`;
    const hit = readable.get(key);
    if (hit !== undefined) return hit;
    const code = `require('fs').accessSync(${JSON.stringify(dir)}, require('fs').constants.R_OK | require('fs').constants.X_OK)`;
    const r = probe
      ? spawnSync(probe.bin, [...probe.flags, '-S', String(user.uid), '-G', String(user.gid), '--', node, '-e', code], {
          timeout: 5000,
          stdio: 'ignore',
          env: {},
        })
      : spawnSync(node, ['-e', code], { timeout: 5000, stdio: 'ignore', uid: user.uid, gid: user.gid, env: {} });
    readable.set(key, r.status === 0);
    return r.status === 0;
  }

  /**
   * argv of a new environment for `r` (`pooled`: its backstop is the pool lifetime `maxAgeMs`;
   * `egressSocket`: the host proxy's socket, when the run has egress).
   */
  build(r: CommandRun, pooled: boolean, maxAgeMs: number, egressSocket: string | null): BuiltCommand {
    const node = this.opts.nodePath ?? process.execPath;
    const undici = egressSocket ? this.undiciCopy() : null;
    const app = this.sealed ? SANDBOX_PATHS.app : r.root;
    const undiciDir = this.sealed ? SANDBOX_PATHS.undici : undici?.dir;
    const undiciEntry = this.sealed ? `${SANDBOX_PATHS.undici}/index.js` : undici?.entry;
    const nodeArgs = [
      '--experimental-permission',
      `--allow-fs-read=${app}`,
      // The private tmpfs of a sealed environment is its only writable place.
      ...(this.sealed ? ['--allow-fs-read=/tmp', '--allow-fs-write=/tmp'] : []),
      ...(undici ? [`--allow-fs-read=${undiciDir}`] : []),
      '--disable-warning=ExperimentalWarning',
      `--max-old-space-size=${this.opts.memoryMb}`,
      '--input-type=module',
      '-e',
      BOOTSTRAP_SOURCE,
      app,
      r.entrypoint,
      String(this.opts.maxOutputBytes),
      ...(egressSocket && undici ? [this.sealed ? SANDBOX_PATHS.egressSocket : egressSocket, undiciEntry!] : []),
    ];
    if (timeoutBin === undefined) timeoutBin = findBinary('timeout');
    // Backstop: `timeout` kills the process even if this one has died meanwhile.
    const life = pooled ? Math.ceil(maxAgeMs / 1000) : Math.ceil(r.timeoutMs / 1000) + 2;
    const backstop = timeoutBin ? [timeoutBin, '-s', 'KILL', `${life}s`] : [];
    const limitMb = this.processMemoryMb;
    const rlimit = limitMb > 0 ? [prlimitBin!, `--data=${limitMb * 1024 * 1024}`, '--'] : [];
    if (this.sealed) {
      const seal = bwrapArgs(this.bwrap!, {
        root: r.root,
        node,
        shareNet: !this.networkIsolated,
        ...(egressSocket && undici ? { egress: { undiciDir: undici.dir, socket: egressSocket } } : {}),
      });
      return {
        argv: [...backstop, ...rlimit, ...seal, node, ...nodeArgs],
        ids: this.runAs ? { ...this.runAs } : {},
        backstop: backstop.length > 0,
      };
    }
    // Without unshare (which switches user itself after creating the namespace), spawn as the user directly.
    const ids = this.runAs && !this.networkIsolated ? { uid: this.runAs.uid, gid: this.runAs.gid } : {};
    return {
      argv: [...backstop, ...rlimit, ...(egressSocket ? this.egressPrefix! : this.prefix), node, ...nodeArgs],
      ids,
      backstop: backstop.length > 0,
    };
  }

  /** The whole-process memory limit in force, MiB (0: none — `prlimit` missing or disabled). */
  get processMemoryMb(): number {
    if (prlimitBin === undefined) prlimitBin = findBinary('prlimit');
    if (!prlimitBin) return 0;
    return this.opts.processMemoryMb ?? this.opts.memoryMb * 2 + 64;
  }
}

/** coreutils `timeout`, used as a backstop that kills a run even if this process dies. */
let timeoutBin: string | null | undefined;

/** util-linux `prlimit`, used to set RLIMIT_DATA on the sandbox process. */
let prlimitBin: string | null | undefined;
