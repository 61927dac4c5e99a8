/**
 * Tool search ranked over the in-process index (`tool-index.ts`): the candidate and relevance
 * stages of the registry's SQL ranking (`searchCatalogTools` with term groups, whose comments give
 * the reasons), step by step in the same arithmetic, so both answer alike. Only the page's tools are
 * then read from the database ({@link catalogToolPage}).
 */
import {
  FUZZY_THRESHOLD,
  MAX_CANDIDATES,
  PRESCORED,
  PRESCORED_NAMES,
  queryTerms,
  type CatalogToolQuery,
  type RankedCandidate,
  type TermGroup,
} from '../registry/catalog.js';
import { docHas, trigramQuery, tsRankOr, uniqueOperands, wordSimilarity, type Operand } from '../../lib/pg-text.js';
import type { IndexedService, IndexedTool, ToolIndex } from './tool-index.js';

/** `ts_rank` weights {D, C, B, A} as float4 (`RANK_WEIGHTS`). */
const WEIGHTS = [0.05, 0.15, 0.4, 1.0].map(Math.fround);

/** One term group as the index matches it: its operands (normalised, stop words gone) and weight. */
interface Group {
  ops: Operand[];
  unique: Operand[];
  weight: number;
  /** Slots of the tools holding one of its operands anywhere, and in the name. */
  slots: Set<number>;
  slotsA: Set<number>;
}

/** Slots of the tools holding a lexeme `op` matches (`postings` of the index). */
function slotsOf(idx: ToolIndex, postings: Map<string, number[]>, ops: Operand[]): Set<number> {
  const out = new Set<number>();
  for (const op of ops) {
    if (!op.prefix) {
      for (const s of postings.get(op.lex) ?? []) out.add(s);
      continue;
    }
    let lo = 0;
    let hi = idx.lexemes.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (idx.lexemes[mid] < op.lex) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < idx.lexemes.length && idx.lexemes[i].startsWith(op.lex); i++)
      for (const s of postings.get(idx.lexemes[i]) ?? []) out.add(s);
  }
  return out;
}

/** True when the service passes the query's visibility and filters (`toolFilters`). */
function passes(s: IndexedService, accountId: string | null, input: CatalogToolQuery): boolean {
  if (s.status !== 'published' && (!accountId || s.ownerId !== accountId)) return false;
  if (input.category && s.category !== input.category) return false;
  if (input.tag && !s.tags.includes(input.tag.toLowerCase())) return false;
  if (input.service && (input.service.startsWith('svc_') ? s.id !== input.service : s.name !== input.service))
    return false;
  return true;
}

/** Comparator: `score` descending, then id descending (the SQL's `order by …, id desc`). */
function byDesc<T extends { id: string }>(score: (x: T) => number): (a: T, b: T) => number {
  return (a, b) => score(b) - score(a) || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);
}

/**
 * Candidates of a tool search with term groups and their relevance parts, best first (at most
 * {@link MAX_CANDIDATES}), and how many tools matched — as the SQL ranking computes them.
 * `lexemes`: each group word's `english` lexemes. Null when a word does not normalise to one
 * lexeme or none (a query the index does not model: SQL ranks it).
 */
