/**
 * SQL of the memory store on both storage paths (DESIGN.md §3):
 *
 * - pgvector (`ctx.database.hasVector`): `embedding vector(N)`, HNSW index (`vector_cosine_ops`),
 *   distance `embedding <=> q`;
 * - no pgvector: `embedding real[]` (stored inline and uncompressed, migration 0013), exact distance
 *   over the caller's rows as one SQL expression over the query's non-zero components
 *   ({@link exactCosineDistance}).
 *
 * Vectors are unit length, so both distances are `1 - cosine`. Everything else — filters, the
 * full-text arm, reciprocal rank fusion — is the same SQL on both paths, so the same data gives the
 * same hits (tested on PGlite and PostgreSQL).
 */
import { sql, type SQL } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { execRows, rawJsonObject, rawTimestamp, type Db, type Tx } from '../../db/client.js';
import { newId } from '../../http/ids.js';
import type { NewMemoryRow } from './state.js';
import { memoryRows } from './statements.js';

export type { NewMemoryRow } from './state.js';

/**
 * A user's own memory row (`source` explicit, `kind` note) with a new `mem_` id, attached to no
 * session, agent, service, tool or execution and with empty metadata unless `fields` says otherwise.
 */
export function noteRow(
  userId: string,
  content: string,
  fields: Partial<Omit<NewMemoryRow, 'source'>> = {},
): NewMemoryRow {
  return {
    id: newId('mem'),
    userId,
    sessionId: null,
    agentId: null,
    serviceId: null,
    toolId: null,
    executionId: null,
    source: 'explicit',
    kind: 'note',
    content,
    metadata: {},
    ...fields,
  };
}

/** The HNSW index of the pgvector path (also created by migration 0007; keep both in sync). */
export const HNSW_INDEX = sql.raw(
  'create index if not exists memories_embedding_hnsw_idx on memories using hnsw (embedding vector_cosine_ops) with (m = 32, ef_construction = 200)',
);

/** Text form of a vector for a `::vector` or `::real[]` cast (float32 round-trips exactly). */
export function vectorText(v: Float32Array, hasVector: boolean): string {
  const parts = new Array<string>(v.length);
  for (let i = 0; i < v.length; i++) parts[i] = v[i] === 0 ? '0' : v[i].toPrecision(9);
  return hasVector ? `[${parts.join(',')}]` : `{${parts.join(',')}}`;
}

/** A vector as an SQL parameter of the column's type. */
export function vectorParam(ctx: AppContext, v: Float32Array | null): SQL {
  if (!v) return sql`null`;
  const text = vectorText(v, ctx.database.hasVector);
  return ctx.database.hasVector ? sql`${text}::vector` : sql`${text}::real[]`;
}

/**
 * Cosine distance (0 = same direction, 2 = opposite) of `col` to the unit query vector `v`: pgvector's
 * `<=>` on the pgvector path, {@link exactCosineDistance} on the real[] path.
 */
export function distance(ctx: AppContext, v: Float32Array, col: SQL = sql`embedding`): SQL {
  return ctx.database.hasVector ? sql`(${col} <=> ${vectorParam(ctx, v)})` : exactCosineDistance(col, v);
}

/**
 * Exact cosine distance `1 - Σ col[i]·v[i]` of a unit-length `real[]` column to the unit vector `v`,
 * as one SQL expression over the non-zero components of `v` only (zeros add nothing; a local-provider
 * query has ~60 of 384). The components are inlined as float8 literals (they come from a
 * Float32Array, never from user text), so the planner sees one expression it evaluates once per row:
 * no function call, no array expansion — 10x faster than the plpgsql loop `memory_cosine_distance`
 * (migration 0007), which is kept for ad-hoc SQL. The sum is float8; the result is NULL when the
 * column is NULL or its length differs from `v`'s.
 * @throws Error when `v` holds a non-finite number
 */
export function exactCosineDistance(col: SQL, v: Float32Array): SQL {
  const terms: SQL[] = [];
  for (let i = 0; i < v.length; i++) {
    if (v[i] === 0) continue;
    if (!Number.isFinite(v[i])) throw new Error('exactCosineDistance: the query vector holds a non-finite number');
    // toPrecision(9) round-trips a float32 exactly; the index is a 1-based array subscript
    terms.push(sql`(${col})[${sql.raw(String(i + 1))}] * ${sql.raw(`(${v[i].toPrecision(9)})`)}::float8`);
  }
  const dot = terms.length > 0 ? sql.join(terms, sql` + `) : sql`0::float8`;
  return sql`(case when array_length(${col}, 1) = ${sql.raw(String(v.length))} then 1 - (${dot}) end)`;
}

