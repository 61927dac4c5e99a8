#!/usr/bin/env node
// Checks that the documentation keeps up with the code (run by test/platform/docs.test.ts, or by hand:
// `node scripts/check-docs.mjs`): every decision record docs/adr/NNNN-*.md is listed in the index
// docs/adr/README.md (and every record the index lists exists), and every environment variable that
// src/config.ts or src/config-memory.ts reads is documented in docs/configuration.md, and every
// relative link of README.md and docs/**/*.md points at a file that exists.
// Prints one line per problem and exits 1 when there is any. `--fix-index` first appends the records
// the index misses to its "Later records" section (title from each record's first heading).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const read = (p) => fs.readFileSync(path.join(root, p), 'utf8');

/** Problems found, one sentence each. */
export function checkDocs() {
  const problems = [];
  const records = fs.readdirSync(path.join(root, 'docs/adr')).filter((f) => /^\d{4}-[a-z0-9-]+\.md$/.test(f));
  const index = read('docs/adr/README.md');
  const linked = new Set([...index.matchAll(/\]\((\d{4}-[a-z0-9-]+\.md)\)/g)].map((m) => m[1]));
  for (const f of records) if (!linked.has(f)) problems.push(`docs/adr/${f} is not listed in docs/adr/README.md`);
  for (const f of linked)
    if (!records.includes(f)) problems.push(`docs/adr/README.md lists ${f}, which does not exist`);
  const numbers = new Map();
  for (const f of records) {
    const n = f.slice(0, 4);
    if (numbers.has(n)) problems.push(`docs/adr/${f} and ${numbers.get(n)} share the number ${n}`);
    numbers.set(n, f);
  }
  const configuration = read('docs/configuration.md');
  const sources = ['src/config.ts', 'src/config-memory.ts'].map(read).join('\n');
  // Variables are read as `parser(env, 'NAME', …)` or `str(env, 'NAME')`.
  const names = new Set([...sources.matchAll(/\(env, '([A-Z][A-Z0-9_]+)'/g)].map((m) => m[1]));
  for (const n of names)
    if (!configuration.includes(`\`${n}\``))
      problems.push(`${n} (read in src/config*.ts) is not documented in docs/configuration.md`);
  for (const doc of ['README.md', ...markdownUnder('docs')]) {
    const text = read(doc);
    for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1].split('#')[0];
      if (!target || /^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // an anchor in the same file, or a URL
      if (!fs.existsSync(path.resolve(root, path.dirname(doc), decodeURI(target))))
        problems.push(`${doc} links to ${m[1]}, which does not exist`);
    }
  }
  return problems;
}

/** Markdown files under `dir` (relative to the repository), recursively. */
function markdownUnder(dir) {
  return fs.readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) return markdownUnder(rel);
    return e.name.endsWith('.md') ? [rel] : [];
  });
}

/** Append the records docs/adr/README.md does not list to its last section; returns their file names. */
export function fixIndex() {
  const file = path.join(root, 'docs/adr/README.md');
  const index = fs.readFileSync(file, 'utf8');
  const missing = fs
    .readdirSync(path.join(root, 'docs/adr'))
    .filter((f) => /^\d{4}-[a-z0-9-]+\.md$/.test(f) && !index.includes(`](${f})`))
    .sort();
  if (!missing.length) return missing;
  const lines = missing.map((f) => {
    const heading = fs
      .readFileSync(path.join(root, 'docs/adr', f), 'utf8')
      .split('\n')[0]
      .replace(/^#+\s*/, '')
      .replace(/^\d{4}[.:]?\s*/, '');
    return `- [${f.slice(0, 4)}](${f}) ${heading}`;
  });
  fs.writeFileSync(file, `${index.replace(/\n*$/, '\n')}${lines.join('\n')}\n`);
  return missing;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--fix-index'))
    for (const f of fixIndex()) console.log(`listed ${f} in docs/adr/README.md`);
  const problems = checkDocs();
  for (const p of problems) console.log(p);
  process.exit(problems.length ? 1 : 0);
}
