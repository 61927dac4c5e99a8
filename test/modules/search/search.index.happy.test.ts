/**
 * The in-process tool index (issue 19 §1 latency) answers as the SQL ranking does — same hits in
 * the same order, same scores and `found` — for typos, plain questions, keywords, prefixes, stop
 * words and the relaxed any-word search; it follows this instance's writes at once; and a tool it
 * still holds after another instance hid it (simulated: a status change without this instance's
 * registry hook) is never shown. Every query is scoped to this run's category, so other suites'
 * tools in a shared database do not matter.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { searchCatalogTools } from '../../../src/modules/registry/catalog.js';
import { planQuery } from '../../../src/modules/search/query.js';
import { searchStateOf } from '../../../src/modules/search/state.js';
import { indexedToolSearch } from '../../../src/modules/search/tools.js';
import { call, createUser, setupApp, type TestUser } from '../../helpers/app.js';
import { setServiceStatus } from '../../../src/modules/registry/service.js';
import { letters, register } from './fixtures.js';

const { app, ctx } = await setupApp();

/** A published service in `category` with these tools (GET, no parameters). */
async function service(
  owner: TestUser,
  category: string,
  description: string,
  tools: Array<{ name: string; description: string }>,
  tags: string[] = [],
) {
  const svc = await register(app, owner, {
    name: `ix-${letters(10)}`,
    display_name: `Index ${letters(4)}`,
    description,
    base_url: 'http://127.0.0.1:9',
    category,
    tags,
    tools: tools.map((t, i) => ({ method: 'GET', path: `/t${i}`, input_schema: { type: 'object' }, ...t })),
  });
  await setServiceStatus(ctx, svc.id, 'published');
  return svc;
}

const TOOLS = [
  {
    name: 'issues_create',
    description: 'Create an issue\n\nAny user with pull access to a repository can create an issue.',
  },
  {
    name: 'issues_list_for_repo',
    description: 'List repository issues\n\nList issues in a repository. Only open issues will be listed.',
  },
  { name: 'issues_create_comment', description: 'Create an issue comment' },
  { name: 'repos_list_for_authenticated_user', description: 'List repositories for the authenticated user' },
  { name: 'repos_create_fork', description: 'Create a fork\n\nCreate a fork for the authenticated user.' },
  { name: 'actions_cancel_workflow_run', description: 'Cancel a workflow run\n\nCancels a workflow run using its id.' },
  { name: 'getForecast', description: 'Forecast for a city: temperature, wind and rain for the next days' },
  { name: 'rate_limit_get', description: 'Get rate limit status for the authenticated user' },
  { name: 'echo', description: 'Echo the request back' },
  { name: 'plain_text', description: 'Answer in plain text instead of JSON' },
];

const QUERIES = [
  'create issue',
  'issues',
  'isue',
  'wether forcast',
  'temperature in a city',
  'how many API calls do I have left',
  'fork a repostory',
  'stop a running workflow',
  'list my repos',
  'repo',
  'the',
  'ecoh',
  'creat',
  'get_forecast',
  'open a new bug report',
];

describe('search — in-process tool index', () => {
  it('ranks as the SQL ranking does', async () => {
    const owner = await createUser(app);
    const category = `ix-${letters(8)}`;
    await service(owner, category, 'GitHub-like tools for the index test', TOOLS, ['repos']);
    await service(owner, category, 'A mirror of the same tools', TOOLS.slice(0, 6), ['issues']);
    const user = await createUser(app);
    let viaIndex = 0;
    for (const q of QUERIES) {
      const plan = await planQuery(ctx, q);
      for (const mode of ['all', 'any'] as const) {
        const input = {
          q,
          category,
          limit: 20,
          offset: 0,
          popularity: new Map<string, number>(),
          groups: mode === 'any' ? plan.expanded : plan.groups,
          mode,
        };
        const index = await indexedToolSearch(ctx, user.userId, input);
        const sqlRes = await searchCatalogTools(ctx, user.userId, input);
        if (!index) continue;
        viaIndex++;
        const view = (r: typeof sqlRes) => ({
          found: r.found,
          hits: r.hits.map((h) => [h.tool.name, h.service.id, h.score, h.text_score, h.match]),
        });
        expect(view(index), `${q} (${mode})`).toEqual(view(sqlRes));
      }
    }
    expect(viaIndex).toBe(QUERIES.length * 2);
  });

  it('finds a tool this instance just published, and never shows one hidden behind its back', async () => {
    const owner = await createUser(app);
    const user = await createUser(app);
    const word = `zq${letters(8)}`;
    const category = `ixf-${letters(8)}`;
    const first = await service(owner, category, 'First', [{ name: `${word}_one`, description: 'The first tool' }]);
    const search = async (q: string) =>
      (await call(app, { method: 'GET', url: `/search/tools?q=${q}&category=${category}`, headers: user.headers }, 200))
        .body;
    expect((await search(word)).data.map((h: { name: string }) => h.name)).toEqual([`${word}_one`]);
    expect(searchStateOf(ctx).toolIndex?.tools.some((t) => t.lname === `${word}_one`)).toBe(true);

    await service(owner, category, 'Second', [{ name: `${word}_two`, description: 'The second tool' }]);
    expect((await search(word)).data.map((h: { name: string }) => h.name).sort()).toEqual([
      `${word}_one`,
      `${word}_two`,
    ]);

    // Another instance unpublishes the first service: this index still holds it as published.
    await ctx.db.execute(sql`update services set status = 'unpublished' where id = ${first.id}`);
    const body = await search(word);
    expect(body.data.map((h: { name: string }) => h.name)).toEqual([`${word}_two`]);
  });
});