/**
 * Insert memories with their embeddings (null → stored without one; found by full text only until
 * back-filled). Rows whose `execution_id` already has a memory are skipped.
 * @returns the ids and creation times of the inserted rows
 */
export async function insertMemoryRows(
  ctx: AppContext,
  db: Db | Tx,
  rows: NewMemoryRow[],
  vectors: Array<Float32Array | null>,
): Promise<Array<{ id: string; created_at: Date | string }>> {
  if (rows.length === 0) return [];
  // millisecond precision, like the API's timestamps: `since`/`until` filters round-trip exactly
  const now = new Date().toISOString();
  const values = rows.map(
    (r, i) =>
      sql`(${r.id}, ${r.userId}, ${r.sessionId}, ${r.agentId}, ${r.serviceId}, ${r.toolId}, ${r.executionId}, ${r.source}, ${r.kind}, ${r.content}, ${JSON.stringify(r.metadata)}::jsonb, ${vectorParam(ctx, vectors[i] ?? null)}, ${now}::timestamptz, ${r.occurredAt ? r.occurredAt.toISOString() : null}::timestamptz)`,
  );
  const text = ctx.memory?.text;
  const inserted = await execRows<{ id: string; created_at: Date | string; tsv?: string }>(
    db,
    sql`insert into memories (id, user_id, session_id, agent_id, service_id, tool_id, execution_id, source, kind, content, metadata, embedding, created_at, occurred_at)
        values ${sql.join(values, sql`, `)}
        on conflict (execution_id) do nothing
        returning id, created_at${text ? sql`, content_tsv::text as tsv` : sql``}`,
  );
  const cache = ctx.memory?.vectors;
  if (cache || text) {
    const stored = new Map(inserted.map((r) => [r.id, r.tsv ?? '']));
    const kept = rows.map((r, i) => [r, vectors[i] ?? null] as const).filter(([r]) => stored.has(r.id));
    cache?.added(
      kept.map(([r]) => r),
      kept.map(([, v]) => v),
    );
    text?.added(
      kept.map(([r]) => ({ ...r, createdAt: new Date(now) })),
      kept.map(([r]) => stored.get(r.id)!),
    );
  }
  return inserted.map((r) => ({ id: r.id, created_at: r.created_at }));
}

/** Retrieval arms of a search. */
export type SearchMode = 'hybrid' | 'vector' | 'text';

/** One fused candidate, with its rank in each arm (null when the arm did not return it). */
export interface CandidateRow {
  id: string;
  score: number;
  distance: number | null;
  vector_rank: number | null;
  text_rank: number | null;
  /** The stored memory (`source` as read back, not narrowed). */
  row: Omit<NewMemoryRow, 'source'> & { source: string; createdAt: Date; occurredAt: Date | null };
}

/**
 * The full-text query of `q`: the English-stemmed lexemes of `q` OR-ed together (a paraphrase
 * rarely repeats every word, so AND — `plainto_tsquery` — misses most relevant memories).
 */
export function orTsQuery(q: string): SQL {
  return sql`replace(plainto_tsquery('english', ${q})::text, ' & ', ' | ')::tsquery`;
}

/** Lexemes that may be inlined into SQL: no backslash or control character (quotes are doubled). */
export const SAFE_LEXEME = /^[^\\\u0000-\u001f]+$/;

/**
 * A tsquery OR-ing `lexemes` as an SQL string literal: each lexeme quoted for the tsquery parser (`'` →
 * `''`), then the whole quoted for SQL (`'` → `''`). Only for {@link SAFE_LEXEME} lexemes, so the
 * result reads the same whatever `standard_conforming_strings` says.
 */
function lexemeLiteral(...lexemes: string[]): string {
  const tsquery = lexemes.map((l) => `'${l.replaceAll("'", "''")}'`).join(' | ');
  return `'${tsquery.replaceAll("'", "''")}'`;
}

