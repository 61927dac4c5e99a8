/**
 * Search (spec group "Search"): tool search ranked by full-text relevance blended with popularity,
 * universal search over services, tools and the caller's own memories and sessions, popular tools,
 * personalised recommendations and autocomplete.
 *
 * Registry data comes only through the registry's catalog functions (`registry/catalog.ts`), usage
 * through the sessions module's counter readers, memories through `searchMemories`.
 * Decisions (docs/adr/0111-search-pagination-score-ordered-results-page-with.md and the other search records in docs/adr/): offset cursors over score-ordered results (max 1000, Algolia's
 * `paginationLimitedTo`), popularity = log-normalised calls over SEARCH_POPULARITY_DAYS cached for
 * SEARCH_POPULARITY_CACHE_MS, windows rounded to whole UTC days.
 */
import type { AppContext } from '../../context.js';
import { accountOf, hasScope, type Principal } from '../../http/auth.js';
import { AppError } from '../../http/errors.js';
import { searchMemoriesAs } from '../memory/access.js';
import {
  getCatalogServices,
  getCatalogTools,
  listCatalogToolsOf,
  listOwnedCatalogServices,
  newestCatalogServices,
  publishedServiceIdsIn,
  queryTerms,
  searchCatalogServices,
  similarCatalogServices,
  suggestCatalog,
  type CatalogService,
} from '../registry/catalog.js';
import { actorOf } from '../sessions/service.js';
import { coUsedServices, searchSessionsByName, usageBreakdown } from '../sessions/stats.js';
import { topServices, topTools } from '../sessions/usage.js';
import { subscribedServiceIds } from '../subscriptions/service.js';
import { highlightFields, markPrefix } from './highlight.js';
import { dayBefore, searchTools, toolPopularity, windowDays } from './tools.js';

export {
  dayBefore,
  MAX_OFFSET,
  searchTools,
  toolPopularity,
  windowDays,
  type ToolHitView,
  type ToolSearchInput,
} from './tools.js';

// ------------------------------------------------------------------ /search (universal)

export type SearchType = 'service' | 'tool' | 'memory' | 'session';

/** Cosine similarity below which a memory is not a universal-search hit (the vector arm always returns neighbours). */
const MEMORY_MIN_SIMILARITY = 0.2;

/**
 * Universal search: services and tools visible to the caller, and the caller's own memories (hybrid
 * semantic + full-text search of the memory module) and sessions (by name), grouped by type, each
 * group ranked by its own score.
 */
export async function universalSearch(
  ctx: AppContext,
  principal: Principal,
  input: { q: string; type?: string; limit?: number },
) {
  const started = performance.now();
  const q = input.q.trim();
  if (!q)
    throw new AppError('validation_failed', 'q must not be blank', {
      errors: [{ in: 'query', pointer: '/q', message: 'must not be blank' }],
    });
  const limit = input.limit ?? 5;
  const types = new Set<SearchType>(
    (input.type ? input.type.split(',') : ['service', 'tool', 'memory', 'session']) as SearchType[],
  );
  // memories need `memory:read` (memory/access.ts): asked for by name → 403; by default → left out
  if (!input.type && !hasScope(principal, 'memory:read')) types.delete('memory');
  const terms = queryTerms(q);
  const account = accountOf(principal);
  const actor = actorOf(principal);

  const [services, tools, memories, sessions] = await Promise.all([
    types.has('service') ? searchCatalogServices(ctx, account, { q, limit }) : null,
    types.has('tool') ? searchTools(ctx, principal, { q, limit }) : null,
    types.has('memory')
      ? searchMemoriesAs(ctx, principal, { q, limit, mode: 'hybrid', threshold: MEMORY_MIN_SIMILARITY })
      : null,
    types.has('session') ? searchSessionsByName(ctx, actor, q, limit) : null,
  ]);
  const fuzzy = tools?.fuzzy ?? true;
  const results: Record<string, { found: number; data: unknown[] }> = {};
  if (services) {
    results.services = {
      found: services.found,
      data: services.hits.map((s) => ({
        type: 'service' as const,
        ...s,
        highlights: highlightFields(
          [
            ['name', s.name],
            ['display_name', s.display_name],
            ['description', s.description],
            ['category', s.category],
          ],
          terms,
          { fuzzy, maxLength: 200 },
        ),
      })),
    };
  }
  if (tools) results.tools = { found: tools.found, data: tools.data.map((t) => ({ type: 'tool' as const, ...t })) };
  if (memories) {
    results.memories = {
      found: memories.data.length,
      data: memories.data.map((m) => ({
        type: 'memory' as const,
        id: m.id,
        content: m.content.slice(0, 500),
        source: m.source,
        session_id: m.session_id,
        agent_id: m.agent_id,
        created_at: m.created_at,
        score: m.score,
        similarity: m.similarity,
        highlights: highlightFields([['content', m.content]], terms, { fuzzy: false, maxLength: 200 }),
      })),
    };
  }
  if (sessions) {
    results.sessions = {
      found: sessions.found,
      data: sessions.data.map((s) => ({
        type: 'session' as const,
        id: s.id,
        name: s.name,
        status: s.status,
        agent_id: s.agent_id,
        execution_count: s.execution_count,
        created_at: s.created_at,
        score: s.leading ? 1 : 0.5,
        highlights: highlightFields([['name', s.name]], terms, { fuzzy: false }),
      })),
    };
  }
  return { query: q, took_ms: Math.round(performance.now() - started), results };
}

