/** HTTP routes of search (spec group "Search"): any authenticated principal (users and agents). */
import type { FastifyInstance, RouteShorthandOptions } from 'fastify';
import type { Static, TSchema } from 'typebox';
import type { AppContext } from '../../context.js';
import { principalOf, requireAuth, type Principal } from '../../http/auth.js';
import { operations } from '../../http/operations.js';
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
  const op = operations(['search'], USER_SECURITY);
  /**
   * One search GET: `querystring` in, `result` (200) or a problem (400/401/403/429) out; `run` gets
   * the caller and the validated query.
   */
  const search = <Q extends TSchema, R extends TSchema>(
    path: string,
    [operationId, summary]: [string, string],
    querystring: Q,
    result: R,
    run: (principal: Principal, query: Static<Q>) => Promise<Static<R>>,
  ) =>
    // Typed by this helper's signature (the type provider cannot follow generic schemas).
    app.get(
      path,
      op(operationId, summary, {
        querystring,
        response: { 200: result, ...errorResponses(403) },
      }) as RouteShorthandOptions,
      async (req) => run(principalOf(req), req.query as Static<Q>),
    );

  search(
    '/search',
    [
      'search.universal',
      "Universal search: services and tools, plus the caller's own memories and sessions, grouped by type",
    ],
    UniversalQuery,
    UniversalResult,
    (p, q) => universalSearch(ctx, p, q),
  );
  search(
    '/search/tools',
    [
      'search.tools',
      'Search tools (full text + typo tolerance, blended with popularity); filters: category, tag, service',
    ],
    ToolSearchQuery,
    ToolSearchResult,
    (p, q) => searchTools(ctx, p, q),
  );
  search(
    '/search/popular',
    ['search.popular', 'Most-executed tools of published services over a window'],
    PopularQuery,
    PopularResult,
    (_p, q) => popularTools(ctx, q),
  );
  search(
    '/search/recommendations',
    [
      'search.recommendations',
      'Services recommended from what the caller uses, subscribes to and owns (each with a reason)',
    ],
    RecommendationsQuery,
    RecommendationsResult,
    (p, q) => recommendations(ctx, p, q),
  );
  search(
    '/search/suggestions',
    ['search.suggestions', 'Autocomplete: service names, tool names, categories and tags starting with q'],
    SuggestionsQuery,
    SuggestionsResult,
    (p, q) => suggestions(ctx, p, q),
  );
}
