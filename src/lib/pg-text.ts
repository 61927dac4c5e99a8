/**
 * PostgreSQL's text-search and trigram arithmetic, in process, for the in-process indexes of tool
 * search (`modules/search/tool-index.ts`) and memory search (`modules/memory/text-index.ts`): the
 * same answers their SQL rankings get from the database, computed over documents read once from it.
 *
 * - {@link parseTsvector}: a `tsvector`'s text form (`'lexeme':1A,5B …`) → sorted lexemes with their
 *   positions and weights; lexemes are PostgreSQL's own (the stored `search_doc` columns), so no
 *   stemmer of ours is involved.
 * - {@link tsRankOr}: `ts_rank(weights, a || b, q)` for a query of OR-ed operands (a term group), the
 *   concatenation done on the fly — `calc_rank_or` of `src/backend/utils/adt/tsrank.c`, in float4
 *   arithmetic (`Math.fround`) as there.
 * - {@link wordSimilarity}: pg_trgm's `word_similarity(a, b)` (`calc_word_similarity` and
 *   `iterate_word_similarity` of `contrib/pg_trgm/trgm_op.c`): the best similarity of `a`'s trigrams
 *   to a contiguous extent of `b`'s; {@link TrigramIndex} finds the strings that may reach a
 *   threshold without computing it for every one.
 */

/** A parsed `tsvector`: lexemes in PostgreSQL's order, each with its positions (`pos << 2 | weight`, weight 3 = A … 0 = D). */
export interface Doc {
  lex: string[];
  pos: number[][];
  /** Largest position (what `||` shifts the right operand by). */
  maxpos: number;
}

const WEIGHT_OF: Record<string, number> = { A: 3, B: 2, C: 1, D: 0 };
/** Positions kept per lexeme (`MAXNUMPOS`) and the largest position (`MAXENTRYPOS - 1`). */
const MAXNUMPOS = 256;
const MAXPOS = 16383;

/** Parse a `tsvector`'s text output (`'it''s':1A,2 'word':3B`). Lexemes come sorted as PostgreSQL stores them. */
export function parseTsvector(text: string, intern?: (s: string) => string): Doc {
  const lex: string[] = [];
  const pos: number[][] = [];
  let maxpos = 0;
  let i = 0;
  while (i < text.length) {
    if (text[i] !== "'") {
      i++;
      continue;
    }
    let word = '';
    for (i++; i < text.length; i++) {
      const c = text[i];
      if (c === "'" && text[i + 1] === "'") word += text[++i];
      else if (c === '\\') word += text[++i];
      else if (c === "'") break;
      else word += c;
    }
    i++;
    const p: number[] = [];
    if (text[i] === ':') {
      i++;
      for (;;) {
        let n = 0;
        while (i < text.length && text[i] >= '0' && text[i] <= '9') n = n * 10 + (text.charCodeAt(i++) - 48);
        const w = WEIGHT_OF[text[i]];
        if (w !== undefined) i++;
        p.push((n << 2) | (w ?? 0));
        if (n > maxpos) maxpos = n;
        if (text[i] !== ',') break;
        i++;
      }
    }
    lex.push(intern ? intern(word) : word);
    pos.push(p);
  }
  return { lex, pos, maxpos };
}

/** Index of the first string of the sorted `list` not before `s` (binary search, code-unit order). */
export function lowerBound(list: readonly string[], s: string): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (list[mid] < s) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** One query operand: a normalised lexeme, matched exactly or as a prefix. */
export interface Operand {
  lex: string;
  prefix: boolean;
}

/** Indexes in `doc` of the lexemes `op` matches (in lexeme order). */
export function matchesOf(doc: Doc, op: Operand): number[] {
  const out: number[] = [];
  let i = lowerBound(doc.lex, op.lex);
  if (!op.prefix) return i < doc.lex.length && doc.lex[i] === op.lex ? [i] : out;
  for (; i < doc.lex.length && doc.lex[i].startsWith(op.lex); i++) out.push(i);
  return out;
}

/** True when `doc` holds a lexeme `op` matches (with `weightA`: one with a weight-A position). */
export function docHas(doc: Doc, op: Operand, weightA = false): boolean {
  for (const i of matchesOf(doc, op)) if (!weightA || doc.pos[i].some((p) => (p & 3) === 3)) return true;
  return false;
}

/** Lexemes of `doc` with a weight-A position (`length(ts_filter(doc, '{a}'))`). */
export function weightALexemes(doc: Doc): number {
  let n = 0;
  for (const p of doc.pos) if (p.some((x) => (x & 3) === 3)) n++;
  return n;
}

