/**
 * Coalesced hot statements of the agent key/value memory: the point reads and the
 * unconditional upserts of requests that arrive together run as one statement each, instead of one
 * statement — one round trip, one pooled connection, one commit — per request.
 *
 * - **Reads** go through a DataLoader whose batches are dispatched on `setImmediate`: every read
 *   asked while the event loop handled one batch of ready sockets shares one `unnest` join (Prisma
 *   batches `findUnique` the same way). Batches run concurrently. A batch of one runs the
 *   single-row statement, so a lone request pays one loop turn and nothing else.
 * - **Writes** go through the platform's group commit ({@link WriteBatcher}): at most one upsert
 *   statement in flight, and the writes that arrive meanwhile share the next one. Every caller is
 *   answered after its own row is committed, exactly as before; only the commit is shared.
 *   A key written twice in one batch goes to a later statement in arrival order (one statement
 *   cannot update a row twice), so the later write wins, as it would one request at a time.
 * - **Failure isolation**: when a batch's statement fails, its entries run one at a time, so one
 *   bad entry (say an agent deleted meanwhile) fails only its own request.
 */
import DataLoader from 'dataloader';
import type { PreparedRaw } from '../../db/prepared.js';
import { WriteBatcher } from '../../lib/batcher.js';

/** A row of the hot statements as the driver returns it (column names; timestamps as text). */
export type RawEntryRow = {
  key: string;
  value: unknown;
  version: number;
  updated_at: string;
  expires_at: string | null;
};

/** One entry of one agent. */
export interface EntryRef {
  agentId: string;
  key: string;
}

/** A point read's row: the entry as the driver gives it and whether it has expired (database clock). */
export type ReadRow = RawEntryRow & { expired: boolean };

/** An unconditional upsert: the serialised value, its size in bytes and its time to live in seconds (null: none). */
export interface EntryWrite extends EntryRef {
  json: string;
  bytes: number;
  ttl: number | null;
}

/** The statements a coalescer runs: the single-row forms and their `unnest` forms (`statements.ts`). */
export interface CoalescedStatements {
  get: PreparedRaw<ReadRow>;
  getMany: PreparedRaw<ReadRow & { agent_id: string }>;
  upsert: PreparedRaw<RawEntryRow>;
  upsertMany: PreparedRaw<RawEntryRow & { agent_id: string }>;
}

/** Most entries one statement carries. */
const MAX_BATCH = 64;
/** Most value bytes one write statement carries (a value may be 256 KiB; one statement stays a few MiB). */
const MAX_STATEMENT_BYTES = 4 * 1024 * 1024;

/** A map key of (agent, key): U+0000 cannot occur in either (PostgreSQL `text` cannot hold it). */
const idOf = (agentId: string, key: string): string => `${agentId}\u0000${key}`;

const asError = (err: unknown): Error => (err instanceof Error ? err : new Error(String(err)));

/** Each ref's own single-row read: the isolation path of a failed batch (an Error stands for that ref's failure). */
function oneByOne(st: CoalescedStatements, refs: readonly EntryRef[]): Promise<Array<ReadRow | undefined | Error>> {
  return Promise.all(refs.map((r) => st.get.run({ agentId: r.agentId, key: r.key }).then((rows) => rows[0], asError)));
}

/**
 * The point reader: `load({ agentId, key })` resolves with the entry's row (expired ones too, flagged)
 * or `undefined` when there is none. @throws the database error of that read
 */
export function createEntryReader(st: CoalescedStatements): DataLoader<EntryRef, ReadRow | undefined, EntryRef> {
  return new DataLoader<EntryRef, ReadRow | undefined, EntryRef>(
    async (refs) => {
      if (refs.length === 1) return oneByOne(st, refs);
      let rows: Array<ReadRow & { agent_id: string }>;
      try {
        rows = await st.getMany.run({ agentIds: refs.map((r) => r.agentId), keys: refs.map((r) => r.key) });
      } catch {
        return oneByOne(st, refs);
      }
      const byId = new Map(rows.map((r) => [idOf(r.agent_id, r.key), r]));
      return refs.map((r) => byId.get(idOf(r.agentId, r.key)));
    },
    // No cache: a read must see the latest committed write, never an earlier answer.
    { cache: false, batchScheduleFn: (dispatch) => setImmediate(dispatch), maxBatchSize: MAX_BATCH },
  );
}

