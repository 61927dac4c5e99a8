/**
 * Deployment artifacts: gzip-compressed tar archives (`.tar.gz` / `.tgz`) holding an agent's code.
 *
 * {@link inspectArtifact} validates an uploaded archive before anything is stored: gzip magic,
 * gunzipped size (zip-bomb guard), entry count, total file size, and for every entry: no absolute
 * path, no `..` segment, no backslash or NUL, only regular files, directories, symbolic links and
 * hard links (no devices, FIFOs or other special entries), symbolic links that resolve inside the
 * archive root (never through another link: link-through-link chains can escape even when each
 * link looks harmless on its own), hard links only to earlier regular files, no entry below a
 * symbolic link, no duplicate paths. The checks matter beyond hygiene: Node's permission model
 * follows symbolic links out of the granted directory, so the archive itself must not contain
 * a way out.
 *
 * {@link unpackArtifact} extracts a validated archive into a content-addressed directory
 * (`<dir>/<sha256>`), atomically (temporary directory, then rename), once per host.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import type { ReadEntry } from 'tar';

const gunzip = promisify(zlib.gunzip);

/** Limits applied to one archive. */
export interface ArtifactLimits {
  /** Largest sum of regular-file sizes, bytes (the gunzipped stream may exceed it by header overhead only). */
  maxUnpackedBytes: number;
  /** Most entries (files, directories, links). */
  maxFiles: number;
}

/** An archive failed validation; `message` says which entry and why (safe to show to the uploader). */
export class ArtifactError extends Error {}

/** What {@link inspectArtifact} learnt about a valid archive. */
export interface InspectedArtifact {
  /** Hex SHA-256 of the uploaded (compressed) bytes: the content address. */
  sha256: string;
  /** Size of the uploaded (compressed) archive, bytes. */
  sizeBytes: number;
  /** Number of entries (all kinds). */
  entries: number;
  /** Sum of regular-file sizes, bytes. */
  unpackedBytes: number;
  /** `1` when every entry lives under `package/` (the `npm pack` layout), which is then stripped; else `0`. */
  strip: 0 | 1;
  /** Regular-file paths after stripping, POSIX, relative to the root (no `./`). */
  files: Set<string>;
  /** Paths of symbolic links after stripping. */
  symlinks: Set<string>;
  /** Parsed root `package.json`, when present and valid JSON (≤ 64 KiB). */
  packageJson: Record<string, unknown> | null;
  /** Parsed root `agent.json` (the platform's manifest: `egress`, …), when present (≤ 64 KiB). */
  agentJson: Record<string, unknown> | null;
}

const MAX_PATH = 1024;
const MAX_DEPTH = 64;
const MAX_PACKAGE_JSON = 64 * 1024;
/** Root files read while inspecting (with and without the `npm pack` prefix). */
const MANIFESTS = new Set(['package.json', 'package/package.json', 'agent.json', 'package/agent.json']);
/** Entry types admitted, mapped to what they are. Everything else (devices, FIFOs, sparse, …) is refused. */
const TYPES: Partial<Record<ReadEntry['type'], 'file' | 'dir' | 'symlink' | 'hardlink'>> = {
  File: 'file',
  OldFile: 'file',
  ContiguousFile: 'file',
  Directory: 'dir',
  SymbolicLink: 'symlink',
  Link: 'hardlink',
};

interface RawEntry {
  path: string;
  kind: 'file' | 'dir' | 'symlink' | 'hardlink';
  size: number;
  linkpath?: string;
}

