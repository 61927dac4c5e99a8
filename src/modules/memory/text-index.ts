/**
 * The full-text arm of memory search in process, on the embedded engine: for each
 * searching user, an inverted index of the lexemes of their memories' `content_tsv` (PostgreSQL's
 * own English stemming, read from the table — no second tokenizer), scored exactly as the SQL arm
 * scores (store.ts `fusedCandidates`): Σ IDF of the query terms a memory holds (the 6-decimal weights
 * of `termWeights`, summed as integers of millionths, as the SQL sums numeric literals), `ts_rank`
 * breaking ties (PostgreSQL's `calc_rank_or` with its default weights, emulated in single precision
 * in the order PostgreSQL adds — {@link postingContribution}), then the id, descending.
 *
 * Why: on PGlite the SQL arm's cost is reading the tsvector of every memory that holds any query term
 * (thousands at 10k memories for a question with one common word), in WebAssembly on the request
 * thread; here the same answer costs one pass over the query terms' postings (docs/adr/0257-memory-text-index-on-pglite-the-full-text.md
 * memory/text-index). The index also knows each memory's session, speaker, time (`occurred_at`, else
 * `created_at`) and whether its content mentions a time, so the turn re-ranking (turns.ts) reads its
 * neighbouring turns and every fact it weighs from here, and a search reads only the rows it returns
 * (search-in-process.ts).
 *
 * Only on PGlite, for the same reason as vector-cache.ts: its data directory belongs to this process,
 * so every insert goes through `insertMemoryRows` (which appends here) and every delete through this
 * module (which tells the index). As a safety net, a search compares the index's count of the user's
 * memories with `memory_doc_counts` (read anyway for the IDF weights) and reloads when a second read
 * confirms a difference (a write may land between the two);
 * the fusion joins candidates back to `memories` under the caller's scope, so a stale entry can never
 * show a row. Only flat OR queries (what `orTsQuery` makes of plain words) are answered here; any
 * other shape (a phrase or AND operator, which the english configuration does not produce today) goes to SQL.
 *
 * Memory: postings of all users, least recently searched users evicted beyond
 * `TEXT_INDEX_MAX_POSTINGS`; nothing is held before a user's first search.
 */
import { sql } from 'drizzle-orm';
import { execRows, rawJsonObject, rawTimestamp, type Db, type Tx } from '../../db/client.js';
import { DEFAULT_RANK_WEIGHTS, lowerBound, parseTsvector, rankOrTerm } from '../../lib/pg-text.js';
import { rowFacts, type TurnFacts, type TurnSource } from './turn-facts.js';
import { UserEntries } from './user-entries.js';
import { kindCode } from './kinds.js';

/** Postings of one lexeme in one user's entry: row numbers and each row's `ts_rank` contribution. */
interface Postings {
  rows: number[];
  contrib: number[];
}

/** One user's index. */
interface Entry {
  ids: string[];
  agentIds: Array<string | null>;
  sessionIds: Array<string | null>;
  /** {@link TurnFacts} of each row: speaker, time (ms), whether the content mentions a time. */
  speakers: Array<string | null>;
  times: number[];
  timely: boolean[];
  /** {@link TurnFacts.asks} of each row. */
  asks: boolean[];
  alive: boolean[];
  /** {@link kindCode} of each row. */
  kinds: number[];
  rowOf: Map<string, number>;
  postings: Map<string, Postings>;
  /** Each stream's memory ids in id order ({@link streamOf}: neighbouring memories). */
  sessions: Map<string, string[]>;
  /** Live memories. */
  count: number;
  /** Postings held (eviction). */
  size: number;
  stale: boolean;
  loading: Promise<Entry> | null;
}

/** A query term as the text arm needs it: the lexeme and its IDF in millionths (`round(idf.toFixed(6) · 1e6)`). */
export interface TextTerm {
  lexeme: string;
  micro: number;
}

/** A full-text candidate, in the arm's order. */
export interface TextHit {
  id: string;
  /** Σ IDF of the query terms it holds, in millionths. */
  bm: number;
  /** `ts_rank(content_tsv, query)` as PostgreSQL computes it (a float4). */
  rk: number;
  /** 1-based position in the arm. */
  r: number;
  /** Fractional rank: memories of the arm with the same `bm` share the mean of their positions. */
  fr: number;
}

/** A memory row as {@link TextIndex.added} needs it. */
export interface IndexedRow extends TurnSource {
  id: string;
  userId: string;
  agentId: string | null;
  kind: string;
}