// ------------------------------------------------------------------ /search/popular

/**
 * Most-executed tools over the window (all users' calls, from the usage counters), restricted to
 * tools of published services, joined with their tool and service details.
 */
export async function popularTools(
  ctx: AppContext,
  input: { window?: '24h' | '7d' | '30d' | '90d'; category?: string; limit?: number },
) {
  const window = input.window ?? '7d';
  const limit = input.limit ?? 10;
  const now = new Date();
  const fromDay = dayBefore(now, windowDays(window));
  const toDay = dayBefore(now, 0);
  // With a category, count only that category's services (so busier categories cannot crowd it out).
  const usage = input.category
    ? (
        await usageBreakdown(ctx, {
          by: 'tool',
          serviceIds: await publishedServiceIdsIn(ctx, input.category),
          sinceDay: fromDay,
          untilDay: toDay,
          limit: limit * 2,
        })
      ).map((r) => ({
        tool_id: r.key,
        calls: r.calls,
        successes: r.successes,
        failures: r.failures,
        avg_duration_ms: r.avg_duration_ms,
      }))
    : await topTools(ctx, { since: fromDay, until: toDay, limit: 500 });
  const details = new Map(
    (
      await getCatalogTools(
        ctx,
        null,
        usage.map((u) => u.tool_id),
      )
    ).map((t) => [t.id, t]),
  );
  const data = [];
  for (const u of usage) {
    const t = details.get(u.tool_id);
    if (!t || (input.category && t.service.category !== input.category)) continue;
    data.push({
      rank: data.length + 1,
      tool: { id: t.id, name: t.name, description: t.description, method: t.method, status: t.status },
      service: {
        id: t.service.id,
        name: t.service.name,
        display_name: t.service.display_name,
        category: t.service.category,
        tags: t.service.tags,
      },
      calls: u.calls,
      successes: u.successes,
      failures: u.failures,
      success_rate: u.calls ? Math.round((u.successes / u.calls) * 10_000) / 10_000 : null,
      avg_duration_ms: u.avg_duration_ms,
    });
    if (data.length >= limit) break;
  }
  return { window, from_day: fromDay, to_day: toDay, data };
}

// ------------------------------------------------------------------ /search/recommendations

type Reason = 'co_usage' | 'similar_category' | 'shared_tags' | 'popular' | 'new';

interface Candidate {
  service: CatalogService;
  score: number;
  reason: Reason;
  detail: string;
}

/** Days of the caller's history that shape recommendations. */
const PROFILE_DAYS = 90;