/** Normalise an archive path to `a/b/c` form; throws for anything that could leave the root. */
function cleanPath(raw: string, what = 'path'): string {
  if (raw.length > MAX_PATH) throw new ArtifactError(`${what} longer than ${MAX_PATH} characters`);
  if (raw.includes('\0')) throw new ArtifactError(`${what} ${JSON.stringify(raw)} contains a NUL byte`);
  if (raw.includes('\\')) throw new ArtifactError(`${what} ${JSON.stringify(raw)} contains a backslash`);
  if (raw.startsWith('/') || /^[a-zA-Z]:/.test(raw))
    throw new ArtifactError(`${what} ${JSON.stringify(raw)} is absolute`);
  const parts = raw.split('/').filter((s) => s !== '' && s !== '.');
  if (parts.includes('..')) throw new ArtifactError(`${what} ${JSON.stringify(raw)} contains a ".." segment`);
  if (parts.length > MAX_DEPTH)
    throw new ArtifactError(`${what} ${JSON.stringify(raw)} is nested deeper than ${MAX_DEPTH} levels`);
  return parts.join('/');
}

/** Gunzip with an output cap. @throws ArtifactError */
async function gunzipCapped(buf: Buffer, limits: ArtifactLimits): Promise<Buffer> {
  if (buf.length < 18 || buf[0] !== 0x1f || buf[1] !== 0x8b)
    throw new ArtifactError('artifact is not gzip-compressed (expected a .tar.gz / .tgz file)');
  // Headers: one 512-byte block per entry, plus up to two more for long names (pax/GNU), plus end blocks.
  const cap = limits.maxUnpackedBytes + (limits.maxFiles * 3 + 4) * 512 + 512 * 1024;
  try {
    return await gunzip(buf, { maxOutputLength: cap });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError) {
      throw new ArtifactError(`artifact unpacks to more than ${limits.maxUnpackedBytes} bytes`);
    }
    throw new ArtifactError(`artifact is not valid gzip: ${(err as Error).message}`);
  }
}

/** Read the tar entries of an uncompressed archive. @throws ArtifactError */
async function readEntries(
  tarBuf: Buffer,
  limits: ArtifactLimits,
): Promise<{ entries: RawEntry[]; packageJson: Map<string, Buffer> }> {
  const entries: RawEntry[] = [];
  const packageJson = new Map<string, Buffer>();
  let failure: ArtifactError | null = null;
  let total = 0;
  // tar is imported on first use, not at start-up.
  const { Parser } = await import('tar');
  await new Promise<void>((resolve) => {
    const parser = new Parser({
      strict: true,
      onReadEntry: (entry: ReadEntry) => {
        if (failure) return entry.resume();
        try {
          const kind = TYPES[entry.type];
          if (!kind)
            throw new ArtifactError(
              `entry ${JSON.stringify(entry.path)} is a ${entry.type}; only files, directories and links are allowed`,
            );
          if (entries.length >= limits.maxFiles)
            throw new ArtifactError(`artifact has more than ${limits.maxFiles} entries`);
          const size = kind === 'file' ? entry.size : 0;
          total += size;
          if (total > limits.maxUnpackedBytes)
            throw new ArtifactError(`artifact unpacks to more than ${limits.maxUnpackedBytes} bytes`);
          entries.push({ path: entry.path, kind, size, linkpath: entry.linkpath });
          const p = entry.path.replace(/^(\.\/)+/, '');
          if (kind === 'file' && MANIFESTS.has(p) && size <= MAX_PACKAGE_JSON) {
            const chunks: Buffer[] = [];
            entry.on('data', (c: Buffer) => chunks.push(c));
            entry.on('end', () => packageJson.set(p, Buffer.concat(chunks)));
            return;
          }
        } catch (err) {
          failure = err as ArtifactError;
        }
        entry.resume();
      },
    });
    parser.on('error', (err: Error) => {
      failure ??= new ArtifactError(`artifact is not a valid tar archive: ${err.message}`);
      resolve();
    });
    parser.on('warn', (_code: string, message: string | Error) => {
      failure ??= new ArtifactError(
        `artifact is not a valid tar archive: ${typeof message === 'string' ? message : message.message}`,
      );
    });
    parser.on('end', () => resolve());
    parser.on('close', () => resolve());
    parser.end(tarBuf);
  });
  if (failure) throw failure;
  return { entries, packageJson };
}

