#!/usr/bin/env node
// The `agent-platform` command. npm links a package's bins when it installs it, and only to files
// that exist then: pointing `bin` at dist/index.js left a fresh clone without the command
// ("could not determine executable to run") because dist/ is built later. This launcher is
// committed, so the link always exists; it runs the compiled CLI in dist/, and in a source checkout
// where dist/ is missing (install with --ignore-scripts, or a cleaned tree) it compiles the SDK and
// the CLI once with the workspace's TypeScript (`tsc -b`, incremental) and then runs it.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const cliDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const entry = path.join(cliDir, 'dist', 'index.js');
const sdkDir = path.resolve(cliDir, '..', 'sdk');

if (!fs.existsSync(entry) || !fs.existsSync(path.join(sdkDir, 'dist', 'index.js'))) {
  let tsc;
  try {
    tsc = createRequire(path.join(cliDir, 'package.json')).resolve('typescript/bin/tsc');
  } catch {
    tsc = null;
  }
  if (
    !tsc ||
    !fs.existsSync(path.join(cliDir, 'src', 'index.ts')) ||
    !fs.existsSync(path.join(sdkDir, 'tsconfig.json'))
  ) {
    process.stderr.write(
      `agent-platform: the CLI is not built (${entry} is missing). Run \`npm run build:packages\` in the repository.\n`,
    );
    process.exit(1);
  }
  process.stderr.write('agent-platform: building the SDK and the CLI once (tsc -b)…\n');
  try {
    execFileSync(process.execPath, [tsc, '-b', sdkDir, cliDir], { stdio: ['ignore', 'inherit', 'inherit'] });
  } catch {
    process.stderr.write('agent-platform: the build failed (above); fix it or run `npm run build:packages`.\n');
    process.exit(1);
  }
}

await import(pathToFileURL(entry).href);
