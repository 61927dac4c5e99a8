/** TypeBox schemas of the search routes (responses modelled on Typesense/Algolia: hits with score and highlights). */
import { Type, type TSchema } from 'typebox';
import { Nullable, Timestamp } from '../../http/schemas.js';
import { ServiceClassFields, ServiceIdentityFields } from '../registry/schemas.js';

/** A highlighted field (Typesense `highlights[]`): HTML-escaped snippet with matches in `<mark>…</mark>`. */
export const HighlightSchema = Type.Object({
  field: Type.String(),
  snippet: Type.String(),
  matched_tokens: Type.Array(Type.String()),
});

const MatchSchema = Type.Union(
  [
    Type.Literal('text'),
    Type.Literal('fuzzy'),
    Type.Literal('substring'),
    Type.Literal('filter'),
    Type.Literal('semantic'),
  ],
  {
    description:
      'text: full-text match; fuzzy: trigram name similarity (typo); substring: name contains the query; filter: browsing without q; semantic: close in meaning (sentence vectors) without a full-text match',
  },
);

const ServiceRef = Type.Object({
  id: Type.String(),
  name: Type.String(),
  display_name: Type.String(),
  category: Nullable(Type.String()),
  tags: Type.Array(Type.String()),
  status: Type.String(),
  owned: Type.Boolean({ description: "true when the caller's account owns the service" }),
});

/** A ranked tool. */
export const ToolHitSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  method: Type.String(),
  status: Type.String(),
  service: ServiceRef,
  score: Type.Number({
    description:
      'text_score × (1 + 0.5 × popularity.score); popularity.score alone when browsing; with the semantic arm on and q given, the reciprocal-rank-fusion score of the full-text and semantic rankings (comparable within one answer only)',
  }),
  text_score: Type.Number({ description: 'full-text relevance (0 for semantic-only hits)' }),
  popularity: Type.Object({
    calls: Type.Integer({ description: 'calls in the popularity window' }),
    score: Type.Number({ description: 'log-normalised 0..1' }),
  }),
  match: MatchSchema,
  highlights: Type.Array(HighlightSchema),
});

export const ToolSearchQuery = Type.Object(
  {
    q: Type.Optional(
      Type.String({ maxLength: 200, description: 'free text; absent → browse by filters, most popular first' }),
    ),
    category: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    tag: Type.Optional(Type.String({ minLength: 1, maxLength: 50 })),
    service: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'service id or name' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  },
  { additionalProperties: false },
);

export const ToolSearchResult = Type.Object({
  data: Type.Array(ToolHitSchema),
  next_cursor: Nullable(Type.String()),
  query: Type.String(),
  found: Type.Integer({ description: 'matches in total (pages stop at 1000)' }),
  fuzzy: Type.Boolean({ description: 'typo-tolerant matching was available (pg_trgm)' }),
  relaxed: Type.Boolean({
    description:
      'tools matching any term (or a synonym) are shown: no tool matched every term, or the query is a question or phrasal verb (searched this way on every page)',
  }),
  corrected: Type.Record(Type.String(), Type.Array(Type.String()), {
    description:
      'typed words missing from the catalog → the catalog words also searched (1 typo from 4 letters, 2 from 8; a transposition is one)',
  }),
  ignored: Type.Array(Type.String(), { description: 'stop words left out of the query ("in", "a", "the", "how", …)' }),
  took_ms: Type.Integer(),
});

// ------------------------------------------------------------------ universal search

export const SEARCH_TYPES = ['service', 'tool', 'memory', 'session'] as const;

export const UniversalQuery = Type.Object(
  {
    q: Type.String({ minLength: 1, maxLength: 200 }),
    type: Type.Optional(
      Type.String({
        pattern: '^(service|tool|memory|session)(,(service|tool|memory|session))*$',
        description: 'comma-separated subset of service,tool,memory,session (default all)',
      }),
    ),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 20, default: 5, description: 'results per type' })),
  },
  { additionalProperties: false },
);

export const ServiceHitSchema = Type.Object({
  type: Type.Literal('service'),
  ...ServiceIdentityFields,
  ...ServiceClassFields,
  status: Type.String(),
  owned: Type.Boolean(),
  tool_count: Type.Integer(),
  score: Type.Number(),
  match: MatchSchema,
  highlights: Type.Array(HighlightSchema),
});

export const UniversalToolHit = Type.Object({ type: Type.Literal('tool'), ...ToolHitSchema.properties });