/**
 * Validate an uploaded archive (see the module comment for the rules).
 * @throws ArtifactError with a message naming the offending entry.
 */
export async function inspectArtifact(buf: Buffer, limits: ArtifactLimits): Promise<InspectedArtifact> {
  const sha256 = createHash('sha256').update(buf).digest('hex');
  const tarBuf = await gunzipCapped(buf, limits);
  const { entries: raw, packageJson: pj } = await readEntries(tarBuf, limits);

  const cleaned = raw.map((e) => ({ ...e, path: cleanPath(e.path, 'entry path') })).filter((e) => e.path !== '');
  if (!cleaned.some((e) => e.kind === 'file')) throw new ArtifactError('artifact contains no files');
  const strip: 0 | 1 = cleaned.every((e) => e.path === 'package' || e.path.startsWith('package/')) ? 1 : 0;

  const files = new Set<string>();
  const symlinks = new Map<string, string>();
  const seen = new Map<string, RawEntry['kind']>();
  for (const e of cleaned) {
    const p = strip ? e.path.split('/').slice(1).join('/') : e.path;
    if (p === '') continue;
    const prev = seen.get(p);
    if (prev && !(prev === 'dir' && e.kind === 'dir'))
      throw new ArtifactError(`entry ${JSON.stringify(p)} appears more than once`);
    seen.set(p, e.kind);
    if (e.kind === 'file') files.add(p);
    if (e.kind === 'symlink') {
      if (!e.linkpath) throw new ArtifactError(`symbolic link ${JSON.stringify(p)} has no target`);
      if (e.linkpath.startsWith('/'))
        throw new ArtifactError(`symbolic link ${JSON.stringify(p)} points to an absolute path`);
      symlinks.set(p, e.linkpath);
    }
    if (e.kind === 'hardlink') {
      const target = cleanPath(e.linkpath ?? '', `hard link target of ${JSON.stringify(p)}`);
      const t = strip ? target.split('/').slice(1).join('/') : target;
      if (!files.has(t))
        throw new ArtifactError(`hard link ${JSON.stringify(p)} must point to an earlier regular file of the archive`);
      files.add(p);
    }
  }
  // No entry may live below a symbolic link (writing or resolving through it could leave the root).
  for (const p of seen.keys()) {
    const parts = p.split('/');
    for (let i = 1; i < parts.length; i++) {
      if (symlinks.has(parts.slice(0, i).join('/')))
        throw new ArtifactError(
          `entry ${JSON.stringify(p)} lies below the symbolic link ${JSON.stringify(parts.slice(0, i).join('/'))}`,
        );
    }
  }
  // Symbolic links resolve inside the root, lexically, without passing through another link.
  for (const [p, target] of symlinks) {
    const stack = p.split('/').slice(0, -1);
    const segs = target.split('/').filter((s) => s !== '' && s !== '.');
    if (target.includes('\\') || target.includes('\0'))
      throw new ArtifactError(`symbolic link ${JSON.stringify(p)} has a malformed target`);
    segs.forEach((s, i) => {
      if (s === '..') {
        if (stack.length === 0)
          throw new ArtifactError(`symbolic link ${JSON.stringify(p)} points outside the artifact`);
        stack.pop();
        return;
      }
      stack.push(s);
      if (i < segs.length - 1 && symlinks.has(stack.join('/')))
        throw new ArtifactError(`symbolic link ${JSON.stringify(p)} resolves through another symbolic link`);
    });
  }

  const manifest = (name: string): Record<string, unknown> | null => {
    const b = pj.get(strip ? `package/${name}` : name);
    if (!b) return null;
    try {
      const v = JSON.parse(b.toString('utf8')) as unknown;
      return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
    } catch {
      throw new ArtifactError(`${name} is not valid JSON`);
    }
  };
  const unpackedBytes = cleaned.reduce((n, e) => n + e.size, 0);
  return {
    sha256,
    sizeBytes: buf.length,
    entries: cleaned.length,
    unpackedBytes,
    strip,
    files,
    symlinks: new Set(symlinks.keys()),
    packageJson: manifest('package.json'),
    agentJson: manifest('agent.json'),
  };
}

