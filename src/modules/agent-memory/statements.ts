/**
 * The agent key/value memory's hot statements (`GET`/`PUT /v2/memory/:key`), prepared once per app
 * and held on `AppContext.agentMemoryStatements`: the point read and the unconditional upsert
 * (coalesced across concurrent requests, `coalesce.ts`), with no query building per request (named
 * prepared statements on PostgreSQL). No `AppContext` import here, so `context.ts` can name
 * {@link AgentMemoryStatements} without an import loop.
 */
import { and, eq, sql } from 'drizzle-orm';
import type { Db } from '../../db/client.js';
import { prepareRaw } from '../../db/prepared.js';
import { agentMemory } from '../../db/schema/index.js';
import { createEntryReader, createEntryWriter, type RawEntryRow, type ReadRow } from './coalesce.js';

export type { RawEntryRow } from './coalesce.js';

export const EXPIRED = sql`(${agentMemory.expiresAt} is not null and ${agentMemory.expiresAt} <= now())`;

export const RETURNING = {
  key: agentMemory.key,
  value: agentMemory.value,
  version: agentMemory.version,
  updatedAt: agentMemory.updatedAt,
  expiresAt: agentMemory.expiresAt,
};

/** On conflict: replace the value; an expired row restarts at version 1 as if new. */
export const UPSERT_SET = {
  value: sql`excluded.value`,
  sizeBytes: sql`excluded.size_bytes`,
  expiresAt: sql`excluded.expires_at`,
  updatedAt: sql`now()`,
  version: sql`case when ${EXPIRED} then 1 else ${agentMemory.version} + 1 end`,
  createdAt: sql`case when ${EXPIRED} then now() else ${agentMemory.createdAt} end`,
};

/** What a point read returns: the entry and whether it has expired (database clock). */
const READ = { ...RETURNING, expired: sql<boolean>`${EXPIRED}`.as('expired') };

export type EntryRow = { key: string; value: unknown; version: number; updatedAt: Date; expiresAt: Date | null };

/**
 * The hot statements, prepared once per database handle: the point read and the unconditional
 * upsert, each in a single-row form and an `unnest` form that carries the entries of several
 * requests (`coalesce.ts`), and the coalescers that choose between them — `reader.load(ref)` and
 * `writer.write(entry)`. No query building per request; named statements on PostgreSQL. Rows come
 * back as the driver gives them (no per-column mapping by the ORM).
 */
export function prepareAgentMemoryStatements(db: Db) {
  const agentId = sql.placeholder('agentId');
  const key = sql.placeholder('key');
  const statements = {
    /** The handle these statements run on (a context copied with another database prepares its own). */
    db,
    get: prepareRaw<ReadRow>(db, 'agent_memory_get', () =>
      db
        .select(READ)
        .from(agentMemory)
        .where(and(eq(agentMemory.agentId, agentId), eq(agentMemory.key, key)))
        .getSQL(),
    ),
    /** `get` for several entries: `agentIds[i]`, `keys[i]` name one; rows (only of entries that exist) in no particular order. */
    getMany: prepareRaw<ReadRow & { agent_id: string }>(db, 'agent_memory_get_many', () =>
      db
        .select({ agent_id: agentMemory.agentId, ...READ })
        .from(agentMemory)
        .innerJoin(
          sql`unnest(${sql.placeholder('agentIds')}::text[], ${sql.placeholder('keys')}::text[]) as q(agent_id, key)`,
          sql`${agentMemory.agentId} = q.agent_id and ${agentMemory.key} = q.key`,
        )
        .getSQL(),
    ),
    upsert: prepareRaw<RawEntryRow>(db, 'agent_memory_upsert', () =>
      db
        .insert(agentMemory)
        .values({
          agentId,
          key,
          value: sql`${sql.placeholder('json')}::jsonb`,
          version: 1,
          sizeBytes: sql.placeholder('bytes'),
          expiresAt: sql`case when ${sql.placeholder('ttl')}::int is null then null else now() + make_interval(secs => ${sql.placeholder('ttl')}::int) end`,
        })
        .onConflictDoUpdate({ target: [agentMemory.agentId, agentMemory.key], set: UPSERT_SET })
        .returning(RETURNING)
        .getSQL(),
    ),
    /**
     * `upsert` for several entries: parallel arrays, one element per entry, the (agent, key) pairs
     * distinct (one statement cannot update a row twice); rows in no particular order.
     */
    upsertMany: prepareRaw<RawEntryRow & { agent_id: string }>(db, 'agent_memory_upsert_many', () =>
      db
        .insert(agentMemory)
        .select(
          sql`select q.agent_id, q.key, q.json::jsonb, 1, q.bytes, now(), now(), case when q.ttl is null then null else now() + make_interval(secs => q.ttl) end
              from unnest(${sql.placeholder('agentIds')}::text[], ${sql.placeholder('keys')}::text[], ${sql.placeholder('jsons')}::text[],
                          ${sql.placeholder('bytes')}::int[], ${sql.placeholder('ttls')}::int[]) as q(agent_id, key, json, bytes, ttl)`,
        )
        .onConflictDoUpdate({ target: [agentMemory.agentId, agentMemory.key], set: UPSERT_SET })
        .returning({ agent_id: agentMemory.agentId, ...RETURNING })
        .getSQL(),
    ),
  };
  return { ...statements, reader: createEntryReader(statements), writer: createEntryWriter(statements) };
}

/** The prepared statements of one database handle and their coalescers. */
export type AgentMemoryStatements = ReturnType<typeof prepareAgentMemoryStatements>;