/** Positions of the lexeme `lex` in `a || b` (b shifted by a's largest position, at most MAXNUMPOS), from their indexes (-1: absent). */
function concatPositions(a: Doc, ia: number, b: Doc, ib: number): number[] {
  const left = ia >= 0 ? a.pos[ia] : [];
  if (ib < 0) return left;
  const out = left.slice(0, MAXNUMPOS);
  for (const p of b.pos[ib]) {
    if (out.length >= MAXNUMPOS || (out.length && out[out.length - 1] >> 2 === MAXPOS)) break;
    out.push((Math.min((p >> 2) + a.maxpos, MAXPOS) << 2) | (p & 3));
  }
  return out;
}

const f = Math.fround;

/** PostgreSQL's default `ts_rank` weights of D, C, B, A (float4, as in tsrank.c). */
export const DEFAULT_RANK_WEIGHTS: readonly number[] = [0.1, 0.2, 0.4, 1.0].map(Math.fround);

/**
 * One matching lexeme's share of `calc_rank_or` (tsrank.c): over its positions (`pos << 2 | weight`,
 * weight 0 = D … 3 = A) `resj = Σ w_j / (j+1)²` and `wjm`, `jm` = the largest weight and its index,
 * in float4; then `(wjm + resj − wjm / (jm+1)²) / 1.64493406685` (π²/6, a double). A lexeme without
 * positions (a stripped tsvector) counts as one D position, as PostgreSQL's `POSNULL` does.
 * `weights` = {D, C, B, A} as float4.
 */
export function rankOrTerm(weights: readonly number[], positions: readonly number[]): number {
  const post = positions.length ? positions : NO_POSITIONS;
  let resj = 0;
  let wjm = -1;
  let jm = 0;
  for (let j = 0; j < post.length; j++) {
    const w = weights[post[j] & 3];
    resj = f(resj + f(w / ((j + 1) * (j + 1))));
    if (w > wjm) {
      wjm = w;
      jm = j;
    }
  }
  return f(f(wjm + resj) - f(wjm / ((jm + 1) * (jm + 1)))) / 1.64493406685;
}
const NO_POSITIONS: readonly number[] = [0];

/**
 * `ts_rank(weights, a || b, q)` for `q` = the OR of `ops` (PostgreSQL's `calc_rank_or`): per
 * distinct operand and matching lexeme, the position weights summed with 1/j² decay, normalised by
 * π²/6, averaged over the operands. `weights` = {D, C, B, A} as float4. `b` may be null.
 */
export function tsRankOr(weights: readonly number[], a: Doc, b: Doc | null, ops: readonly Operand[]): number {
  if (!ops.length || (!a.lex.length && !b?.lex.length)) return 0;
  let res = 0;
  for (const op of ops) {
    // Matching lexemes of the concatenation, in lexeme order: merge both documents' matches.
    const ma = matchesOf(a, op);
    const mb = b ? matchesOf(b, op) : [];
    let x = 0;
    let y = 0;
    while (x < ma.length || y < mb.length) {
      let ia = -1;
      let ib = -1;
      if (y >= mb.length || (x < ma.length && a.lex[ma[x]] <= b!.lex[mb[y]])) {
        ia = ma[x++];
        if (y < mb.length && b!.lex[mb[y]] === a.lex[ia]) ib = mb[y++];
      } else ib = mb[y++];
      const post = b && ib >= 0 ? concatPositions(a, ia, b, ib) : a.pos[ia];
      res = f(res + rankOrTerm(weights, post));
    }
  }
  return f(res / ops.length);
}

/**
 * Distinct operands of an OR query in PostgreSQL's order (`SortAndUniqItems`: by lexeme). Of two
 * equal lexemes (`'repo':* | 'repo'`) the one written last is kept: the query stores its operands
 * right to left and the sort keeps their order (checked against PostgreSQL 15: `('repos':* |
 * 'repo')` ranks as `'repo'`, `('repo' | 'repos':*)` as `'repo':*`).
 */
export function uniqueOperands(ops: readonly Operand[]): Operand[] {
  const sorted = [...ops].reverse().sort((x, y) => (x.lex < y.lex ? -1 : x.lex > y.lex ? 1 : 0));
  return sorted.filter((o, i) => i === 0 || o.lex !== sorted[i - 1].lex);
}

// ------------------------------------------------------------------ trigrams (pg_trgm)

const WORD = /[\p{L}\p{N}]+/gu;

/** pg_trgm's trigrams of `s` in order (not unique): each word lower-cased, padded `"  word "`. */
export function trigramsOf(s: string): string[] {
  const out: string[] = [];
  for (const m of s.matchAll(WORD)) {
    const chars = [' ', ' ', ...m[0].toLowerCase(), ' '];
    for (let i = 0; i + 2 < chars.length; i++) out.push(chars[i] + chars[i + 1] + chars[i + 2]);
  }
  return out;
}