/** A query term with its document frequency and inverse document frequency over one user's memories. */
export interface TermWeight {
  lexeme: string;
  /** Memories of the user holding the lexeme. */
  df: number;
  /** `ln(1 + (N − df + 0.5) / (df + 0.5))`, always > 0. */
  idf: number;
}

/**
 * The English-stemmed terms of `query` with their inverse document frequency over the user's
 * memories, `ln(1 + (N − df + 0.5) / (df + 0.5))` (Robertson–Spärck Jones, as in BM25), from the
 * trigger-maintained `memory_terms` / `memory_doc_counts` (migration 0014): primary-key lookups,
 * however many memories the user has.
 */
export async function termWeights(db: Db | Tx, userId: string, query: string): Promise<TermWeight[]> {
  return (await queryTerms(db, userId, query)).terms;
}

/** What one statement tells about a query over a user's memories: see {@link queryTerms}. */
export interface QueryTerms {
  /** The query's English-stemmed terms with their weights ({@link termWeights}). */
  terms: TermWeight[];
  /** The user's memories (`memory_doc_counts`). */
  docs: number;
  /** Text form of the full-text arm's query ({@link orTsQuery}), e.g. `'maya' | 'race'`. */
  tsquery: string;
}

/**
 * {@link termWeights} plus the user's memory count and the text of {@link orTsQuery}, in one
 * statement (the in-process text arm needs all three; text-index.ts).
 */
export async function queryTerms(db: Db | Tx, userId: string, query: string): Promise<QueryTerms> {
  // a named prepared statement on PGlite (statements.ts): parsed and planned once, not per search
  const rows = await memoryRows<{ lexeme: string | null; df: number | string; n: number | string; tq: string }>(
    db,
    sql`select l.lexeme, coalesce(t.df, 0) as df, c.n, q.tq
        from (select ${orTsQuery(query)}::text as tq) q
        cross join (select coalesce((select n from memory_doc_counts where user_id = ${userId}), 0) as n) c
        left join lateral unnest(to_tsvector('english', ${query})) l on true
        left join memory_terms t on t.user_id = ${userId} and t.lexeme = l.lexeme`,
  );
  const docs = Number(rows[0]?.n ?? 0);
  const terms = rows
    .filter((r): r is typeof r & { lexeme: string } => r.lexeme !== null)
    .map((r) => {
      const df = Math.max(0, Number(r.df));
      const n = Math.max(df, docs);
      return { lexeme: r.lexeme, df, idf: Math.log(1 + (n - df + 0.5) / (df + 0.5)) };
    });
  return { terms, docs, tsquery: rows[0]?.tq ?? '' };
}

/**
 * How the full-text arm may skip common terms without changing its answer (MaxScore, Turtle &
 * Flood 1995). Terms sorted by IDF, rarest first; the `essential` ones are the shortest prefix whose
 * last weight exceeds the summed weight of all the others (`rest`). A memory holding no essential
 * term scores at most `rest`, and any memory holding one scores more, so once `pool` memories holding
 * essential terms are found, none of the others can enter the top `pool`: the arm reads only the
 * (few) memories of the rare terms instead of every memory of the common ones. Terms no memory of
 * the user holds (df 0) are left out. Weights are compared as the 6-decimal literals the SQL sums,
 * so the bound holds exactly.
 * @returns the essential lexemes and `rest`, or null when no term can be skipped
 */
export function maxScorePlan(terms: TermWeight[]): { essential: string[]; rest: number } | null {
  // weights in millionths, as the SQL literals (`toFixed(6)`) they are compared with; a term no
  // memory holds scores nothing and, as the rarest, would be the only essential one
  const sorted = terms
    .filter((w) => w.df > 0)
    .map((w) => ({ lexeme: w.lexeme, micro: Math.round(Number(w.idf.toFixed(6)) * 1e6) }))
    .sort((a, b) => b.micro - a.micro || a.lexeme.localeCompare(b.lexeme));
  let rest = sorted.reduce((sum, w) => sum + w.micro, 0);
  for (let j = 0; j < sorted.length - 1; j++) {
    rest -= sorted[j].micro;
    if (sorted[j].micro > rest) return { essential: sorted.slice(0, j + 1).map((w) => w.lexeme), rest: rest / 1e6 };
  }
  return null;
}

