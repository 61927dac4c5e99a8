/** HTTP routes of search (spec group "Search"): any authenticated principal (users and agents). */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { TSchema } from 'typebox';
import type { AppContext } from '../../context.js';
import { principalOf, requireAuth } from '../../http/auth.js';
import { USER_SECURITY, errorResponses } from '../../http/schemas.js';
import {
  PopularQuery,
  PopularResult,
  RecommendationsQuery,
  RecommendationsResult,
  SuggestionsQuery,
  SuggestionsResult,
  ToolSearchQuery,
  ToolSearchResult,
  UniversalQuery,
  UniversalResult,
} from './schemas.js';
import { warmVocabulary } from './query.js';
import { popularTools, recommendations, searchTools, suggestions, universalSearch } from './service.js';

export async function searchRoutes(app: FastifyInstance, { ctx }: { ctx: AppContext }): Promise<void> {
  requireAuth(app, ctx.auth);
  // The typo vocabulary is built while the server starts, not by the first query.
  app.addHook('onReady', async () => warmVocabulary(ctx));
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['search'];
  const security = USER_SECURITY;
  /** Route options of one search GET: `querystring` in, `result` (200) or a problem (400/401/403/429) out. */
  const routeSchema = <Q extends TSchema, R extends TSchema>(operationId: string, summary: string, querystring: Q, result: R) => ({
    schema: { tags, security, operationId, summary, querystring, response: { 200: result, ...errorResponses(403) } },
  });

  r.get(
    '/search',
    routeSchema('search.universal', "Universal search: services and tools, plus the caller's own memories and sessions, grouped by type", UniversalQuery, UniversalResult),
    async (req) => universalSearch(ctx, principalOf(req), req.query),
  );
  r.get(
    '/search/tools',
    routeSchema('search.tools', 'Search tools (full text + typo tolerance, blended with popularity); filters: category, tag, service', ToolSearchQuery, ToolSearchResult),
    async (req) => searchTools(ctx, principalOf(req), req.query),
  );
  r.get(
    '/search/popular',
    routeSchema('search.popular', 'Most-executed tools of published services over a window', PopularQuery, PopularResult),
    async (req) => popularTools(ctx, req.query),
  );
  r.get(
    '/search/recommendations',
    routeSchema('search.recommendations', 'Services recommended from what the caller uses, subscribes to and owns (each with a reason)', RecommendationsQuery, RecommendationsResult),
    async (req) => recommendations(ctx, principalOf(req), req.query),
  );
  r.get(
    '/search/suggestions',
    routeSchema('search.suggestions', 'Autocomplete: service names, tool names, categories and tags starting with q', SuggestionsQuery, SuggestionsResult),
    async (req) => suggestions(ctx, principalOf(req), req.query),
  );
}