/** A query's trigrams, prepared once for many {@link wordSimilarity} calls. */
export interface TrigramQuery {
  /** Trigram → id (0 … ulen1 − 1) for the query's distinct trigrams. */
  ids: Map<string, number>;
  ulen1: number;
}

export function trigramQuery(s: string): TrigramQuery {
  const ids = new Map<string, number>();
  for (const t of trigramsOf(s)) if (!ids.has(t)) ids.set(t, ids.size);
  return { ids, ulen1: ids.size };
}

/** A text's trigrams, prepared once: its distinct trigrams and the sequence of their numbers. */
export interface TrigramText {
  distinct: string[];
  seq: Uint16Array;
}

export function trigramText(s: string): TrigramText {
  const number = new Map<string, number>();
  const tg = trigramsOf(s).slice(0, 65535);
  const seq = new Uint16Array(tg.length);
  tg.forEach((t, i) => {
    let n = number.get(t);
    if (n === undefined) number.set(t, (n = number.size));
    seq[i] = n;
  });
  return { distinct: [...number.keys()], seq };
}

/** `count / (len1 + len2 − count)` in float4 (`CALCSML`). */
function calcsml(count: number, len1: number, len2: number): number {
  return f(count / (len1 + len2 - count));
}

/**
 * `word_similarity(query, text)` of pg_trgm: the greatest similarity between the query's trigram
 * set and a contiguous extent of the text's trigrams (float4).
 */
export function wordSimilarity(q: TrigramQuery, text: TrigramText): number {
  const ulen1 = q.ulen1;
  const n = text.seq.length;
  if (!ulen1 || !n) return 0;
  // Ids: the query's trigrams keep theirs (found), the text's others come after them.
  const mapped = new Int32Array(text.distinct.length);
  let any = false;
  text.distinct.forEach((t, j) => {
    const id = q.ids.get(t);
    mapped[j] = id ?? ulen1 + j;
    if (id !== undefined) any = true;
  });
  if (!any) return 0;
  const lastpos = new Int32Array(ulen1 + text.distinct.length).fill(-1);
  const idAt = (i: number) => mapped[text.seq[i]];
  let ulen2 = 0;
  let count = 0;
  let upper = -1;
  let lower = -1;
  let max = 0;
  for (let i = 0; i < n; i++) {
    const ti = idAt(i);
    const found = ti < ulen1;
    if (lower >= 0 || found) {
      if (lastpos[ti] < 0) {
        ulen2++;
        if (found) count++;
      }
      lastpos[ti] = i;
    }
    if (!found) continue;
    upper = i;
    if (lower === -1) {
      lower = i;
      ulen2 = 1;
    }
    let cur = calcsml(count, ulen1, ulen2);
    let tmpCount = count;
    let tmpUlen2 = ulen2;
    const prevLower = lower;
    for (let tl = lower; tl <= upper; tl++) {
      const sm = calcsml(tmpCount, ulen1, tmpUlen2);
      if (sm > cur) {
        cur = sm;
        ulen2 = tmpUlen2;
        lower = tl;
        count = tmpCount;
      }
      const t = idAt(tl);
      if (lastpos[t] === tl) {
        tmpUlen2--;
        if (t < ulen1) tmpCount--;
      }
    }
    if (cur > max) max = cur;
    for (let tl = prevLower; tl < lower; tl++) {
      const t = idAt(tl);
      if (lastpos[t] === tl) lastpos[t] = -1;
    }
  }
  return max;
}

/**
 * Strings by their trigrams, to find those whose {@link wordSimilarity} to a query may reach a
 * threshold: a string sharing `c` distinct trigrams with the query scores at most `c / ulen1`, so
 * only strings sharing at least `threshold × ulen1` are scored.
 */
export class TrigramIndex {
  private readonly postings = new Map<string, number[]>();
  /** Each string's trigrams, by string number. */
  readonly texts: TrigramText[] = [];

  /** Add a string; returns its number. */
  add(s: string): number {
    const n = this.texts.length;
    const text = trigramText(s);
    this.texts.push(text);
    for (const t of text.distinct) {
      const list = this.postings.get(t);
      if (list) list.push(n);
      else this.postings.set(t, [n]);
    }
    return n;
  }

  /** Numbers of the strings whose word similarity to `q` is at least `threshold`, with it. */
  matches(q: TrigramQuery, threshold: number): Map<number, number> {
    const shared = new Map<number, number>();
    for (const t of q.ids.keys()) for (const n of this.postings.get(t) ?? []) shared.set(n, (shared.get(n) ?? 0) + 1);
    const out = new Map<number, number>();
    const need = threshold * q.ulen1;
    for (const [n, c] of shared) {
      if (c < need - 1e-9) continue;
      const s = wordSimilarity(q, this.texts[n]);
      if (s >= threshold) out.set(n, s);
    }
    return out;
  }
}