export function rankFromIndex(
  idx: ToolIndex,
  accountId: string | null,
  input: CatalogToolQuery & { groups: TermGroup[] },
  fuzzy: boolean,
  lexemes: Map<string, string[]>,
): { ranked: RankedCandidate[]; found: number } | null {
  const raw = (input.q ?? '').trim().toLowerCase().slice(0, 200);
  const terms = queryTerms(raw);
  const anyMode = input.mode === 'any';
  const groups: Group[] = [];
  for (const g of input.groups.filter((x) => x.words.length > 0)) {
    const ops: Operand[] = [];
    for (const [j, word] of g.words.entries()) {
      const lex = lexemes.get(word.replace(/[^\p{L}\p{N}]/gu, ''));
      if (!lex || lex.length > 1) return null;
      if (lex.length) ops.push({ lex: lex[0], prefix: j === 0 && g.prefix });
    }
    groups.push({
      ops,
      unique: uniqueOperands(ops),
      weight: g.weight,
      slots: slotsOf(idx, idx.postings, ops),
      slotsA: slotsOf(idx, idx.postingsA, ops),
    });
  }
  const weightSum = groups.reduce((n, g) => n + g.weight, 0) || 1;
  // Groups of stop words only drop out of the whole query (as `to_tsquery` cleans them out); none left: no text query.
  const live = groups.filter((g) => g.ops.length);
  const hasQuery = live.length > 0;
  const docMatches = (doc: IndexedTool['doc'], g: Group) => g.ops.some((op) => docHas(doc, op));
  const serviceMatches = (s: IndexedService, all: boolean) =>
    hasQuery && (all || !anyMode ? live.every((g) => docMatches(s.doc, g)) : live.some((g) => docMatches(s.doc, g)));
  let toolQuery = new Set<number>();
  if (hasQuery) {
    if (anyMode) for (const g of live) for (const s of g.slots) toolQuery.add(s);
    else {
      const [first, ...rest] = [...live].sort((a, b) => a.slots.size - b.slots.size);
      toolQuery = new Set([...first.slots].filter((s) => rest.every((g) => g.slots.has(s))));
    }
  }

  // Visible services passing the filters: tag and text matches, fuzzy service names.
  const tq = trigramQuery(raw);
  const like = (s: string) => s.includes(raw);
  const vs = new Map<IndexedService, { stag: boolean; stxt: boolean; spre: number; matched: boolean; sim: number }>();
  for (const s of idx.services.values()) {
    if (!passes(s, accountId, input)) continue;
    const stag = terms.length > 0 && s.tags.some((t) => terms.includes(t));
    const sim = fuzzy ? wordSimilarity(tq, s.strgmTrigrams) : 0;
    const fuzzyName = fuzzy ? sim >= FUZZY_THRESHOLD : like(s.strgm);
    const matched = serviceMatches(s, true) || (terms.length > 0 && !anyMode && stag) || fuzzyName;
    const spre = groups.reduce((n, g) => n + g.weight * Number(docMatches(s.doc, g)), 0);
    vs.set(s, { stag, stxt: serviceMatches(s, false), spre, matched, sim });
  }

  // Text candidates and their pre-score; fuzzy name candidates and their similarity.
  const pre = new Map<number, number>();
  const addPre = (slot: number) => {
    if (pre.has(slot)) return;
    const t = idx.tools[slot];
    const v = vs.get(t.service);
    if (!v) return;
    const pt = groups.reduce((n, g) => n + g.weight * (g.slots.has(slot) ? (g.slotsA.has(slot) ? 1 : 0.4) : 0), 0);
    pre.set(slot, pt + 0.4 * v.spre + (v.stag ? 0.1 : 0));
  };
  for (const slot of toolQuery) addPre(slot);
  for (const [s, v] of vs) if (v.matched) for (const t of s.tools) addPre(idx.slotOf.get(t.id)!);
  const named = new Map<number, number>();
  // Word similarity of the query to each distinct tool name, computed once (mirrors share names).
  const nameSim = fuzzy ? idx.names.matches(tq, FUZZY_THRESHOLD) : new Map<number, number>();
  const simOfName = (n: number) =>
    nameSim.get(n) ?? (nameSim.set(n, wordSimilarity(tq, idx.names.texts[n])), nameSim.get(n)!);
  if (fuzzy) {
    for (const [n, ws] of nameSim)
      for (const slot of idx.nameSlots[n]) if (vs.has(idx.tools[slot].service)) named.set(slot, ws);
  } else {
    idx.tools.forEach((t, slot) => {
      if (vs.has(t.service) && (like(t.ttrgm) || like(t.lname))) named.set(slot, 0);
    });
  }
  const found = new Set([...pre.keys(), ...named.keys()]).size;
  const window = input.offset + input.limit;
  const idOf = (slot: number) => ({ id: idx.tools[slot].id, slot });
  const best = [...pre.keys()]
    .map(idOf)
    .sort(byDesc((x) => pre.get(x.slot)!))
    .slice(0, PRESCORED * Math.ceil(window / PRESCORED));
  const bestNames = [...named.keys()].map(idOf).sort(byDesc((x) => named.get(x.slot)!));
  const cand = new Set(
    [...best, ...(fuzzy ? bestNames.slice(0, PRESCORED_NAMES * Math.ceil(window / PRESCORED_NAMES)) : bestNames)].map(
      (x) => x.slot,
    ),
  );

  // Full relevance of the candidates.
  const ranked: RankedCandidate[] = [];
  for (const slot of cand) {
    const t = idx.tools[slot];
    const v = vs.get(t.service)!;
    const txt = hasQuery && (toolQuery.has(slot) || v.stxt);
    const fts = txt
      ? groups.reduce((n, g) => n + g.weight * tsRankOr(WEIGHTS, t.doc, t.service.doc, g.unique), 0) / weightSum
      : 0;
    const fz = fuzzy
      ? Math.max(simOfName(idx.nameOf[slot]), 0.6 * v.sim)
      : like(t.ttrgm) || like(t.lname)
        ? 0.5
        : like(t.service.strgm)
          ? 0.3
          : 0;
    let coverage = 0;
    if (hasQuery) {
      const inName = groups.map((g) => Number(g.ops.some((op) => docHas(t.doc, op, true))));
      const weighted = groups.reduce((n, g, i) => n + g.weight * inName[i], 0);
      const hits = inName.reduce((n, x) => n + x, 0);
      coverage = (weighted / weightSum) * (0.5 + 0.5 * Math.min(1, hits / Math.max(t.nameLexemes, 1)));
    }
    const bonus = (t.lname === raw || t.ttrgm === raw ? 0.5 : 0) + (v.stag ? 0.1 : 0) + 0.6 * coverage;
    ranked.push({ id: t.id, fts, fz, bonus });
  }
  ranked.sort(byDesc((r) => r.fts + r.fz + r.bonus));
  return { ranked: ranked.slice(0, MAX_CANDIDATES), found };
}