/**
 * Personalised service recommendations for the caller's account. "Has" = services it used in the
 * last 90 days, subscribes to or owns; those are never recommended. Signals: co-usage (services
 * used by other accounts that use the same services), same category, shared tags; each result
 * carries its strongest `reason`. Cold start (nothing used, subscribed or owned) and any shortfall
 * are filled with popular services, then the newest ones.
 */
export async function recommendations(ctx: AppContext, principal: Principal, input: { limit?: number }) {
  const limit = input.limit ?? 10;
  const account = accountOf(principal);
  const now = new Date();
  const sinceDay = dayBefore(now, PROFILE_DAYS);
  const [used, subscribed, owned] = await Promise.all([
    topServices(ctx, { userId: account, since: sinceDay, limit: 100 }),
    subscribedServiceIds(ctx, account),
    listOwnedCatalogServices(ctx, account),
  ]);
  const profileIds = [...new Set([...used.map((u) => u.service_id), ...subscribed])];
  const have = new Set([...profileIds, ...owned.map((s) => s.id)]);
  const personalized = have.size > 0;
  const picked = new Map<string, Candidate>();

  if (profileIds.length) {
    const profile = await getCatalogServices(ctx, '*', profileIds);
    const weight = new Map(used.map((u) => [u.service_id, 1 + Math.log1p(u.calls)]));
    const catCount = new Map<string, { n: number; example: string }>();
    const tagCount = new Map<string, number>();
    for (const s of profile) {
      const w = weight.get(s.id) ?? 1;
      if (s.category) {
        const c = catCount.get(s.category.toLowerCase());
        catCount.set(s.category.toLowerCase(), { n: (c?.n ?? 0) + w, example: c?.example ?? s.display_name });
      }
      for (const t of s.tags) tagCount.set(t.toLowerCase(), (tagCount.get(t.toLowerCase()) ?? 0) + w);
    }
    const topCats = [...catCount.entries()].sort((a, b) => b[1].n - a[1].n).slice(0, 10);
    const topTags = [...tagCount.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 20)
      .map(([t]) => t);
    const [similar, co] = await Promise.all([
      similarCatalogServices(ctx, {
        categories: topCats.map(([c]) => c),
        tags: topTags,
        excludeIds: [...have],
        limit: 50,
      }),
      coUsedServices(ctx, { serviceIds: profileIds, excludeUserId: account, sinceDay, limit: 50 }),
    ]);
    const coServices = new Map(
      (
        await getCatalogServices(
          ctx,
          null,
          co.map((c) => c.service_id),
        )
      ).map((s) => [s.id, s]),
    );
    const maxUsers = Math.max(1, ...co.map((c) => c.users));
    for (const c of co) {
      const s = coServices.get(c.service_id);
      if (!s || have.has(s.id) || s.status !== 'published') continue;
      picked.set(s.id, {
        service: s,
        score: 2 * (0.5 + (0.5 * c.users) / maxUsers),
        reason: 'co_usage',
        detail: `Used by ${c.users} other ${c.users === 1 ? 'account' : 'accounts'} that use the same services as you`,
      });
    }
    for (const s of similar) {
      const cat = s.category_match ? 1 : 0;
      const tags = Math.min(s.shared_tags.length, 3) * 0.4;
      const prev = picked.get(s.id);
      const base = prev?.score ?? 0;
      const score = base + cat + tags;
      let reason: Reason = prev?.reason ?? (cat >= tags ? 'similar_category' : 'shared_tags');
      let detail = prev?.detail ?? '';
      if (!prev) {
        if (reason === 'similar_category')
          detail = `In ${s.category}, like ${catCount.get((s.category ?? '').toLowerCase())?.example ?? 'services you use'}`;
        else detail = `Shares tags with services you use: ${s.shared_tags.slice(0, 3).join(', ')}`;
      } else if (cat + tags > base) {
        reason = cat >= tags ? 'similar_category' : 'shared_tags';
        detail =
          reason === 'similar_category'
            ? `In ${s.category}, like services you use`
            : `Shares tags with services you use: ${s.shared_tags.slice(0, 3).join(', ')}`;
      }
      picked.set(s.id, { service: s, score, reason, detail });
    }
  }

  const ranked = [...picked.values()]
    .sort((a, b) => b.score - a.score || (a.service.id < b.service.id ? 1 : -1))
    .slice(0, limit);
  if (ranked.length < limit) {
    const exclude = new Set([...have, ...ranked.map((r) => r.service.id)]);
    const popular = await topServices(ctx, { since: dayBefore(now, 30), limit: 100 });
    const popServices = new Map(
      (
        await getCatalogServices(
          ctx,
          null,
          popular.map((p) => p.service_id),
        )
      ).map((s) => [s.id, s]),
    );
    const maxCalls = Math.max(1, ...popular.map((p) => p.calls));
    for (const p of popular) {
      const s = popServices.get(p.service_id);
      if (!s || exclude.has(s.id)) continue;
      ranked.push({
        service: s,
        score: Math.round((Math.log1p(p.calls) / Math.log1p(maxCalls)) * 1000) / 2000,
        reason: 'popular',
        detail: `${p.calls} calls on the platform in the last 30 days`,
      });
      exclude.add(s.id);
      if (ranked.length >= limit) break;
    }
    if (ranked.length < limit) {
      for (const s of await newestCatalogServices(ctx, { excludeIds: [...exclude], limit: limit - ranked.length })) {
        ranked.push({
          service: s,
          score: 0,
          reason: 'new',
          detail: s.published_at ? `Published ${s.published_at.slice(0, 10)}` : 'Recently published',
        });
      }
    }
  }

  // Top tools of each recommended service: most called (popularity table), then oldest first.
  const toolsOf = await listCatalogToolsOf(
    ctx,
    ranked.map((r) => r.service.id),
  );
  const calls = (await toolPopularity(ctx)).byTool;
  const byService = new Map<string, Array<{ id: string; name: string }>>();
  for (const t of [...toolsOf].sort((a, b) => (calls.get(b.id) ?? 0) - (calls.get(a.id) ?? 0))) {
    const list = byService.get(t.service_id) ?? [];
    if (list.length < 3) list.push({ id: t.id, name: t.name });
    byService.set(t.service_id, list);
  }
  return {
    personalized,
    data: ranked.map((r) => ({
      service: {
        id: r.service.id,
        name: r.service.name,
        display_name: r.service.display_name,
        description: r.service.description,
        category: r.service.category,
        tags: r.service.tags,
        tool_count: r.service.tool_count,
      },
      top_tools: byService.get(r.service.id) ?? [],
      score: Math.round(r.score * 1000) / 1000,
      reason: r.reason,
      reason_detail: r.detail,
    })),
  };
}

