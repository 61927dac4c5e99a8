/**
 * User memory as a principal sees it: ONE function per operation of the `/memory` group, each
 * taking the caller's principal. Every face calls these and nothing else — REST (`/memory…`), the
 * MCP `remember` / `recall` tools, the deployed-agent runtime's `context.userMemory` (the broker)
 * and the unified `/search` — so none can skip the check that lives here:
 *
 * - the credential's scope (RFC 6749 §3.3), for agent tokens and API keys alike (a user's own access
 *   token holds every scope, `hasScope` in http/auth.ts): `memory:read` to search, list, count and
 *   read summaries, timelines and the agent context; `memory:write` to add, delete and summarize →
 *   403 `insufficient_scope` naming the scope;
 * - then the account and agent scoping of the storage functions (service.ts, summaries.ts,
 *   timeline.ts, agent-context.ts: another account's session answers 404, an agent sees only its
 *   own memories), which take the principal's {@link SessionActor} and check no scope themselves.
 *
 * The same two scopes guard agent key/value memory (agent-memory/access.ts): "memory" is one kind
 * of operation for a credential, whichever store it reaches.
 */
import type { AppContext } from '../../context.js';
import { actorOf, requireScope, type Principal } from '../../http/auth.js';
import type { Page } from '../../http/pagination.js';
import { agentContext, type AgentContext } from './agent-context.js';
import {
  addMemory,
  deleteMemories,
  listMemories,
  listMemoriesPaged,
  memoryStats,
  searchMemories,
  type AddMemoryInput,
  type MemoryPage,
  type MemoryStats,
  type SearchInput,
  type SearchResult,
} from './service.js';
import { getSessionSummary, summarizeSession, type SummaryView } from './summaries.js';
import { sessionTimeline, type TimelineEvent } from './timeline.js';
import type { MemoryFilter, MemoryView } from './views.js';

/**
 * Store a memory for the caller (`POST /memory`, MCP `remember`, `context.userMemory.add`).
 * @throws AppError insufficient_scope (no `memory:write`), and whatever service.ts `addMemory` throws
 */
export function addMemoryAs(ctx: AppContext, p: Principal, input: AddMemoryInput): Promise<MemoryView> {
  requireScope(p, 'memory:write');
  return addMemory(ctx, actorOf(p), input);
}

/**
 * Search the caller's memories (`GET /memory/search`, MCP `recall`, `context.userMemory.search`,
 * `/search` with memories).
 * @throws AppError insufficient_scope (no `memory:read`), and whatever `searchMemories` throws
 */
export function searchMemoriesAs(ctx: AppContext, p: Principal, input: SearchInput): Promise<SearchResult> {
  requireScope(p, 'memory:read');
  return searchMemories(ctx, actorOf(p), input);
}

/** The caller's memories, keyset-paginated (`GET /memory`). @throws AppError insufficient_scope (no `memory:read`) */
export function listMemoriesAs(
  ctx: AppContext,
  p: Principal,
  q: MemoryFilter & { limit?: number; cursor?: string },
): Promise<Page<MemoryView>> {
  requireScope(p, 'memory:read');
  return listMemories(ctx, actorOf(p), q);
}

/** The caller's memories by page (`GET /memory/paginated`). @throws AppError insufficient_scope (no `memory:read`) */
export function listMemoriesPagedAs(
  ctx: AppContext,
  p: Principal,
  q: MemoryFilter & { page?: number; page_size?: number },
): Promise<MemoryPage> {
  requireScope(p, 'memory:read');
  return listMemoriesPaged(ctx, actorOf(p), q);
}

/** Statistics of the caller's memories (`GET /memory/stats`). @throws AppError insufficient_scope (no `memory:read`) */
export function memoryStatsAs(ctx: AppContext, p: Principal, f: { agent_id?: string } = {}): Promise<MemoryStats> {
  requireScope(p, 'memory:read');
  return memoryStats(ctx, actorOf(p), f);
}

/** The agent context (`GET /memory/context/agent`). @throws AppError insufficient_scope (no `memory:read`) */
export function agentContextAs(
  ctx: AppContext,
  p: Principal,
  q: { q?: string; agent_id?: string; limit?: number },
): Promise<AgentContext> {
  requireScope(p, 'memory:read');
  return agentContext(ctx, actorOf(p), q);
}

/** A session's summary (`GET /memory/sessions/:id`). @throws AppError insufficient_scope (no `memory:read`) | not_found */
export function getSessionSummaryAs(ctx: AppContext, p: Principal, sessionId: string): Promise<SummaryView> {
  requireScope(p, 'memory:read');
  return getSessionSummary(ctx, actorOf(p), sessionId);
}

/** A session's timeline (`GET /memory/sessions/:id/timeline`). @throws AppError insufficient_scope (no `memory:read`) | not_found */
export function sessionTimelineAs(
  ctx: AppContext,
  p: Principal,
  sessionId: string,
  q: { limit?: number; cursor?: string },
): Promise<Page<TimelineEvent>> {
  requireScope(p, 'memory:read');
  return sessionTimeline(ctx, actorOf(p), sessionId, q);
}

/**
 * Build (or rebuild) a session's summary, stored as a memory (`POST /memory/sessions/:id/summarize`).
 * @throws AppError insufficient_scope (no `memory:write`) | not_found, and the summarizer's errors
 */
export function summarizeSessionAs(ctx: AppContext, p: Principal, sessionId: string): Promise<SummaryView> {
  requireScope(p, 'memory:write');
  return summarizeSession(ctx, actorOf(p), sessionId);
}

/**
 * Delete the caller's memories and summaries (`DELETE /memory`).
 * @throws AppError insufficient_scope (no `memory:write`) | not_found (session)
 */
export function deleteMemoriesAs(
  ctx: AppContext,
  p: Principal,
  q: { session_id?: string },
): Promise<{ deleted: number; deleted_summaries: number }> {
  requireScope(p, 'memory:write');
  return deleteMemories(ctx, actorOf(p), q);
}
