#!/usr/bin/env node
// `npm start` runs this first (prestart): build the console (console/dist) when it is missing or
// older than any of its sources, so a fresh clone needs only `npm install && npm start`.
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

/** True when console/dist is missing or older than console/{src,index.html,vite.config.ts,package.json} or the SDK sources it bundles. */
export function consoleStale() {
  if (!fs.existsSync(built)) return true;
  const builtAt = fs.statSync(built).mtimeMs;
  const inputs = ['src', 'index.html', 'vite.config.ts', 'package.json'].map((f) => path.join(consoleDir, f)).concat(path.join(root, 'packages', 'sdk', 'src'));
  return inputs.some((f) => fs.existsSync(f) && newest(f) > builtAt);
}

/** `vite build` of the console; NODE_ENV=production whatever the caller's (a test runner sets `test`, which would bundle React's development build). */
export function buildConsole(stdio = 'inherit') {
  return spawnSync('npm', ['run', 'build', '--workspace', 'console'], { cwd: root, stdio, env: { ...process.env, NODE_ENV: 'production' } });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (consoleStale()) {
    process.stderr.write('console: building console/dist (missing or stale)…\n');
    const r = buildConsole(['ignore', 'ignore', 'inherit']);
    if (r.status !== 0) {
      process.stderr.write('console: build failed; the API starts without it (/console answers 503)\n');
    }
  }
}