/**
 * Hybrid candidates in one statement: the `pool` nearest vectors and the `pool` best full-text
 * matches (by the summed IDF of the query terms they contain, {@link termWeights}; `ts_rank` breaks
 * ties; {@link maxScorePlan} skips common terms) under `where`, each with its text score (`score`:
 * Σ IDF of the query terms it holds, a vector-arm candidate's too; 0 in `vector` mode) and cosine distance, ordered by text score (descending), the text arm's rank, then id
 * (descending); ranking.ts ranks them. `where` must scope to the caller (`user_id = …`).
 * `vector_rank` / `text_rank` are each arm's own 1-based positions.
 */
export async function fusedCandidates(
  ctx: AppContext,
  db: Db | Tx,
  input: {
    userId: string;
    where: SQL;
    query: string;
    vector: Float32Array;
    pool: number;
    mode: SearchMode;
    /** Skip common terms by {@link maxScorePlan} (default true; false reads every match, same answer). */
    maxScore?: boolean;
    /** The vector arm computed in process (vector-cache.ts), nearest first; absent → in SQL. */
    vectorHits?: Array<{ id: string; distance: number }>;
  },
): Promise<CandidateRow[]> {
  const dist = distance(ctx, input.vector);
  const arms: SQL[] = [];
  const ctes: SQL[] = [];
  if (input.mode !== 'text' && input.vectorHits) {
    const hits = input.vectorHits.map((h, i) => sql`(${h.id}, ${i + 1}::bigint)`);
    ctes.push(
      hits.length
        ? sql`v as (select * from (values ${sql.join(hits, sql`, `)}) x(id, r))`
        : sql`v as (select null::text as id, null::bigint as r where false)`,
    );
    arms.push(sql`select id, 0::float8 as score, r as vr, null::bigint as tr from v`);
  } else if (input.mode !== 'text') {
    ctes.push(sql`v as (
      select id, row_number() over (order by d, id) as r from (
        select id, ${dist} as d from memories
        where ${input.where} and embedding is not null
        order by d limit ${input.pool}::int
      ) s
    )`);
    arms.push(sql`select id, 0::float8 as score, r as vr, null::bigint as tr from v`);
  }
  // Σ IDF of the query terms a memory contains (BM25's term weighting without TF saturation:
  // memories are short), ts_rank breaking ties; weights inlined, so no subquery per row. Every
  // candidate's score, the vector arm's too: a memory outside the text arm's pool still holds terms.
  let idfSum: SQL | null = null;
  if (input.mode !== 'vector') {
    const weights = await termWeights(db, input.userId, input.query);
    // Inlined as literals: bound parameters made the text arm ~2.5x slower at 100k memories (p95).
    const terms = weights.filter((w) => SAFE_LEXEME.test(w.lexeme));
    const sum = terms.length
      ? sql.raw(
          terms
            .map(
              (w) =>
                `(case when m.content_tsv @@ ${lexemeLiteral(w.lexeme)}::tsquery then ${w.idf.toFixed(6)} else 0 end)`,
            )
            .join(' + '),
        )
      : sql`0::float8`;
    idfSum = sum;
    const scored = (match: SQL) => sql`select m.id, ${sum} as bm, ts_rank(m.content_tsv, tq.q) as rk from memories m, tq
        where ${input.where} and m.content_tsv @@ ${match}
        order by bm desc, rk desc, m.id desc limit ${input.pool}::int`;
    ctes.push(sql`tq as (select ${orTsQuery(input.query)} as q)`);
    const plan = input.maxScore === false ? null : maxScorePlan(terms);
    if (plan) {
      // MaxScore: the memories of the rare terms, which all outscore the others; every match only when
      // they do not fill the pool (a one-time filter: that scan does not run otherwise)
      ctes.push(sql`te as (${scored(sql.raw(`${lexemeLiteral(...plan.essential)}::tsquery`))})`);
      ctes.push(sql`tok as (select count(*) = ${input.pool}::int as ok from te)`);
    }
    const top = plan
      ? sql`select * from te where (select ok from tok) union all select * from (${scored(sql`tq.q`)}) a where not (select ok from tok)`
      : scored(sql`tq.q`);
    ctes.push(sql`t as (select id, bm, row_number() over (order by bm desc, rk desc, id desc) as r from (${top}) s)`);
    arms.push(sql`select id, bm::float8 as score, null::bigint as vr, r as tr from t`);
  }
  type Raw = Record<string, unknown> & {
    id: string;
    score: unknown;
    distance: unknown;
    vector_rank: unknown;
    text_rank: unknown;
  };
  // a text-arm candidate's own score; a vector-only one's on its row (0 in `vector` mode)
  const score = idfSum ? sql`(case when f.tr is null then ${idfSum} else f.score end)::float8` : sql`f.score`;
  const rows = await execRows<Raw>(
    db,
    sql`with ${sql.join(ctes, sql`, `)},
        f as (select id, sum(score) as score, min(vr) as vr, min(tr) as tr from (${sql.join(arms, sql` union all `)}) x group by id)
        select f.id, ${score} as score, f.vr as vector_rank, f.tr as text_rank, ${distance(ctx, input.vector, sql`m.embedding`)} as distance, ${CANDIDATE_COLUMNS}
        from f join memories m on m.id = f.id
        where ${input.where}
        order by ${score} desc, f.tr nulls last, f.id desc`,
  );
  return rows.map(candidateRow);
}

