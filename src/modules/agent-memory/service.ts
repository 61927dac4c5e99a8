/**
 * Agent key/value memory (spec "Agent memory (v2)").
 *
 * - Keys: 1–256 characters; values: any JSON up to `AGENT_MEMORY_MAX_VALUE_BYTES` serialised
 *   (413 `payload_too_large` beyond); at most `AGENT_MEMORY_MAX_ENTRIES` live entries per agent
 *   (409 `memory_entry_limit`).
 * - Optimistic concurrency (RFC 9110 §13.1): the entity tag is the entry's version (`"3"`);
 *   `If-Match` (strong comparison) and `If-None-Match` (`*` = create only) are evaluated inside
 *   the single SQL statement that writes, so they are race-free; a failed condition → 412.
 * - `ttl_seconds` sets `expires_at`; a PUT without it clears the expiry (PUT replaces the entry).
 *   Expired entries are invisible (all time comparisons use the database clock), deleted lazily
 *   when read and by a periodic purge.
 * - Cross-agent reads and writes need a live grant (permissions module) and are audited.
 *
 * The functions here take an agent id and check nobody: they are the storage of the principal-
 * checked functions in `access.ts`, the only ones a face (REST, MCP, the deployed-agent broker)
 * calls.
 */
import { UNSTORABLE_MESSAGE, findUnstorable } from '../../lib/nul.js';
import { and, asc, eq, gt, inArray, isNull, not, or, sql, type SQL } from 'drizzle-orm';
import type { Static } from 'typebox';
import type { AppContext } from '../../context.js';
import type { Db, Tx } from '../../db/client.js';
import { execRows } from '../../db/client.js';
import { agentMemory, agentMemoryAudit } from '../../db/schema/index.js';
import { AppError, notFound } from '../../http/errors.js';
import { iso, newId } from '../../http/ids.js';
import { encodeCursor, mapPage, selectPage, toPage, type Page } from '../../http/pagination.js';
import type { AuditQuery, AuditSchema, EntrySchema } from './schemas.js';
import {
  EXPIRED,
  RETURNING,
  UPSERT_SET,
  prepareAgentMemoryStatements,
  type AgentMemoryStatements,
  type EntryRow,
  type RawEntryRow,
} from './statements.js';

/** An entry as the API shows it (`EntrySchema`; `version` is 1 on creation, +1 per write, and the entity tag). */
export type EntryView = Static<typeof EntrySchema>;

/** Parsed `If-Match` / `If-None-Match`: `*`, or the versions named by the entity tags. */
export type TagCondition = '*' | number[];

/** Write preconditions from the request headers (RFC 9110 §13.1.1–13.1.2). */
export interface Preconditions {
  ifMatch?: TagCondition;
  ifNoneMatch?: TagCondition;
}

/** The entity tag of a version: a strong, quoted tag (RFC 9110 §8.8.3). */
export function etagOf(version: number): string {
  return `"${version}"`;
}

/**
 * Parse an `If-Match`/`If-None-Match` value: `*` or a comma-separated list of entity tags.
 * Weak tags (`W/"3"`) are kept for `If-None-Match` (weak comparison) and dropped for `If-Match`
 * (strong comparison); tags that are not versions can never match.
 * @throws AppError validation_failed for malformed values
 */
export function parseTagCondition(
  header: string | undefined,
  name: 'If-Match' | 'If-None-Match',
): TagCondition | undefined {
  if (header === undefined) return undefined;
  const v = header.trim();
  if (v === '*') return '*';
  const versions: number[] = [];
  for (const part of v.split(',')) {
    const m = /^\s*(W\/)?"([\x21\x23-\x7e\x80-\xff]*)"\s*$/.exec(part);
    if (!m)
      throw new AppError('validation_failed', `${name} must be * or a list of entity tags such as "3"`, {
        errors: [{ in: 'headers', pointer: `/${name.toLowerCase()}`, message: 'malformed entity tag' }],
      });
    if (m[1] && name === 'If-Match') continue;
    if (/^[1-9]\d{0,9}$/.test(m[2])) versions.push(Number(m[2]));
  }
  return versions;
}

type Exec = Db | Tx;

const LIVE = or(isNull(agentMemory.expiresAt), gt(agentMemory.expiresAt, sql`now()`))!;

