/** HTTP routes of search (spec group "Search"): any authenticated principal (users and agents). */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
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
import { popularTools, recommendations, searchTools, suggestions, universalSearch } from './service.js';

export async function searchRoutes(app: FastifyInstance, { ctx }: { ctx: AppContext }): Promise<void> {
  requireAuth(app, ctx.auth);
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['search'];
  const security = USER_SECURITY;

  r.get(
    '/search',
    {
      schema: {
        tags,
        security,
        operationId: 'search.universal',
        summary: "Universal search: services and tools, plus the caller's own memories and sessions, grouped by type",
        querystring: UniversalQuery,
        response: { 200: UniversalResult, ...errorResponses(403) },
      },
    },
    async (req) => universalSearch(ctx, principalOf(req), req.query),
  );
  r.get(
    '/search/tools',
    {
      schema: {
        tags,
        security,
        operationId: 'search.tools',
        summary: 'Search tools (full text + typo tolerance, blended with popularity); filters: category, tag, service',
        querystring: ToolSearchQuery,
        response: { 200: ToolSearchResult, ...errorResponses(403) },
      },
    },
    async (req) => searchTools(ctx, principalOf(req), req.query),
  );
  r.get(
    '/search/popular',
    {
      schema: {
        tags,
        security,
        operationId: 'search.popular',
        summary: 'Most-executed tools of published services over a window',
        querystring: PopularQuery,
        response: { 200: PopularResult, ...errorResponses(403) },
      },
    },
    async (req) => popularTools(ctx, req.query),
  );
  r.get(
    '/search/recommendations',
    {
      schema: {
        tags,
        security,
        operationId: 'search.recommendations',
        summary: 'Services recommended from what the caller uses, subscribes to and owns (each with a reason)',
        querystring: RecommendationsQuery,
        response: { 200: RecommendationsResult, ...errorResponses(403) },
      },
    },
    async (req) => recommendations(ctx, principalOf(req), req.query),
  );
  r.get(
    '/search/suggestions',
    {
      schema: {
        tags,
        security,
        operationId: 'search.suggestions',
        summary: 'Autocomplete: service names, tool names, categories and tags starting with q',
        querystring: SuggestionsQuery,
        response: { 200: SuggestionsResult, ...errorResponses(403) },
      },
    },
    async (req) => suggestions(ctx, principalOf(req), req.query),
  );
}
