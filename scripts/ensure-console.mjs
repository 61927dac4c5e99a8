#!/usr/bin/env node
// Build the web console (console/dist) when it is missing or older than any of its sources:
// `npm install` (scripts/postinstall.mjs) and every `npm start` (scripts/start.mjs) call it, so a
// fresh clone needs only `npm install && npm start`; `node scripts/ensure-console.mjs` does it by hand.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const consoleDir = path.join(root, 'console');
const built = path.join(consoleDir, 'dist', 'index.html');

function newest(p) {
  const st = fs.statSync(p);
  if (!st.isDirectory()) return st.mtimeMs;
  let t = st.mtimeMs;
  for (const e of fs.readdirSync(p)) if (e !== 'node_modules' && e !== 'dist') t = Math.max(t, newest(path.join(p, e)));
  return t;
}

/** True when console/dist is missing or older than console/{src,public,index.html,vite.config.ts,package.json} or the SDK sources it bundles. */
export function consoleStale() {
  if (!fs.existsSync(built)) return true;
  const builtAt = fs.statSync(built).mtimeMs;
  const inputs = ['src', 'public', 'index.html', 'vite.config.ts', 'package.json']
    .map((f) => path.join(consoleDir, f))
    .concat(path.join(root, 'packages', 'sdk', 'src'));
  return inputs.some((f) => fs.existsSync(f) && newest(f) > builtAt);
}

/**
 * `vite build` of the console; NODE_ENV=production whatever the caller's (a test runner sets
 * `test`, which would bundle React's development build). It builds into a fresh directory and
 * swaps it in for console/dist, so a reader (the server, a concurrent build: `npm install`'s hook
 * and a test may both find the console stale) never sees half a build; when two builds race, the
 * last swap wins and both leave a whole console/dist.
 * @returns spawnSync's result of the build (`status` 0 on success)
 */
function buildConsole(stdio) {
  const dist = path.join(consoleDir, 'dist');
  const tmp = path.join(consoleDir, `dist.tmp-${process.pid}`);
  const old = path.join(consoleDir, `dist.old-${process.pid}`);
  const r = spawnSync('npm', ['run', 'build', '--workspace', 'console', '--', '--outDir', tmp, '--emptyOutDir'], {
    cwd: root,
    stdio,
    env: { ...process.env, NODE_ENV: 'production' },
  });
  try {
    if (r.status !== 0) return r;
    try {
      fs.renameSync(dist, old);
    } catch {
      /* no console/dist yet, or another build moved it first */
    }
    try {
      fs.renameSync(tmp, dist);
    } catch (err) {
      // Another build swapped its whole console/dist in between our two renames: keep that one.
      if (!fs.existsSync(built)) throw err;
    }
    return r;
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
    fs.rmSync(old, { recursive: true, force: true });
  }
}

/**
 * Build console/dist when {@link consoleStale}, saying so on stderr. Never throws: when the build
 * fails the API starts without the console (`/console` answers 503).
 * @returns true when console/dist is current afterwards
 */
export function ensureConsole() {
  if (!consoleStale()) return true;
  process.stderr.write('console: building console/dist (missing or stale)…\n');
  const r = buildConsole(['ignore', 'ignore', 'inherit']);
  if (r.status === 0) return true;
  process.stderr.write('console: build failed; the API starts without it (/console answers 503)\n');
  return false;
}

// By hand or from `npm install`'s hook: exit 1 when console/dist is still missing or stale.
if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = ensureConsole() ? 0 : 1;