/** This app's prepared hot statements (created on first use, held on `ctx`). */
function statements(ctx: AppContext): AgentMemoryStatements {
  if (ctx.agentMemoryStatements?.db !== ctx.db) ctx.agentMemoryStatements = prepareAgentMemoryStatements(ctx.db);
  return ctx.agentMemoryStatements;
}

/** The API view of an entry: a row mapped by drizzle, or a hot statement's row as the driver gives it (column names, timestamps as text). */
function view(r: EntryRow | RawEntryRow): EntryView {
  const raw = 'updated_at' in r;
  return {
    key: r.key,
    value: r.value,
    version: r.version,
    updated_at: iso(raw ? r.updated_at : r.updatedAt),
    expires_at: iso(raw ? r.expires_at : r.expiresAt),
  };
}

/**
 * Serialise a value and enforce the size limit. Both write paths (own memory and another agent's,
 * whichever face calls them: REST, MCP, the runtime's `context`) pass here, so a value `jsonb`
 * cannot hold (U+0000, lone surrogates, non-finite numbers, deeper than MAX_JSON_DEPTH) is refused
 * in one place even when it did not come through the HTTP edge.
 * @throws AppError validation_failed (400) | payload_too_large (413)
 */
function serialise(ctx: AppContext, value: unknown): { json: string; bytes: number } {
  const hit = findUnstorable(value, '/value');
  if (hit)
    throw new AppError('validation_failed', `value at "${hit.pointer}" ${UNSTORABLE_MESSAGE[hit.reason]}`, {
      errors: [{ in: 'body', pointer: hit.pointer, message: UNSTORABLE_MESSAGE[hit.reason] }],
    });
  const json = JSON.stringify(value);
  const max = ctx.config.agents.memoryMaxValueBytes;
  const bytes = Buffer.byteLength(json);
  if (bytes > max)
    throw new AppError('payload_too_large', `The value serialises to ${bytes} bytes; the limit is ${max} bytes`);
  return { json, bytes };
}

// ------------------------------------------------------------------------- own memory

/**
 * One live entry of `agentId` — no access check: faces call `access.ts` ({@link getAgentMemory}
 * there), which checks the principal and then reads through this.
 * @throws AppError not_found (missing or expired; an expired entry is purged)
 */
export async function getEntry(ctx: AppContext, agentId: string, key: string): Promise<EntryView> {
  const row = await statements(ctx).reader.load({ agentId, key });
  if (!row) throw notFound('Memory entry');
  if (row.expired) {
    ctx.db
      .delete(agentMemory)
      .where(and(eq(agentMemory.agentId, agentId), eq(agentMemory.key, key), sql`${EXPIRED}`))
      .then(
        () => undefined,
        (err: Error) => ctx.log.warn({ err: err.message }, 'lazy purge of an expired memory entry failed'),
      );
    throw notFound('Memory entry');
  }
  return view(row);
}

/** Key cursor: opaque base64url of the last key (keys may hold any character). */
function decodeKeyCursor(cursor: string | undefined): string | undefined {
  if (cursor === undefined) return undefined;
  const key = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!key || key.length > 512 || encodeCursor(key) !== cursor) {
    throw new AppError('validation_failed', 'cursor is malformed', {
      errors: [{ in: 'query', pointer: '/cursor', message: 'malformed cursor' }],
    });
  }
  return key;
}

/**
 * Live entries of `agentId` in key order, optionally under `prefix`. `allowedPrefixes` (from
 * grants) restricts the result to keys under any of them; null = no restriction.
 */
export async function listEntries(
  ctx: AppContext,
  agentId: string,
  q: { prefix?: string; limit?: number; cursor?: string },
  allowedPrefixes: string[] | null = null,
): Promise<Page<EntryView>> {
  const limit = q.limit ?? 20;
  const after = decodeKeyCursor(q.cursor);
  const rows = await ctx.db
    .select(RETURNING)
    .from(agentMemory)
    .where(
      and(
        eq(agentMemory.agentId, agentId),
        LIVE,
        q.prefix ? sql`starts_with(${agentMemory.key}, ${q.prefix})` : undefined,
        allowedPrefixes ? or(...allowedPrefixes.map((p) => sql`starts_with(${agentMemory.key}, ${p})`)) : undefined,
        after !== undefined ? gt(agentMemory.key, after) : undefined,
      ),
    )
    .orderBy(asc(agentMemory.key))
    .limit(limit + 1);
  return toPage(rows, limit, view, (r) => r.key);
}

