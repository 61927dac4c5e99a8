/**
 * A small catalog for the search and analytics tests, built through the public API: services
 * registered with the registry API against a loopback JSON upstream, one published through the
 * real publish flow (domain + functional verification), the others moved to `published` with the
 * registry's status function (as the execution tests do), subscriptions and tool executions.
 *
 * Words, categories and tags carry a per-run suffix so that runs sharing a PostgreSQL database
 * (and other test files) never see each other's rows in rankings.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../../src/context.js';
import { setServiceStatus } from '../../../src/modules/registry/service.js';
import { call, type TestUser } from '../../helpers/app.js';
import type { Upstream } from '../../helpers/upstreams.js';
import { publishService } from '../publishing/helpers.js';

/** Random lower-case letters (no digits: they must survive word tokenisation as one word). */
export function letters(n: number): string {
  const abc = 'bcdfghjklmnpqrstvwxz';
  return [...randomBytes(n)].map((b) => abc[b % abc.length]).join('');
}

export interface Svc {
  id: string;
  name: string;
  tools: Record<string, string>;
}

const SCHEMA_CITY = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
const SCHEMA_ID = { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] };

/** Register a manifest service on `upstream` and return its id and tool ids by name. */
export async function register(app: FastifyInstance, owner: TestUser, body: Record<string, unknown>): Promise<Svc> {
  const { body: s } = await call(
    app,
    { method: 'POST', url: '/owner/services', headers: owner.headers, payload: body },
    201,
  );
  return {
    id: s.id,
    name: s.name,
    tools: Object.fromEntries(s.tools.map((t: { name: string; id: string }) => [t.name, t.id])),
  };
}

/**
 * A service `<prefix>-<run>` in its own category of the same name (so rankings can be read within
 * one run's tools), with the given tools (`method`, `path` and `input_schema` default to GET, `/tN`
 * and an empty object), published unless `publish` is false.
 */
export async function categoryService(
  app: FastifyInstance,
  ctx: AppContext,
  owner: TestUser,
  opts: {
    prefix: string;
    description: string;
    tools: Array<{ name: string; description: string } & Record<string, unknown>>;
    publish?: boolean;
  },
): Promise<Svc & { category: string }> {
  const run = letters(6);
  const svc = await register(app, owner, {
    name: `${opts.prefix}-${run}`,
    display_name: `${opts.prefix[0].toUpperCase()}${opts.prefix.slice(1)} ${run}`,
    description: opts.description,
    base_url: 'http://127.0.0.1:9',
    category: `${opts.prefix}-${run}`,
    tools: opts.tools.map((t, i) => ({ method: 'GET', path: `/t${i}`, input_schema: { type: 'object' }, ...t })),
  });
  if (opts.publish !== false) await setServiceStatus(ctx, svc.id, 'published');
  return { ...svc, category: `${opts.prefix}-${run}` };
}

/** The catalog of one run. `word` is a made-up word unique to the run (e.g. `zephyrkqt`). */
export interface Catalog {
  run: string;
  word: string;
  category: string;
  otherCategory: string;
  tag: string;
  /** Published: weather-like service in `category`, tags [tag]; tools get_<word>, <word>_forecast, broken. */
  weather: Svc;
  /** Published: same category: recommended to users of `weather` (similar_category). */
  climate: Svc;
  /** Published: same category, never used by anyone (similar_category only). */
  radar: Svc;
  /** Published: other category, shares `tag` (shared_tags). */
  tagged: Svc;
  /** Published: unrelated category and tags; co-used with `weather` by a peer (co_usage). */
  finance: Svc;
  /** Published: pets in `otherCategory`, tools list_pets / adopt_pet (equal text relevance for "pet"). */
  pets: Svc;
  /** Draft of the owner: tool hidden_<word>. */
  draft: Svc;
}