/**
 * The stream of a memory, whose adjacent memories are its neighbours in ranking (ranking.ts): its
 * session, or the memories without one; executions apart from the other kinds.
 */
function streamOf(sessionId: string | null, kind: number): string {
  return `${kind === EXECUTION ? 'x' : 'n'}:${sessionId ?? ''}`;
}

const EXECUTION = kindCode('execution');

/**
 * The `ts_rank` contribution of one lexeme's positions to a memory (`calc_rank_or`'s term with the
 * default weights, {@link rankOrTerm}); `positions` as {@link parseTsvector} gives them
 * (`pos << 2 | weight`); none → one D position.
 */
export function postingContribution(positions: readonly number[]): number {
  return rankOrTerm(DEFAULT_RANK_WEIGHTS, positions);
}

/**
 * The operands of a tsquery's text form when it is a flat disjunction of plain lexemes
 * (`'a' | 'b'`, what `orTsQuery` makes of words); `[]` for an empty query; null for any other shape
 * (phrase `<->`, `&`, `!`, parentheses, prefix `:*` or weights), which the SQL arm answers.
 */
export function flatOrOperands(tsquery: string): string[] | null {
  const out: string[] = [];
  let i = 0;
  const n = tsquery.length;
  if (!tsquery.trim()) return out;
  for (;;) {
    if (tsquery[i] !== "'") return null;
    let lexeme = '';
    i++;
    for (;;) {
      if (i >= n) return null;
      const c = tsquery[i];
      if ((c === "'" || c === '\\') && tsquery[i + 1] === c) {
        lexeme += c;
        i += 2;
      } else if (c === "'") {
        i++;
        break;
      } else if (c === '\\') {
        return null;
      } else {
        lexeme += c;
        i++;
      }
    }
    out.push(lexeme);
    if (i === n) return out;
    if (tsquery.slice(i, i + 3) !== ' | ') return null;
    i += 3;
  }
}

/** Most postings (lexeme occurrences in memories) kept for all users: ~32 MB of arrays (a row number and a double each). */
export const TEXT_INDEX_MAX_POSTINGS = 2_000_000;

/** Per-app in-process full-text index of searching users (`ctx.memory.text`). */
export class TextIndex extends UserEntries<Entry> {
  constructor(maxPostings = TEXT_INDEX_MAX_POSTINGS) {
    super(maxPostings);
  }

  /**
   * The `pool` best full-text matches of `userId` for a flat OR query, in the SQL arm's order
   * (Σ IDF desc, `ts_rank` desc, id desc), optionally only memories of `agentId`.
   * `terms`: the query terms with their weights (termWeights); `items`: the query's distinct
   * operands (the lexemes `ts_rank` iterates); `expectedCount`: the user's memories according to
   * `memory_doc_counts` — an entry holding another number is reloaded first.
   */
  async search(
    db: Db | Tx,
    userId: string,
    input: {
      terms: TextTerm[];
      items: string[];
      pool: number;
      agentId?: string | null;
      expectedCount: number;
      kinds?: number;
    },
  ): Promise<TextHit[]> {
    let e = await this.entry(db, userId);
    // a write may have landed since the count was read: ask again before reloading
    if (e.count !== input.expectedCount && e.count !== (await docCount(db, userId))) {
      this.forget(userId);
      e = await this.entry(db, userId);
    }
    const n = e.ids.length;
    const bm = new Float64Array(n);
    const res = new Float32Array(n); // every store rounds to single precision, as `res` in tsrank.c
    const touched: number[] = [];
    const seen = new Uint8Array(n);
    // ts_rank: the distinct operands in PostgreSQL's order (bytewise, shorter first), each adding
    // its contribution to the float accumulator in that order
    const items = [...new Set(input.items)].sort(compareBytes);
    const micro = new Map(input.terms.map((t) => [t.lexeme, t.micro]));
    for (const lexeme of items) {
      const p = e.postings.get(lexeme);
      if (!p) continue;
      for (let k = 0; k < p.rows.length; k++) {
        const r = p.rows[k];
        if (!seen[r]) {
          seen[r] = 1;
          touched.push(r);
        }
        res[r] = res[r] + p.contrib[k];
      }
    }
    // Σ IDF over the weighted terms (the same lexemes as the operands, but summed as SQL sums them)
    for (const [lexeme, w] of micro) {
      const p = e.postings.get(lexeme);
      if (!p) continue;
      for (const r of p.rows) if (seen[r]) bm[r] += w;
    }
    const size = items.length;
    const agent = input.agentId ?? null;
    const kinds = input.kinds ?? ~0;
    const eligible: number[] = [];
    for (const r of touched) {
      if (!e.alive[r] || (agent !== null && e.agentIds[r] !== agent) || !(kinds & (1 << e.kinds[r]))) continue;
      eligible.push(r);
    }
    // only rows whose Σ IDF reaches the pool-th best can be in the pool: a common term touches
    // thousands of rows, and sorting them all (objects, a three-key comparison) was most of the arm
    let cut = -Infinity;
    if (eligible.length > input.pool) {
      const scores = Float64Array.from(eligible, (r) => bm[r]).sort();
      cut = scores[eligible.length - input.pool];
    }
    const hits: Array<{ row: number; bm: number; rk: number }> = [];
    for (const r of eligible) if (bm[r] >= cut) hits.push({ row: r, bm: bm[r], rk: Math.fround(res[r] / size) });
    hits.sort((a, b) => b.bm - a.bm || b.rk - a.rk || compareIds(e.ids[b.row], e.ids[a.row]));
    const top = hits.slice(0, input.pool);
    const out: TextHit[] = [];
    for (let i = 0; i < top.length; ) {
      let j = i;
      while (j < top.length && top[j].bm === top[i].bm) j++;
      // positions i+1 … j share bm: rank() is i+1, the mean position i+1 + (j−i−1)/2
      for (let k = i; k < j; k++)
        out.push({ id: e.ids[top[k].row], bm: top[k].bm, rk: top[k].rk, r: k + 1, fr: i + 1 + (j - i - 1) / 2 });
      i = j;
    }
    return out;
  }

