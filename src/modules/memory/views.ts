/** How memories are shown and scoped (the caller's account, and for an agent its own agent id). */
import { and, eq, gte, inArray, lte, sql, type SQL } from 'drizzle-orm';
import { memories } from '../../db/schema/index.js';
import type { SessionActor } from '../../http/auth.js';
import { iso } from '../../http/ids.js';
import { MEMORY_KINDS, selectedKinds, type MemoryKind } from './kinds.js';

export type MemoryRow = Pick<
  typeof memories.$inferSelect,
  | 'id'
  | 'userId'
  | 'sessionId'
  | 'agentId'
  | 'serviceId'
  | 'toolId'
  | 'executionId'
  | 'source'
  | 'content'
  | 'metadata'
  | 'createdAt'
> & { occurredAt?: Date | null; kind: string };

/** A memory as the API shows it. */
export interface MemoryView {
  id: string;
  content: string;
  source: 'explicit' | 'execution' | 'summary';
  /** What it is: `note`, `execution` (the tool-execution hook's) or `summary` (kinds.ts). */
  kind: MemoryKind;
  session_id: string | null;
  agent_id: string | null;
  service_id: string | null;
  tool_id: string | null;
  execution_id: string | null;
  metadata: Record<string, unknown>;
  created_at: string;
  /** When what it records happened (`occurred_at` as stored; `created_at` when none was given). */
  occurred_at: string;
}

export const MEMORY_COLUMNS = {
  id: memories.id,
  userId: memories.userId,
  sessionId: memories.sessionId,
  agentId: memories.agentId,
  serviceId: memories.serviceId,
  toolId: memories.toolId,
  executionId: memories.executionId,
  source: memories.source,
  kind: memories.kind,
  content: memories.content,
  metadata: memories.metadata,
  createdAt: memories.createdAt,
  occurredAt: memories.occurredAt,
};

export function memoryView(r: MemoryRow): MemoryView {
  return {
    id: r.id,
    content: r.content,
    source: r.source as MemoryView['source'],
    kind: r.kind as MemoryKind,
    session_id: r.sessionId,
    agent_id: r.agentId,
    service_id: r.serviceId,
    tool_id: r.toolId,
    execution_id: r.executionId,
    metadata: r.metadata ?? {},
    created_at: iso(r.createdAt)!,
    occurred_at: iso(r.occurredAt ?? r.createdAt)!,
  };
}

/** The caller's rows: the account, and for an agent its own agent id. */
export function scoped(actor: SessionActor): SQL {
  return and(eq(memories.userId, actor.accountId), actor.agentId ? eq(memories.agentId, actor.agentId) : undefined)!;
}

/** Filters of the list endpoints. */
export interface MemoryFilter {
  session_id?: string;
  agent_id?: string;
  since?: string;
  until?: string;
  /** `?kind=`: `all` or kinds separated by commas; absent → notes and summaries (kinds.ts). */
  kind?: string;
}

export function filtered(actor: SessionActor, f: MemoryFilter): SQL {
  return and(
    scoped(actor),
    f.session_id ? eq(memories.sessionId, f.session_id) : undefined,
    f.agent_id ? eq(memories.agentId, f.agent_id) : undefined,
    f.since ? gte(memories.createdAt, new Date(f.since)) : undefined,
    f.until ? lte(memories.createdAt, new Date(f.until)) : undefined,
    kindCondition(f.kind),
  )!;
}

/** The same scope and filters as raw SQL over unqualified `memories` columns (search). */
export function filteredSql(actor: SessionActor, f: MemoryFilter): SQL {
  const parts: SQL[] = [sql`user_id = ${actor.accountId}`];
  if (actor.agentId) parts.push(sql`agent_id = ${actor.agentId}`);
  if (f.session_id) parts.push(sql`session_id = ${f.session_id}`);
  if (f.agent_id) parts.push(sql`agent_id = ${f.agent_id}`);
  if (f.since) parts.push(sql`created_at >= ${new Date(f.since).toISOString()}::timestamptz`);
  if (f.until) parts.push(sql`created_at <= ${new Date(f.until).toISOString()}::timestamptz`);
  const kinds = selectedKinds(f.kind);
  if (kinds.length < MEMORY_KINDS.length)
    parts.push(
      sql`kind in (${sql.join(
        kinds.map((k) => sql`${k}`),
        sql`, `,
      )})`,
    );
  return sql.join(parts, sql` and `);
}

/** The kind condition of a filter (none when every kind is selected). */
function kindCondition(filter: string | undefined): SQL | undefined {
  const kinds = selectedKinds(filter);
  return kinds.length < MEMORY_KINDS.length ? inArray(memories.kind, kinds) : undefined;
}