/**
 * Create or replace an entry (upsert). Returns the entry and whether it was created (an expired
 * entry that is overwritten counts as created and restarts at version 1).
 * @throws AppError validation_failed (400) | precondition_failed (412) | payload_too_large (413) | memory_entry_limit (409)
 */
export async function putEntry(
  ctx: AppContext,
  agentId: string,
  key: string,
  input: { value: unknown; ttl_seconds?: number },
  pre: Preconditions = {},
  db: Exec = ctx.db,
): Promise<{ entry: EntryView; created: boolean }> {
  const { json, bytes } = serialise(ctx, input.value);
  // The common write (no precondition, the app's own handle): one prepared statement, shared with the writes that arrive with it (coalesce.ts).
  if (pre.ifMatch === undefined && pre.ifNoneMatch === undefined && db === ctx.db) {
    const row = await statements(ctx).writer.write({ agentId, key, json, bytes, ttl: input.ttl_seconds ?? null });
    const created = row.version === 1;
    if (created) await enforceEntryCap(ctx, db, agentId, key);
    return { entry: view(row), created };
  }
  const value = sql`${json}::jsonb`;
  const expiresAt = input.ttl_seconds ? sql`now() + make_interval(secs => ${input.ttl_seconds})` : null;

  if (pre.ifMatch !== undefined) {
    // The entry must exist (and match): a plain conditional UPDATE.
    if (pre.ifNoneMatch === '*')
      throw new AppError('precondition_failed', 'If-Match and If-None-Match: * cannot both hold');
    const [row] = await db
      .update(agentMemory)
      .set({ value, sizeBytes: bytes, expiresAt, version: sql`${agentMemory.version} + 1`, updatedAt: sql`now()` })
      .where(
        and(
          eq(agentMemory.agentId, agentId),
          eq(agentMemory.key, key),
          LIVE,
          pre.ifMatch === '*' ? undefined : pre.ifMatch.length ? inArray(agentMemory.version, pre.ifMatch) : sql`false`,
          Array.isArray(pre.ifNoneMatch) && pre.ifNoneMatch.length
            ? not(inArray(agentMemory.version, pre.ifNoneMatch))
            : undefined,
        ),
      )
      .returning(RETURNING);
    if (!row)
      throw new AppError(
        'precondition_failed',
        'If-Match does not match the current version of the entry (or the entry does not exist)',
      );
    return { entry: view(row), created: false };
  }

  let setWhere: SQL | undefined;
  if (pre.ifNoneMatch === '*') setWhere = EXPIRED;
  else if (pre.ifNoneMatch?.length) setWhere = or(EXPIRED, not(inArray(agentMemory.version, pre.ifNoneMatch)));
  const [row] = await db
    .insert(agentMemory)
    .values({ agentId, key, value, version: 1, sizeBytes: bytes, expiresAt })
    .onConflictDoUpdate({
      target: [agentMemory.agentId, agentMemory.key],
      set: UPSERT_SET,
      ...(setWhere ? { setWhere } : {}),
    })
    .returning(RETURNING);
  if (!row) {
    throw new AppError(
      'precondition_failed',
      pre.ifNoneMatch === '*'
        ? 'The entry already exists (If-None-Match: *)'
        : 'If-None-Match matches the current version of the entry',
    );
  }
  const created = row.version === 1;
  if (created) await enforceEntryCap(ctx, db, agentId, key);
  return { entry: view(row), created };
}

/**
 * After a creation: if the agent now holds more live entries than allowed, undo the creation and
 * refuse. Checking after the insert (instead of before) keeps the update path at one statement;
 * concurrent creations at the limit may both be refused, never both admitted.
 */
