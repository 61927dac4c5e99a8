/**
 * What the sandbox needs from the host: binaries found on PATH (util-linux `unshare`, `setpriv`,
 * `prlimit`, coreutils `timeout`, iproute2 `ip`), the network-namespace probe, and the copy of the
 * platform's `undici` that sandboxed code with egress loads its `ProxyAgent` from.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

/** How this host can cut a process off the network, or null. Probed once per process. */
let netProbe: { bin: string; flags: string[] } | null | undefined;

/** Absolute path of the executable `name` on PATH (or in /usr/bin, /bin, /usr/sbin, /sbin), or null. */
export function findBinary(name: string): string | null {
  for (const dir of (process.env.PATH ?? '/usr/bin:/bin')
    .split(':')
    .concat(['/usr/bin', '/bin', '/usr/sbin', '/sbin'])) {
    const p = path.join(dir, name);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return p;
    } catch {
      /* next */
    }
  }
  return null;
}

/** Probe `unshare --net` (as root) and `unshare --net --map-root-user` (unprivileged user namespaces). */
export function probeNetworkIsolation(): { bin: string; flags: string[] } | null {
  if (netProbe !== undefined) return netProbe;
  netProbe = null;
  const bin = findBinary('unshare');
  if (bin) {
    for (const flags of [['--net'], ['--net', '--map-root-user']]) {
      const r = spawnSync(bin, [...flags, '--', process.execPath, '-e', '0'], { timeout: 5000, stdio: 'ignore' });
      if (r.status === 0) {
        netProbe = { bin, flags };
        break;
      }
    }
  }
  return netProbe;
}

/**
 * Copy the platform's own `undici` package once into `<readableDir>/.runtime/undici-<version>`
 * (atomically: temporary directory, then rename) so the unprivileged sandbox user may read it, and
 * return that directory and its entry file. Without `readableDir`, the installed package itself.
 */
export function copyUndici(readableDir: string | undefined): { dir: string; entry: string } {
  const src = path.dirname(createRequire(import.meta.url).resolve('undici/package.json'));
  const { version } = JSON.parse(fs.readFileSync(path.join(src, 'package.json'), 'utf8')) as { version: string };
  const dir = readableDir ? path.join(readableDir, '.runtime', `undici-${version}`) : src;
  if (dir !== src && !fs.existsSync(path.join(dir, 'package.json'))) {
    fs.mkdirSync(path.dirname(dir), { recursive: true, mode: 0o755 });
    const tmp = `${dir}.${process.pid}.tmp`;
    fs.rmSync(tmp, { recursive: true, force: true });
    fs.cpSync(src, tmp, { recursive: true, dereference: true });
    try {
      fs.renameSync(tmp, dir);
    } catch {
      fs.rmSync(tmp, { recursive: true, force: true }); // another process won the race
    }
  }
  return { dir, entry: path.join(dir, 'index.js') };
}