/**
 * The module file to load: `requested` (relative path) if given, else package.json `main`, else
 * the first of `index.js`, `index.mjs`, `index.cjs`. It must be a regular file of the archive or a
 * symbolic link (validated to stay inside; the prepare step checks it resolves to a file).
 * @throws ArtifactError naming what is missing.
 */
export function resolveEntrypoint(a: InspectedArtifact, requested?: string): string {
  if (requested !== undefined) {
    const p = cleanPath(requested, 'entrypoint');
    if (!a.files.has(p) && !a.symlinks.has(p))
      throw new ArtifactError(`entrypoint ${JSON.stringify(requested)} is not a file of the artifact`);
    return p;
  }
  const main = a.packageJson?.main;
  if (typeof main === 'string' && main.trim() !== '') {
    const m = cleanPath(main.trim(), 'package.json "main"');
    for (const c of [m, `${m}.js`, `${m}.mjs`, `${m}.cjs`, `${m}/index.js`, `${m}/index.mjs`])
      if (a.files.has(c) || a.symlinks.has(c)) return c;
    throw new ArtifactError(`package.json "main" (${JSON.stringify(main)}) is not a file of the artifact`);
  }
  for (const c of ['index.js', 'index.mjs', 'index.cjs']) if (a.files.has(c) || a.symlinks.has(c)) return c;
  throw new ArtifactError(
    'no entrypoint: send the "entrypoint" field, set "main" in package.json, or include index.js / index.mjs',
  );
}

/** Make the tree readable by anyone and writable by no one but its owner (runs may use an unprivileged uid). */
function normaliseModes(dir: string): void {
  fs.chmodSync(dir, 0o755);
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) normaliseModes(p);
    else if (e.isFile()) fs.chmodSync(p, fs.statSync(p).mode & 0o111 ? 0o755 : 0o644);
  }
}

/**
 * Extract a validated archive into `<dir>/<sha256>` unless it is already there; returns that
 * directory (real path). Extraction goes to a temporary sibling first and is renamed into place,
 * so a directory that exists is complete (safe with concurrent callers and several processes).
 * @throws ArtifactError when the archive fails validation (it is re-validated: the bytes come from storage).
 */
export async function unpackArtifact(buf: Buffer, dir: string, limits: ArtifactLimits): Promise<string> {
  const sha256 = createHash('sha256').update(buf).digest('hex');
  fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
  const base = fs.realpathSync(dir);
  const dest = path.join(base, sha256);
  if (fs.existsSync(dest)) return dest;
  const inspected = await inspectArtifact(buf, limits);
  const tmp = path.join(base, `.tmp-${sha256.slice(0, 16)}-${randomBytes(6).toString('hex')}`);
  fs.mkdirSync(tmp, { mode: 0o755 });
  try {
    const tarBuf = await gunzipCapped(buf, limits);
    const { extract } = await import('tar');
    await new Promise<void>((resolve, reject) => {
      const x = extract({
        cwd: tmp,
        strict: true,
        strip: inspected.strip,
        preserveOwner: false,
        noMtime: true,
        maxDepth: MAX_DEPTH + 1,
      });
      x.on('error', reject);
      x.on('warn', (code: string, message: string | Error) =>
        reject(
          new ArtifactError(
            `cannot unpack the artifact (${code}): ${typeof message === 'string' ? message : message.message}`,
          ),
        ),
      );
      x.on('close', () => resolve());
      x.end(tarBuf);
    });
    normaliseModes(tmp);
    try {
      fs.renameSync(tmp, dest);
    } catch (err) {
      // Another process (or call) finished first: its copy is identical (same content address).
      if (!fs.existsSync(dest)) throw err;
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
  return dest;
}
