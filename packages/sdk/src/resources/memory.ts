/** `memory` (a user's semantic memories) and `agentMemory` (an agent's key-value store, spec "Agent memory (v2)") groups. */
import { type Body, type Core, type Item, type Query, cursorList, unwrap } from '../core.js';

/** Memories: add, list, semantic + full-text search, session summaries. */
export class MemoryResource {
  constructor(private readonly core: Core) {}

  /** Store a memory (`content` ≤ 16 KiB; `kind` `note` by default, or `summary`); it is embedded for search. */
  add(body: Body<'memory.create'>) {
    return unwrap(this.core.http.POST('/memory', { body }));
  }
  /** Memories, newest first (cursor list); notes and summaries unless `kind` asks for `execution` or `all`. */
  list(query: Omit<Query<'memory.list'>, 'cursor'> = {}) {
    return cursorList<Item<'memory.list'>>((cursor) =>
      unwrap(this.core.http.GET('/memory', { params: { query: { ...query, cursor } } })),
    );
  }
  /** Page-numbered listing (`page`, `page_size`, `total`). */
  listPaginated(query: Query<'memory.listPaginated'> = {}) {
    return unwrap(this.core.http.GET('/memory/paginated', { params: { query } }));
  }
  /** Delete all memories, or one session's. */
  deleteAll(query: Query<'memory.deleteAll'> = {}) {
    return unwrap(this.core.http.DELETE('/memory', { params: { query } }));
  }
  /**
   * Memories ranked for `q` (`mode` hybrid, vector or text); each hit's `score` is its relevance,
   * 0..1 (the order), `similarity` its cosine similarity, 0..1. Notes and summaries unless `kind`
   * asks for `execution` (the tool executions' memories) or `all`.
   */
  search(query: Query<'memory.search'>) {
    return unwrap(this.core.http.GET('/memory/search', { params: { query } }));
  }
  /** Context for an agent: the memories most relevant to `q`. */
  agentContext(query: Query<'memory.agentContext'>) {
    return unwrap(this.core.http.GET('/memory/context/agent', { params: { query } }));
  }
  sessionSummary(sessionId: string) {
    return unwrap(this.core.http.GET('/memory/sessions/{id}', { params: { path: { id: sessionId } } }));
  }
  sessionTimeline(sessionId: string, query: Omit<Query<'memory.sessionTimeline'>, 'cursor'> = {}) {
    return cursorList<Item<'memory.sessionTimeline'>>((cursor) =>
      unwrap(
        this.core.http.GET('/memory/sessions/{id}/timeline', {
          params: { path: { id: sessionId }, query: { ...query, cursor } },
        }),
      ),
    );
  }
  summarizeSession(sessionId: string) {
    return unwrap(this.core.http.POST('/memory/sessions/{id}/summarize', { params: { path: { id: sessionId } } }));
  }
  stats(query: Query<'memory.stats'> = {}) {
    return unwrap(this.core.http.GET('/memory/stats', { params: { query } }));
  }
}

/**
 * An agent's key-value memory. Without `agentId` the calling agent's own store (agent token, i.e.
 * a client built with `clientId`/`clientSecret`); with it, another agent's store through a grant
 * or as its owner.
 */
export class AgentMemoryResource {
  constructor(private readonly core: Core) {}

  /** Keys and values, optionally under `prefix` (cursor list). */
  list(query: Omit<Query<'agentMemory.list'>, 'cursor'> = {}, agentId?: string) {
    if (agentId)
      return cursorList<Item<'agentMemory.listOf'>>((cursor) =>
        unwrap(
          this.core.http.GET('/v2/agents/{id}/memory', {
            params: { path: { id: agentId }, query: { ...query, cursor } },
          }),
        ),
      );
    return cursorList<Item<'agentMemory.list'>>((cursor) =>
      unwrap(this.core.http.GET('/v2/memory', { params: { query: { ...query, cursor } } })),
    );
  }
  /** One entry of the calling agent. @throws AgentPlatformError `not_found` */
  get(key: string) {
    return unwrap(this.core.http.GET('/v2/memory/{key}', { params: { path: { key } } }));
  }
  /**
   * Create or replace an entry (`ttl_seconds` optional); of `agentId`'s store when given.
   * Optimistic concurrency (RFC 9110 §13.1): `ifMatch` is the ETag read before (`"<version>"`, the
   * entry's `version` quoted; `*` = only if it exists), `ifNoneMatch: '*'` creates only.
   * @throws AgentPlatformError `precondition_failed` (412) when the entry changed since `ifMatch` was read
   */
  put(
    key: string,
    value: unknown,
    opts: Omit<Body<'agentMemory.put'>, 'value'> & { agentId?: string; ifMatch?: string; ifNoneMatch?: '*' } = {},
  ) {
    const { agentId, ifMatch, ifNoneMatch, ...rest } = opts;
    const body = { ...rest, value };
    const header = {
      ...(ifMatch ? { 'if-match': ifMatch } : {}),
      ...(ifNoneMatch ? { 'if-none-match': ifNoneMatch } : {}),
    };
    if (agentId)
      return unwrap(
        this.core.http.PUT('/v2/agents/{id}/memory/{key}', { params: { path: { id: agentId, key }, header }, body }),
      );
    return unwrap(this.core.http.PUT('/v2/memory/{key}', { params: { path: { key }, header }, body }));
  }
  async delete(key: string): Promise<void> {
    await unwrap(this.core.http.DELETE('/v2/memory/{key}', { params: { path: { key } } }));
  }
  /** Who read or wrote `agentId`'s memory (cursor list). */
  audit(agentId: string, query: Omit<Query<'agentMemory.audit'>, 'cursor'> = {}) {
    return cursorList<Item<'agentMemory.audit'>>((cursor) =>
      unwrap(
        this.core.http.GET('/v2/agents/{id}/memory/audit', {
          params: { path: { id: agentId }, query: { ...query, cursor } },
        }),
      ),
    );
  }
}
