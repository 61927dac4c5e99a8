#!/usr/bin/env node
// `npm install` / `npm ci` run this after installing (package.json `postinstall`): it does now what
// a machine's first `npm start` would otherwise do itself (issue 18: a first start must open in
// < 2.5 s, and these steps alone took longer):
// 1. the server bundle dist/ (`scripts/start.mjs --build`, ~1 s of esbuild; a no-op when current);
// 2. the prepared embedded data directory (initdb + every migration) in the cache a fresh DATA_DIR
//    is copied from (`PGLITE_TEMPLATE_DIR`, default node_modules/.cache/agent-platform; `off` skips
//    it), built by src/db/data-dir.ts's `prepareTemplates`: ~3 s of CPU, most of it PGlite's initdb;
// 3. the web console's console/dist (`scripts/ensure-console.mjs`, Vite; a no-op when current),
//    which the first `npm start` otherwise built before the server even started;
// 4. the SDK and the CLI (`tsc -b packages/sdk packages/cli`, incremental), so `npx agent-platform`
//    runs at once on a fresh clone (its committed launcher, packages/cli/bin/agent-platform.js,
//    would otherwise compile them on first use).
// All four run side by side. It never fails the install: without sources (the image's `npm ci` runs
// before src/ is copied; the Dockerfile runs this script again afterwards) it does nothing, and
// when a step fails it says so and `npm start` does that step itself, as it would have anyway.
// `npm install --ignore-scripts` skips it with the same effect. `--strict` (the image build): a
// failed step exits 1.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** `node scripts/start.mjs --build` in a child process. @returns null, or why it failed */
function buildBundle() {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(root, 'scripts', 'start.mjs'), '--build'], {
      cwd: root,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => void (stderr += d.toString()));
    child.once('error', (err) => resolve(err.message));
    child.once('exit', (code) => resolve(code === 0 ? null : stderr.trim().split('\n')[0] || `exited with ${code}`));
  });
}

/**
 * console/dist through `scripts/ensure-console.mjs` (what `npm start` also checks) in a child
 * process. @returns null, or why it is still missing or stale
 */
function buildConsoleDist() {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(root, 'scripts', 'ensure-console.mjs')], {
      cwd: root,
      stdio: 'ignore',
    });
    child.once('error', (err) => resolve(err.message));
    child.once('exit', (code) => resolve(code === 0 ? null : 'the Vite build failed'));
  });
}

/** `tsc -b packages/sdk packages/cli` in a child process. @returns null, or why it failed */
function buildPackages() {
  return new Promise((resolve) => {
    let tsc;
    try {
      tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    } catch {
      return resolve('typescript is not installed');
    }
    const child = spawn(process.execPath, [tsc, '-b', 'packages/sdk', 'packages/cli'], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let stdout = '';
    child.stdout.on('data', (d) => void (stdout += d.toString()));
    child.once('error', (err) => resolve(err.message));
    child.once('exit', (code) =>
      resolve(code === 0 ? null : stdout.trim().split('\n')[0] || `tsc exited with ${code}`),
    );
  });
}

/**
 * The prepared data directory under the cache `loadConfig` resolves (only PGLITE_TEMPLATE_DIR is
 * read from this environment: the install's other variables are not the server's).
 * @returns its path, or null when PGLITE_TEMPLATE_DIR=off
 * @throws Error when it cannot be built
 */
async function prepareDataDir() {
  const { tsImport } = await import('tsx/esm/api');
  const { loadConfig } = await tsImport('../src/config.ts', import.meta.url);
  const { prepareTemplates } = await tsImport('../src/db/data-dir.ts', import.meta.url);
  const env =
    process.env.PGLITE_TEMPLATE_DIR === undefined ? {} : { PGLITE_TEMPLATE_DIR: process.env.PGLITE_TEMPLATE_DIR };
  const templates = loadConfig(env).pgliteTemplateDir;
  return templates ? await prepareTemplates(templates) : null;
}

if (!fs.existsSync(path.join(root, 'src', 'main.ts'))) {
  process.stdout.write('postinstall: no sources yet (src/main.ts): nothing to prepare\n');
} else {
  const t0 = performance.now();
  const [bundle, consoleBuild, prepared, packages] = await Promise.all([
    buildBundle(),
    // false: no console sources here (the image copies none).
    fs.existsSync(path.join(root, 'console', 'package.json')) ? buildConsoleDist() : false,
    prepareDataDir().then(
      (dir) => ({ dir }),
      (err) => ({ error: String(err?.message ?? err).split('\n')[0] }),
    ),
    // false: no workspace packages here (the image copies none).
    fs.existsSync(path.join(root, 'packages', 'cli', 'tsconfig.json')) ? buildPackages() : false,
  ]);
  const seconds = ((performance.now() - t0) / 1000).toFixed(1);
  if (bundle) process.stderr.write(`postinstall: could not build dist/ (${bundle}); npm start builds it\n`);
  if (consoleBuild)
    process.stderr.write(`postinstall: could not build console/dist (${consoleBuild}); npm start builds it\n`);
  if (packages)
    process.stderr.write(
      `postinstall: could not build the SDK and CLI (${packages}); \`npm run build:packages\` builds them\n`,
    );
  if (prepared.error)
    process.stderr.write(
      `postinstall: could not prepare the embedded database (${prepared.error}); a fresh start builds it (slower)\n`,
    );
  const done = [];
  if (!bundle) done.push('dist/');
  if (consoleBuild === null) done.push('console/dist');
  if (packages === null) done.push('packages/sdk and packages/cli');
  if (prepared.dir) done.push(`the embedded database template ${prepared.dir}`);
  process.stdout.write(
    `postinstall: ${done.length ? `prepared ${done.join(', ')}` : 'nothing prepared'} in ${seconds} s\n`,
  );
  if (process.argv.includes('--strict') && (bundle || consoleBuild || prepared.error || packages)) process.exitCode = 1;
}