  /**
   * The memories before and after each of `ids` in its stream ({@link streamOf}: id order, all of the
   * user's memories of that stream), from a loaded entry; null when `userId` has none loaded (ask SQL instead).
   */
  neighbours(userId: string, ids: string[]): Map<string, { prev: string | null; next: string | null }> | null {
    const e = this.users.get(userId);
    if (!e || e.loading) return null;
    const out = new Map<string, { prev: string | null; next: string | null }>();
    for (const id of ids) {
      const r = e.rowOf.get(id);
      if (r === undefined || !e.alive[r]) continue;
      const list = e.sessions.get(streamOf(e.sessionIds[r], e.kinds[r]))!;
      const at = lowerBound(list, id);
      out.set(id, { prev: at > 0 ? list[at - 1] : null, next: at + 1 < list.length ? list[at + 1] : null });
    }
    return out;
  }

  /**
   * Σ IDF (in millionths, as {@link search} sums it) of `terms` in each of `ids` that the loaded
   * entry of `userId` holds alive (of `agentId` when given), with its facts; null when none is
   * loaded. For the neighbours a search ranks without their being candidates.
   */
  scoreRows(
    userId: string,
    terms: TextTerm[],
    ids: string[],
    agentId: string | null,
  ): Map<string, { micro: number; facts: TurnFacts }> | null {
    const e = this.users.get(userId);
    if (!e || e.loading) return null;
    const facts = this.facts(userId, ids)!;
    const out = new Map<string, { micro: number; facts: TurnFacts }>();
    for (const id of ids) {
      const r = e.rowOf.get(id);
      if (r === undefined || !facts.has(id) || (agentId !== null && e.agentIds[r] !== agentId)) continue;
      let micro = 0;
      for (const t of terms) {
        const p = e.postings.get(t.lexeme);
        if (p && p.rows[lowerBoundNum(p.rows, r)] === r) micro += t.micro;
      }
      out.set(id, { micro, facts: facts.get(id)! });
    }
    return out;
  }

  /**
   * The re-ranking's facts of `ids` (turns.ts {@link TurnFacts}) from a loaded entry of `userId`,
   * for the ids it holds alive: an id it does not hold, or holds deleted, is no memory of the user
   * any more (every insert is appended to a loaded entry, and a search reloads an entry whose count
   * differs from the table's); null when the user has no entry loaded (ask the rows instead).
   */
  facts(userId: string, ids: string[]): Map<string, TurnFacts> | null {
    const e = this.users.get(userId);
    if (!e || e.loading) return null;
    const out = new Map<string, TurnFacts>();
    for (const id of ids) {
      const r = e.rowOf.get(id);
      if (r === undefined || !e.alive[r]) continue;
      const timely = e.timely[r];
      out.set(id, {
        sessionId: e.sessionIds[r],
        speaker: e.speakers[r],
        at: e.times[r],
        mentionsTime: () => timely,
        asks: e.asks[r],
      });
    }
    return out;
  }

