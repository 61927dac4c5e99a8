/**
 * The house rules (STYLE.md): no hand-written file over 500 lines (the service, its tests,
 * benchmarks, scripts, the console, the SDK and CLI, examples), no import loop between files of
 * src/ or between its modules, no upward import from a lower layer. The file-level rules live in
 * `.dependency-cruiser.cjs`; the module-level loop check collapses the file graph to modules here.
 */
import fs from 'node:fs';
import path from 'node:path';
import { cruise, type ICruiseResult } from 'dependency-cruiser';
import { beforeAll, describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const MAX_LINES = 500;
/** Where hand-written code lives; generated code (`packages/sdk/src/generated`, from /openapi.json) and builds are not counted. */
const CODE_ROOTS = [
  'src',
  'test',
  'bench',
  'scripts',
  'examples',
  'console/src',
  'packages/sdk/src',
  'packages/cli/src',
];
const NOT_HAND_WRITTEN = new Set(['node_modules', 'dist', 'generated']);

/** The code files (`.ts`, `.tsx`, `.js`, `.mjs`, `.cjs`) under `dir`. */
function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return NOT_HAND_WRITTEN.has(e.name) ? [] : sourceFiles(p);
    return /\.(?:tsx?|[cm]?js)$/.test(e.name) ? [p] : [];
  });
}

/** `src/modules/<name>/…` → `<name>`; anything else → null. */
function moduleOf(file: string): string | null {
  return /^src\/modules\/([^/]+)\//.exec(file)?.[1] ?? null;
}

/** Strongly connected components with more than one node (Tarjan). */
function loops(graph: Map<string, Set<string>>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1) out.push(scc.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return out;
}

describe('house rules', () => {
  let result: ICruiseResult;
  beforeAll(async () => {
    const config = (await import(path.join(root, '.dependency-cruiser.cjs'))).default;
    const prev = process.cwd();
    process.chdir(root);
    try {
      result = (await cruise(['src'], { ...config.options, validate: true, ruleSet: { forbidden: config.forbidden } }))
        .output as ICruiseResult;
    } finally {
      process.chdir(prev);
    }
  }, 120_000);

  it(`has no file over ${MAX_LINES} lines`, () => {
    const files = CODE_ROOTS.flatMap((dir) => sourceFiles(path.join(root, dir)));
    expect(files.length).toBeGreaterThan(400);
    const long = files
      .map((f) => ({ file: path.relative(root, f), lines: fs.readFileSync(f, 'utf8').split('\n').length - 1 }))
      .filter((f) => f.lines > MAX_LINES);
    expect(long).toEqual([]);
  });

  it('has no import loop between files and no upward import (.dependency-cruiser.cjs)', () => {
    const violations = result.summary.violations
      .filter((v) => v.rule.severity === 'error')
      .map((v) => `${v.rule.name}: ${v.from} → ${v.cycle?.length ? v.cycle.map((c) => c.name).join(' → ') : v.to}`);
    expect(violations).toEqual([]);
  });

  it('has no import loop between modules', () => {
    const graph = new Map<string, Set<string>>();
    for (const m of result.modules) {
      const from = moduleOf(m.source);
      if (!from) continue;
      if (!graph.has(from)) graph.set(from, new Set());
      for (const d of m.dependencies) {
        const to = moduleOf(d.resolved);
        if (to && to !== from) graph.get(from)!.add(to);
      }
    }
    expect(graph.size).toBeGreaterThan(10); // the cruise really saw the modules
    expect(loops(graph)).toEqual([]);
  });
});