export const MemoryHitSchema = Type.Object({
  type: Type.Literal('memory'),
  id: Type.String(),
  content: Type.String({ description: 'first 500 characters' }),
  source: Type.String(),
  session_id: Nullable(Type.String()),
  agent_id: Nullable(Type.String()),
  created_at: Timestamp,
  score: Type.Number({ description: 'reciprocal-rank-fusion score of the memory search' }),
  similarity: Type.Number(),
  highlights: Type.Array(HighlightSchema),
});

export const SessionHitSchema = Type.Object({
  type: Type.Literal('session'),
  id: Type.String(),
  name: Nullable(Type.String()),
  status: Type.String(),
  agent_id: Nullable(Type.String()),
  execution_count: Type.Integer(),
  created_at: Timestamp,
  score: Type.Number(),
  highlights: Type.Array(HighlightSchema),
});

function group<T extends TSchema>(item: T) {
  return Type.Object({ found: Type.Integer(), data: Type.Array(item) });
}

export const UniversalResult = Type.Object({
  query: Type.String(),
  took_ms: Type.Integer(),
  results: Type.Object({
    services: Type.Optional(group(ServiceHitSchema)),
    tools: Type.Optional(group(UniversalToolHit)),
    memories: Type.Optional(group(MemoryHitSchema)),
    sessions: Type.Optional(group(SessionHitSchema)),
  }),
});

// ------------------------------------------------------------------ popular

/** `window` query parameter: `24h`, `7d`, `30d` or `90d`. */
export function windowParam(def: '24h' | '7d' | '30d' | '90d', description?: string) {
  return Type.Union([Type.Literal('24h'), Type.Literal('7d'), Type.Literal('30d'), Type.Literal('90d')], {
    default: def,
    ...(description ? { description } : {}),
  });
}

export const PopularQuery = Type.Object(
  {
    window: Type.Optional(windowParam('7d', 'rounded to whole UTC days (usage counters are daily)')),
    category: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, default: 10 })),
  },
  { additionalProperties: false },
);

const ToolRef = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  method: Type.String(),
  status: Type.String(),
});
const PublicServiceRef = Type.Object({
  id: Type.String(),
  name: Type.String(),
  display_name: Type.String(),
  category: Nullable(Type.String()),
  tags: Type.Array(Type.String()),
});

export const PopularResult = Type.Object({
  window: Type.String(),
  from_day: Type.String({ description: 'first UTC day counted (YYYY-MM-DD)' }),
  to_day: Type.String(),
  data: Type.Array(
    Type.Object({
      rank: Type.Integer(),
      tool: ToolRef,
      service: PublicServiceRef,
      calls: Type.Integer(),
      successes: Type.Integer(),
      failures: Type.Integer(),
      success_rate: Nullable(Type.Number()),
      avg_duration_ms: Type.Integer(),
    }),
  ),
});

// ------------------------------------------------------------------ recommendations

export const RecommendationsQuery = Type.Object(
  { limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, default: 10 })) },
  { additionalProperties: false },
);

export const RecommendationReason = Type.Union([
  Type.Literal('co_usage'),
  Type.Literal('similar_category'),
  Type.Literal('shared_tags'),
  Type.Literal('popular'),
  Type.Literal('new'),
]);

export const RecommendationsResult = Type.Object({
  personalized: Type.Boolean({ description: 'false on cold start (nothing used, subscribed or owned yet)' }),
  data: Type.Array(
    Type.Object({
      service: Type.Object({
        ...ServiceIdentityFields,
        ...ServiceClassFields,
        tool_count: Type.Integer(),
      }),
      top_tools: Type.Array(Type.Object({ id: Type.String(), name: Type.String() }), {
        description: 'up to 3, most called first',
      }),
      score: Type.Number(),
      reason: RecommendationReason,
      reason_detail: Type.String(),
    }),
  ),
});

// ------------------------------------------------------------------ suggestions

export const SuggestionsQuery = Type.Object(
  {
    q: Type.String({ minLength: 1, maxLength: 100, description: 'prefix typed so far' }),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10, default: 8 })),
  },
  { additionalProperties: false },
);

export const SuggestionsResult = Type.Object({
  query: Type.String(),
  data: Type.Array(
    Type.Object({
      type: Type.Union([Type.Literal('service'), Type.Literal('tool'), Type.Literal('tag'), Type.Literal('category')]),
      text: Type.String(),
      display: Type.Optional(Type.String()),
      id: Type.Optional(Type.String()),
      highlight: Type.String({ description: 'text with the typed prefix in <mark>…</mark> (HTML-escaped)' }),
      count: Type.Integer({ description: 'visible services carrying it' }),
    }),
  ),
});
