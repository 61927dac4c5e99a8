/**
 * Summarise a V8 CPU profile (`--cpu-prof`, e.g. `bench:execute` with BENCH_PROFILE=<dir>) by self
 * time: the top functions and the top packages / source areas, as shares of the busy samples (idle,
 * program and GC reported apart). `npx tsx bench/profile-summary.ts <file.cpuprofile> [top=25]`.
 */
import fs from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
const file = process.argv[2];
if (!file) {
  console.error('usage: profile-summary <file.cpuprofile> [top]');
  process.exit(2);
}
const top = Number(process.argv[3] ?? 25);
const prof = JSON.parse(fs.readFileSync(file, 'utf8')) as { nodes: Node[]; samples: number[]; timeDeltas: number[] };
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const self = new Map<number, number>();
prof.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + Math.max(0, prof.timeDeltas[i] ?? 0)));

/** Where a frame's code lives: a package under node_modules, node's internals, or a source area of this repo. */
function area(url: string, fn: string): string {
  if (!url) return fn.startsWith('(') ? fn : '(native)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 13).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  if (url.startsWith('node:')) return url.split('/')[0];
  const src = url.indexOf('/src/');
  if (src >= 0)
    return url
      .slice(src + 1)
      .split('/')
      .slice(0, 3)
      .join('/');
  return url.split('/').slice(-2).join('/');
}

let total = 0;
const special = new Map<string, number>();
const fns = new Map<string, number>();
const areas = new Map<string, number>();
for (const [id, us] of self) {
  const n = byId.get(id)!;
  const { functionName: fn, url, lineNumber } = n.callFrame;
  if (fn === '(idle)' || fn === '(program)' || fn === '(garbage collector)') {
    special.set(fn, (special.get(fn) ?? 0) + us);
    if (fn === '(idle)') continue;
  }
  total += us;
  const a = area(url, fn);
  const key = `${fn || '(anonymous)'} ${a}${url ? `:${lineNumber + 1}` : ''}`;
  fns.set(key, (fns.get(key) ?? 0) + us);
  areas.set(a, (areas.get(a) ?? 0) + us);
}
const pct = (us: number) => `${((100 * us) / Math.max(1, total)).toFixed(1).padStart(5)} %`;
const show = (title: string, m: Map<string, number>) => {
  console.log(`\n${title}`);
  for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(`${pct(us)}  ${(us / 1000).toFixed(0).padStart(7)} ms  ${k}`);
};
console.log(
  `busy ${(total / 1000).toFixed(0)} ms (idle ${((special.get('(idle)') ?? 0) / 1000).toFixed(0)} ms, program ${pct(special.get('(program)') ?? 0)}, GC ${pct(special.get('(garbage collector)') ?? 0)})`,
);
show('self time by package / source area', areas);
show('self time by function', fns);