/**
 * Split writes (indices into `writes`) into statements run one after the other: each holds distinct
 * (agent, key) — a write goes after every earlier write of its key — and at most
 * {@link MAX_STATEMENT_BYTES} of values (a larger single value goes alone).
 */
function rounds(writes: EntryWrite[]): number[][] {
  const byKey: number[][] = [];
  const roundOf = new Map<string, number>();
  writes.forEach((w, i) => {
    const id = idOf(w.agentId, w.key);
    const r = (roundOf.get(id) ?? -1) + 1;
    roundOf.set(id, r);
    (byKey[r] ??= []).push(i);
  });
  const out: number[][] = [];
  for (const round of byKey) {
    let chunk: number[] = [];
    let bytes = 0;
    for (const i of round) {
      if (chunk.length > 0 && bytes + writes[i].bytes > MAX_STATEMENT_BYTES) {
        out.push(chunk);
        chunk = [];
        bytes = 0;
      }
      chunk.push(i);
      bytes += writes[i].bytes;
    }
    out.push(chunk);
  }
  return out;
}

/** Write `writes` (distinct entries) in one statement; the rows in the writes' order. */
async function upsertDistinct(st: CoalescedStatements, writes: EntryWrite[]): Promise<RawEntryRow[]> {
  if (writes.length === 1) {
    const [w] = writes;
    return st.upsert.run({ agentId: w.agentId, key: w.key, json: w.json, bytes: w.bytes, ttl: w.ttl });
  }
  const rows = await st.upsertMany.run({
    agentIds: writes.map((w) => w.agentId),
    keys: writes.map((w) => w.key),
    jsons: writes.map((w) => w.json),
    bytes: writes.map((w) => w.bytes),
    ttls: writes.map((w) => w.ttl),
  });
  const byId = new Map(rows.map((r) => [idOf(r.agent_id, r.key), r]));
  return writes.map((w) => {
    const row = byId.get(idOf(w.agentId, w.key));
    if (!row) throw new Error(`agent memory upsert returned no row for key ${JSON.stringify(w.key)}`);
    return row;
  });
}

/**
 * Write a batch: its rounds one after the other, each in one statement; a round whose statement
 * fails is written entry by entry. Never rejects: an entry's failure is its own result (an Error),
 * so a committed round is never written twice by a retry of the whole batch.
 */
async function writeBatch(st: CoalescedStatements, writes: EntryWrite[]): Promise<Array<RawEntryRow | Error>> {
  const out: Array<RawEntryRow | Error> = new Array(writes.length);
  for (const round of rounds(writes)) {
    try {
      const rows = await upsertDistinct(
        st,
        round.map((i) => writes[i]),
      );
      round.forEach((i, j) => (out[i] = rows[j]));
    } catch (err) {
      if (round.length === 1) out[round[0]] = asError(err);
      else
        await Promise.all(
          round.map((i) =>
            upsertDistinct(st, [writes[i]]).then(
              ([row]) => (out[i] = row),
              (e: unknown) => (out[i] = asError(e)),
            ),
          ),
        );
    }
  }
  return out;
}

/** Upserts coalesced by {@link createEntryWriter}. */
export interface EntryWriter {
  /** Resolves with the written row once it is committed (`version` 1 when the write created the entry). @throws the database error of that write */
  write(write: EntryWrite): Promise<RawEntryRow>;
}

/** The upserter of one set of statements (one per database handle). */
export function createEntryWriter(st: CoalescedStatements): EntryWriter {
  const batcher = new WriteBatcher<EntryWrite, RawEntryRow | Error>({
    maxBatch: MAX_BATCH,
    write: (writes) => writeBatch(st, writes),
  });
  return {
    write: async (w) => {
      const result = await batcher.add(w);
      if (result instanceof Error) throw result;
      return result;
    },
  };
}