async function enforceEntryCap(ctx: AppContext, db: Exec, agentId: string, key: string): Promise<void> {
  const cap = ctx.config.agents.memoryMaxEntries;
  const [{ n }] = await execRows<{ n: number }>(
    db,
    sql`select count(*)::int as n from (select 1 from ${agentMemory} where ${agentMemory.agentId} = ${agentId} and ${LIVE} limit ${cap + 1}) t`,
  );
  if (n <= cap) return;
  await db
    .delete(agentMemory)
    .where(and(eq(agentMemory.agentId, agentId), eq(agentMemory.key, key), eq(agentMemory.version, 1)));
  throw new AppError(
    'memory_entry_limit',
    `This agent already holds the maximum of ${cap} live memory entries; delete some or let them expire`,
    { extra: { limit: cap } },
  );
}

/** Delete a live entry (`If-Match` honoured). @throws AppError not_found | precondition_failed */
export async function deleteEntry(
  ctx: AppContext,
  agentId: string,
  key: string,
  pre: Preconditions = {},
): Promise<void> {
  const versions = pre.ifMatch && pre.ifMatch !== '*' ? pre.ifMatch : undefined;
  const rows = await ctx.db
    .delete(agentMemory)
    .where(
      and(
        eq(agentMemory.agentId, agentId),
        eq(agentMemory.key, key),
        LIVE,
        versions ? (versions.length ? inArray(agentMemory.version, versions) : sql`false`) : undefined,
      ),
    )
    .returning({ version: agentMemory.version });
  if (rows.length) return;
  if (versions) {
    const exists = await ctx.db
      .select({ v: agentMemory.version })
      .from(agentMemory)
      .where(and(eq(agentMemory.agentId, agentId), eq(agentMemory.key, key), LIVE));
    if (exists.length)
      throw new AppError('precondition_failed', 'If-Match does not match the current version of the entry');
  }
  throw notFound('Memory entry');
}

/** Delete up to `batch` expired entries (all agents); returns how many. Run periodically. */
export async function purgeExpiredEntries(ctx: AppContext, batch = 1000): Promise<number> {
  const rows = await execRows<{ agent_id: string }>(
    ctx.db,
    sql`delete from ${agentMemory} where (${agentMemory.agentId}, ${agentMemory.key}) in (
          select ${agentMemory.agentId}, ${agentMemory.key} from ${agentMemory}
          where ${agentMemory.expiresAt} is not null and ${agentMemory.expiresAt} <= now() limit ${batch})
        returning ${agentMemory.agentId}`,
  );
  return rows.length;
}

// ------------------------------------------------------------------------- audit of cross-agent access

/** One cross-agent access, as listed by the owner (`AuditSchema`). */
export type AuditView = Static<typeof AuditSchema>;

/** Record one cross-agent access (or refusal) of `owner`'s memory by agent `actor`, on `db` (a transaction when the write commits with it). */
export async function recordAudit(
  db: Exec,
  e: {
    owner: string;
    actor: string;
    action: 'read' | 'write';
    outcome: 'allowed' | 'denied';
    key?: string | null;
    prefix?: string | null;
    keys?: string[];
    permissionId?: string | null;
  },
): Promise<void> {
  await db.insert(agentMemoryAudit).values({
    id: newId('aud'),
    ownerAgentId: e.owner,
    actorAgentId: e.actor,
    action: e.action,
    outcome: e.outcome,
    key: e.key ?? null,
    prefix: e.prefix ?? null,
    keys: e.keys ?? [],
    permissionId: e.permissionId ?? null,
  });
}

/** Cross-agent accesses of `targetId`'s memory, newest first (no access check: see `access.ts`). */
export async function auditPage(
  ctx: AppContext,
  targetId: string,
  q: Static<typeof AuditQuery>,
): Promise<Page<AuditView>> {
  const page = await selectPage(ctx.db, agentMemoryAudit, q, [
    eq(agentMemoryAudit.ownerAgentId, targetId),
    q.actor_agent_id ? eq(agentMemoryAudit.actorAgentId, q.actor_agent_id) : undefined,
    q.action ? eq(agentMemoryAudit.action, q.action) : undefined,
  ]);
  return mapPage(page, (r) => ({
    id: r.id,
    agent_id: r.ownerAgentId,
    actor_agent_id: r.actorAgentId,
    action: r.action as 'read' | 'write',
    outcome: r.outcome as 'allowed' | 'denied',
    key: r.key,
    prefix: r.prefix,
    keys: r.keys,
    permission_id: r.permissionId,
    created_at: iso(r.createdAt),
  }));
}