  /** Inserted rows with their `content_tsv` text: appended to loaded users' entries. */
  added(rows: IndexedRow[], tsvectors: string[]): void {
    rows.forEach((row, i) => {
      const e = this.forWrite(row.userId);
      if (e) this.used += append(e, row, tsvectors[i]);
    });
    this.evict();
  }

  /** Deleted rows of `userId` (e.g. a replaced session summary's memory). */
  removed(userId: string, ids: string[]): void {
    const e = this.forWrite(userId);
    if (!e) return;
    for (const id of ids) {
      const r = e.rowOf.get(id);
      if (r === undefined || !e.alive[r]) continue;
      e.alive[r] = false;
      e.count--;
      const list = e.sessions.get(streamOf(e.sessionIds[r], e.kinds[r]))!;
      list.splice(lowerBound(list, id), 1);
    }
  }

  protected empty(): Entry {
    return {
      ids: [],
      agentIds: [],
      sessionIds: [],
      speakers: [],
      times: [],
      timely: [],
      asks: [],
      alive: [],
      kinds: [],
      rowOf: new Map(),
      postings: new Map(),
      sessions: new Map(),
      count: 0,
      size: 0,
      stale: false,
      loading: null,
    };
  }

  protected sizeOf(e: Entry): number {
    return e.size;
  }

  protected async load(db: Db | Tx, userId: string, e: Entry): Promise<Entry> {
    const rows = await execRows<{
      id: string;
      agent_id: string | null;
      session_id: string | null;
      kind: string;
      t: string;
      content: string;
      metadata: unknown;
      created_at: Date | string;
      occurred_at: Date | string | null;
    }>(
      db,
      sql`select id, agent_id, session_id, kind, content_tsv::text as t, content, metadata, created_at, occurred_at from memories where user_id = ${userId} order by id`,
    );
    for (const r of rows) {
      const row = {
        id: r.id,
        userId,
        agentId: r.agent_id,
        kind: r.kind,
        sessionId: r.session_id,
        content: r.content,
        metadata: rawJsonObject(r.metadata),
        createdAt: rawTimestamp(r.created_at),
        occurredAt: r.occurred_at === null ? null : rawTimestamp(r.occurred_at),
      };
      append(e, row, r.t);
    }
    return e;
  }
}

/** The user's memories according to the trigger-maintained `memory_doc_counts`. */
async function docCount(db: Db | Tx, userId: string): Promise<number> {
  const [row] = await execRows<{ n: number | string }>(
    db,
    sql`select n from memory_doc_counts where user_id = ${userId}`,
  );
  return Number(row?.n ?? 0);
}

/** Add one memory to an entry; returns the postings added. */
function append(e: Entry, row: IndexedRow, tsvector: string): number {
  if (e.rowOf.has(row.id)) return 0;
  const r = e.ids.length;
  e.ids.push(row.id);
  e.agentIds.push(row.agentId);
  e.sessionIds.push(row.sessionId);
  const facts = rowFacts(row);
  e.speakers.push(facts.speaker);
  e.times.push(facts.at);
  e.timely.push(facts.mentionsTime());
  e.asks.push(facts.asks);
  e.alive.push(true);
  e.kinds.push(kindCode(row.kind));
  e.rowOf.set(row.id, r);
  e.count++;
  const doc = parseTsvector(tsvector);
  for (let i = 0; i < doc.lex.length; i++) {
    let p = e.postings.get(doc.lex[i]);
    if (!p) e.postings.set(doc.lex[i], (p = { rows: [], contrib: [] }));
    p.rows.push(r);
    p.contrib.push(postingContribution(doc.pos[i]));
  }
  e.size += doc.lex.length;
  const stream = streamOf(row.sessionId, kindCode(row.kind));
  let list = e.sessions.get(stream);
  if (!list) e.sessions.set(stream, (list = []));
  list.splice(lowerBound(list, row.id), 0, row.id);
  return doc.lex.length;
}

function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** PostgreSQL's order of tsquery operands (`tsCompareString`): bytewise on UTF-8, a prefix first. */
function compareBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** First position of `list` (ascending numbers) not below `x`. */
function lowerBoundNum(list: readonly number[], x: number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (list[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