// ------------------------------------------------------------------ /search/suggestions

const TYPE_ORDER = { service: 0, tool: 1, category: 2, tag: 3 } as const;

/**
 * Autocomplete for a typed prefix: service names, tool names, categories and tags visible to the
 * caller, at most `limit` (≤ 10). Completions whose whole text starts with the prefix come first,
 * then those where a later word does; more services first; kinds interleaved by that order.
 */
export async function suggestions(ctx: AppContext, principal: Principal, input: { q: string; limit?: number }) {
  const limit = input.limit ?? 8;
  const q = input.q.trim();
  if (!q) return { query: q, data: [] };
  const rows = await suggestCatalog(ctx, accountOf(principal), q, limit);
  rows.sort(
    (a, b) =>
      Number(b.leading) - Number(a.leading) ||
      b.count - a.count ||
      TYPE_ORDER[a.type] - TYPE_ORDER[b.type] ||
      a.text.length - b.text.length,
  );
  const seen = new Set<string>();
  const data = [];
  for (const r of rows) {
    const key = `${r.type}:${r.text.toLowerCase()}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const label =
      r.type === 'service' && r.display && !r.text.toLowerCase().startsWith(q.toLowerCase()) ? r.display : r.text;
    data.push({
      type: r.type,
      text: r.text,
      ...(r.display ? { display: r.display } : {}),
      ...(r.id ? { id: r.id } : {}),
      highlight: markPrefix(label, q),
      count: r.count,
    });
    if (data.length >= limit) break;
  }
  return { query: q, data };
}