/** Columns of a candidate's memory, for a select over `memories m` ({@link candidateRow} reads them). */
export const CANDIDATE_COLUMNS = sql`m.user_id, m.session_id, m.agent_id, m.service_id, m.tool_id, m.execution_id, m.source, m.kind, m.content, m.metadata, m.created_at, m.occurred_at`;

/** A result row with `id, score, distance, vector_rank, text_rank` and {@link CANDIDATE_COLUMNS} as a candidate. */
export function candidateRow(r: Record<string, unknown>): CandidateRow {
  const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  return {
    id: r.id as string,
    score: Number(r.score),
    distance: num(r.distance),
    vector_rank: num(r.vector_rank),
    text_rank: num(r.text_rank),
    row: {
      id: r.id as string,
      userId: r.user_id as string,
      sessionId: (r.session_id as string | null) ?? null,
      agentId: (r.agent_id as string | null) ?? null,
      serviceId: (r.service_id as string | null) ?? null,
      toolId: (r.tool_id as string | null) ?? null,
      executionId: (r.execution_id as string | null) ?? null,
      source: r.source as string,
      kind: (r.kind as NewMemoryRow['kind'] | undefined) ?? 'note',
      content: r.content as string,
      metadata: rawJsonObject(r.metadata),
      createdAt: rawTimestamp(r.created_at as Date | string),
      occurredAt:
        r.occurred_at === null || r.occurred_at === undefined ? null : rawTimestamp(r.occurred_at as Date | string),
    },
  };
}

/**
 * Run `fn` in a transaction with the HNSW scan settings of memory search for `userId`:
 * `hnsw.ef_search` grows with the user's store — ⌈memories / 100⌉ between `MEMORY_HNSW_EF_SEARCH`
 * (100) and `MEMORY_HNSW_EF_SEARCH_MAX` (1000), read from `memory_doc_counts` in the same statement
 * — because a larger graph needs a longer candidate list for the same recall (~0.95 recall@10 at
 * 10k memories with 100 and at 100k with 1000, bench/memory.ts); and iterative scans (pgvector ≥
 * 0.8), so a filtered index scan keeps going until it has `pool` rows of the caller instead of
 * returning the few that survive the filter. No index settings on the real[] path (exact).
 */
export async function withSearchSettings<T>(
  ctx: AppContext,
  userId: string,
  fn: (tx: Db | Tx) => Promise<T>,
): Promise<T> {
  if (!ctx.database.hasVector) {
    // exact path: no index settings; keep JIT off (compiling the scan costs more than it saves).
    return ctx.db.transaction(async (tx) => {
      await tx.execute(sql`select set_config('jit', 'off', true)`);
      return fn(tx);
    });
  }
  const { hnswEfSearch: min, hnswEfSearchMax } = ctx.config.memory;
  const max = Math.max(min, hnswEfSearchMax);
  return ctx.db.transaction(async (tx) => {
    await tx.execute(
      sql`select set_config('hnsw.ef_search', greatest(${min}::int, least(${max}::int,
            ceil(coalesce((select n from memory_doc_counts where user_id = ${userId}), 0) / 100.0)::int))::text, true),
          set_config('hnsw.iterative_scan', 'relaxed_order', true)`,
    );
    return fn(tx);
  });
}
