/**
 * The file-system wall of the sandbox: bubblewrap (`bwrap`, https://github.com/containers/bubblewrap,
 * Debian package `bubblewrap`), the unprivileged sandboxing tool of Flatpak.
 *
 * Each environment's process tree starts in new user, mount, PID, IPC, UTS and cgroup namespaces
 * (network too, unless SANDBOX_NETWORK=allowed). Its root is an empty tmpfs into which bwrap binds
 * only:
 * - the Node.js binary and the shared libraries it links (from `ldd`), read-only, at their paths;
 * - the unpacked artifact, read-only, at `/app` (the working directory);
 * - with egress, the copy of `undici` (read-only, `/runtime/undici`) and the environment's proxy
 *   socket (`/run/egress/proxy.sock`);
 * - a private tmpfs at `/tmp` ({@link TMP_MB} MiB), a minimal `/dev` and a `/proc` of the new PID
 *   namespace (it lists the sandbox's own processes only).
 * No host socket (PostgreSQL's `/var/run/postgresql`, Docker's, D-Bus, …) exists in that tree, so
 * `net.connect(path)` — which Node's permission model does not cover — has nothing to reach.
 * `--die-with-parent` kills the tree when its parent (the backstop `timeout`) dies.
 *
 * bwrap runs as the sandbox user (65534 when the server is root) and creates the namespaces
 * itself, so it needs unprivileged user namespaces; the uid outside is that user's, not root's.
 * `--new-session` is not used: the process tree has no controlling terminal (its stdio are pipes or
 * sockets; the spawn starts a new session), so TIOCSTI has no target, and the environment must stay
 * in one process group for the freezer and the kill of the whole group.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { findBinary } from './host.js';

/** Size of the private writable `/tmp` of an environment, MiB (tmpfs: counts as the host's memory). */
export const TMP_MB = 64;

/** Where the sandbox sees the artifact, `undici` and the egress proxy socket. */
export const SANDBOX_PATHS = {
  app: '/app',
  undici: '/runtime/undici',
  egressSocket: '/run/egress/proxy.sock',
} as const;

/** The runtime files of each `node` binary (binary, dynamic loader, libraries) as `[host path, sandbox path]` pairs. */
const runtimeBinds = new Map<string, Array<[string, string]>>();

/**
 * The files `node` needs to start: the binary and every library `ldd` lists (each bound at the
 * path the loader asks for, from its real path). Without `ldd` (or for a static binary), the
 * usual library directories, read-only.
 */
export function runtimeFiles(node: string): Array<[string, string]> {
  const hit = runtimeBinds.get(node);
  if (hit) return hit;
  const out: Array<[string, string]> = [[fs.realpathSync(node), node]];
  const ldd = findBinary('ldd');
  const r = ldd
    ? spawnSync(ldd, [node], { encoding: 'utf8', timeout: 5000, env: { PATH: '/usr/bin:/bin', LC_ALL: 'C' } })
    : null;
  const libs = r?.status === 0 ? [...r.stdout.matchAll(/(?:^|\s)(\/[^\s]+)\s+\(0x/gm)].map((m) => m[1]) : [];
  if (libs.length) {
    for (const lib of libs) if (fs.existsSync(lib)) out.push([fs.realpathSync(lib), lib]);
  } else {
    for (const dir of ['/lib', '/lib64', '/usr/lib', '/usr/lib64'])
      if (fs.existsSync(dir)) out.push([fs.realpathSync(dir), dir]);
  }
  runtimeBinds.set(node, out);
  return out;
}

/** What one environment's sandbox binds besides the runtime. */
export interface SealSpec {
  /** Unpacked artifact (host path), bound read-only at `/app`. */
  root: string;
  /** Node binary (host path; bound at the same path). */
  node: string;
  /** Share the host's network namespace (SANDBOX_NETWORK=allowed). */
  shareNet: boolean;
  /** Egress: the copy of undici (directory, host path) and the proxy's socket (host path). */
  egress?: { undiciDir: string; socket: string };
}

/**
 * The `bwrap` argument vector (without the command) for one environment; see the module comment.
 * @param bin path of `bwrap`
 */
export function bwrapArgs(bin: string, s: SealSpec): string[] {
  const args = [
    bin,
    '--unshare-user',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    ...(s.shareNet ? [] : ['--unshare-net']),
  ];
  args.push('--die-with-parent', '--hostname', 'sandbox');
  for (const [from, to] of runtimeFiles(s.node)) args.push('--ro-bind', from, to);
  args.push('--proc', '/proc', '--dev', '/dev', '--size', String(TMP_MB * 1024 * 1024), '--tmpfs', '/tmp');
  args.push('--ro-bind', s.root, SANDBOX_PATHS.app);
  if (s.egress)
    args.push(
      '--ro-bind',
      s.egress.undiciDir,
      SANDBOX_PATHS.undici,
      '--bind',
      s.egress.socket,
      SANDBOX_PATHS.egressSocket,
    );
  // A read-only root: nothing but /tmp is writable, and no new mount point can be made in `/`.
  args.push('--remount-ro', '/', '--chdir', SANDBOX_PATHS.app, '--');
  return args;
}

/** Result of {@link probeBwrap}: the binary, or why the host cannot seal sandboxes. */
export type BwrapProbe = { bin: string; error?: undefined } | { bin?: undefined; error: string };

const probes = new Map<string, BwrapProbe>();

/**
 * Can `bwrap` start a sealed process here, as `user` (null: this process's user)? Runs
 * `node -e 0` in a sandbox like an environment's (cached per node binary and user).
 */
export function probeBwrap(node: string, user: { uid: number; gid: number } | null, shareNet = false): BwrapProbe {
  const key = `${node}\0${user?.uid ?? ''}:${user?.gid ?? ''}\0${shareNet}`;
  const hit = probes.get(key);
  if (hit) return hit;
  let res: BwrapProbe;
  const bin = findBinary('bwrap');
  if (!bin) res = { error: 'bwrap (Debian package bubblewrap) is not installed' };
  else {
    const argv = bwrapArgs(bin, { root: path.dirname(node), node, shareNet });
    const r = spawnSync(argv[0], [...argv.slice(1), node, '-e', '0'], {
      timeout: 10_000,
      encoding: 'utf8',
      env: {},
      ...(user ?? {}),
    });
    res =
      r.status === 0
        ? { bin }
        : {
            error: `bwrap failed${user ? ` as uid ${user.uid}` : ''}: ${(r.stderr || r.error?.message || `status ${r.status}`).trim().slice(0, 300)} (unprivileged user namespaces must be allowed: sysctl kernel.unprivileged_userns_clone=1, and on Ubuntu kernel.apparmor_restrict_unprivileged_userns=0)`,
          };
  }
  probes.set(key, res);
  return res;
}