/** Build the catalog: every service owned by `owner`; `weather` goes through the real publish flow. */
export async function buildCatalog(
  app: FastifyInstance,
  ctx: AppContext,
  owner: TestUser,
  upstream: Upstream,
): Promise<Catalog> {
  const run = letters(5);
  const word = `zephyr${run}`;
  const category = `cat-${run}`;
  const otherCategory = `other-${run}`;
  const tag = `tag-${run}`;
  const base = { base_url: upstream.url, auth: { type: 'none' } };

  const weather = await publishService(
    app,
    owner,
    upstream,
    {
      ...base,
      name: `${word}-weather`,
      display_name: `${word} Weather`,
      description: `Weather readings from the ${word} network`,
      category,
      tags: [tag, 'weather'],
      tools: [
        {
          name: `get_${word}`,
          description: 'Current weather for a city',
          method: 'GET',
          path: '/weather',
          input_schema: SCHEMA_CITY,
        },
        {
          name: `${word}_forecast`,
          description: `Five-day ${word} forecast for a city`,
          method: 'GET',
          path: '/weather',
          input_schema: SCHEMA_CITY,
        },
        {
          name: 'broken',
          description: 'Always fails upstream',
          method: 'GET',
          path: '/fail',
          input_schema: { type: 'object' },
        },
      ],
    },
    [{ tool: `get_${word}`, arguments: { city: 'Oslo' }, expect: { status: 200 } }],
  ).then((s: { id: string; name: string; tools: Array<{ name: string; id: string }> }) => ({
    id: s.id,
    name: s.name,
    tools: Object.fromEntries(s.tools.map((t) => [t.name, t.id])),
  }));

  const climate = await register(app, owner, {
    ...base,
    name: `climate-${run}`,
    display_name: `Climate ${run}`,
    description: 'Long-term climate data',
    category,
    tags: ['climate'],
    tools: [
      {
        name: 'climate_normals',
        description: 'Climate normals for a city',
        method: 'GET',
        path: '/weather',
        input_schema: SCHEMA_CITY,
      },
    ],
  });
  const radar = await register(app, owner, {
    ...base,
    name: `radar-${run}`,
    display_name: `Radar ${run}`,
    description: 'Rain radar images',
    category,
    tags: ['radar'],
    tools: [
      {
        name: 'radar_image',
        description: 'Rain radar image for a city',
        method: 'GET',
        path: '/weather',
        input_schema: SCHEMA_CITY,
      },
    ],
  });
  const tagged = await register(app, owner, {
    ...base,
    name: `almanac-${run}`,
    display_name: `Almanac ${run}`,
    description: 'Sunrise and tides',
    category: `almanac-${run}`,
    tags: [tag],
    tools: [
      {
        name: 'sunrise',
        description: 'Sunrise time for a city',
        method: 'GET',
        path: '/weather',
        input_schema: SCHEMA_CITY,
      },
    ],
  });
  const finance = await register(app, owner, {
    ...base,
    name: `finance-${run}`,
    display_name: `Finance ${run}`,
    description: 'Stock quotes',
    category: `finance-${run}`,
    tags: [`money-${run}`],
    tools: [
      {
        name: 'stock_quote',
        description: 'Latest stock quote by symbol id',
        method: 'GET',
        path: '/users/{id}',
        input_schema: SCHEMA_ID,
      },
    ],
  });
  const pets = await register(app, owner, {
    ...base,
    name: `pets-${run}`,
    display_name: `Pets ${run}`,
    description: `Pet adoption ${run}`,
    category: otherCategory,
    tags: [`animals-${run}`],
    tools: [
      {
        name: 'list_pets',
        description: 'List the pet records',
        method: 'GET',
        path: '/users/{id}',
        input_schema: SCHEMA_ID,
      },
      {
        name: 'adopt_pet',
        description: 'Adopt the pet records',
        method: 'GET',
        path: '/users/{id}',
        input_schema: SCHEMA_ID,
      },
    ],
  });
  const draft = await register(app, owner, {
    ...base,
    name: `draft-${run}`,
    display_name: `Draft ${word}`,
    description: `Unpublished ${word} service`,
    category,
    tags: [tag],
    tools: [
      {
        name: `hidden_${word}`,
        description: `Hidden ${word} tool`,
        method: 'GET',
        path: '/weather',
        input_schema: SCHEMA_CITY,
      },
    ],
  });
  for (const s of [climate, radar, tagged, finance, pets]) await setServiceStatus(ctx, s.id, 'published');
  return { run, word, category, otherCategory, tag, weather, climate, radar, tagged, finance, pets, draft };
}

/** Subscribe `user` (free plan). */
export async function subscribe(app: FastifyInstance, user: TestUser, serviceId: string): Promise<string> {
  return (
    await call(
      app,
      {
        method: 'POST',
        url: '/subscriptions',
        headers: user.headers,
        payload: { service_id: serviceId, plan: 'free' },
      },
      201,
    )
  ).body.id;
}

/** A new session of `user`; returns its id. */
export async function session(app: FastifyInstance, user: TestUser, name?: string): Promise<string> {
  return (
    await call(app, { method: 'POST', url: '/v1/agents', headers: user.headers, payload: name ? { name } : {} }, 201)
  ).body.id;
}

/** Execute `tool` of `service` `times` times in `sessionId`; returns the execution statuses. */
export async function run(
  app: FastifyInstance,
  user: TestUser,
  sessionId: string,
  service: string,
  tool: string,
  args: Record<string, unknown>,
  times = 1,
): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < times; i++) {
    const res = await app.inject({
      method: 'POST',
      url: `/v1/agents/${sessionId}/execute`,
      headers: user.headers,
      payload: { service, tool, arguments: args },
    });
    if (res.statusCode !== 200) throw new Error(`execute ${service}/${tool}: ${res.statusCode} ${res.body}`);
    out.push(res.json().status);
  }
  return out;
}
