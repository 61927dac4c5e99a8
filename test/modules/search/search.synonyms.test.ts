/**
 * Plain-language tool search (issue 19 §1): the verbs people use for an API operation ("stop",
 * "write", "find", "newest") find operations named with the API's verbs (cancel, create, search,
 * latest) once no tool holds every typed word; a query whose words all match is not broadened;
 * abbreviations (repo ~ repository) match even when every word is required; a question's form
 * ("is …" a check, "which …" a list) and its phrasal verbs ("turn off" ~ disable) count too.
 */
import { describe, expect, it } from 'vitest';
import { questionGroups, synonymsOf } from '../../../src/modules/search/synonyms.js';
import { call, createUser, setupApp, type TestUser } from '../../helpers/app.js';
import { categoryService } from './fixtures.js';

const { app, ctx } = await setupApp();

type Hit = { name: string };

/** A published build service in its own category: cancel, start, get and list builds, a build's latest log. */
async function buildService(owner: TestUser) {
  return categoryService(app, ctx, owner, {
    prefix: 'builds',
    description: 'Continuous integration builds',
    tools: [
      { name: 'cancel_build', description: 'Cancel a build that is queued or in progress', method: 'POST' },
      { name: 'start_build', description: 'Start a build of a branch', method: 'POST' },
      { name: 'get_build', description: 'Get a build by its number', method: 'GET' },
      { name: 'list_builds', description: 'List the builds of a branch', method: 'GET' },
      { name: 'get_latest_log', description: 'Get the latest log of a build', method: 'GET' },
    ],
  });
}

async function names(user: TestUser, q: string, category: string): Promise<{ names: string[]; relaxed: boolean }> {
  const { body } = await call(
    app,
    { method: 'GET', url: `/search/tools?q=${encodeURIComponent(q)}&category=${category}`, headers: user.headers },
    200,
  );
  return { names: body.data.map((h: Hit) => h.name), relaxed: body.relaxed };
}

describe('search — synonyms of API verbs', () => {
  it('maps inflected words to their set and leaves other words alone', () => {
    expect(synonymsOf('stops')).toContain('cancel');
    expect(synonymsOf('changed')).toContain('update');
    expect(synonymsOf('running')).toContain('start');
    expect(synonymsOf('newest')).toContain('latest');
    expect(synonymsOf('weather')).toEqual([]);
  });

  it('finds cancel_build for "stop the build" (relaxed), the latest log for "newest log", and does not broaden "start build"', async () => {
    const svc = await buildService(await createUser(app));
    const u = await createUser(app);
    const stop = await names(u, 'stop the build', svc.category);
    expect(stop.relaxed).toBe(true);
    expect(stop.names[0]).toBe('cancel_build');
    expect((await names(u, 'newest log', svc.category)).names[0]).toBe('get_latest_log');
    // Every word matches: no relaxed search, so no synonyms.
    const start = await names(u, 'start build', svc.category);
    expect(start.relaxed).toBe(false);
    expect(start.names[0]).toBe('start_build');
  });

  it('matches a word and its abbreviation even when every word is required: "repository stats" finds repo_stats', async () => {
    const owner = await createUser(app);
    const svc = await categoryService(app, ctx, owner, {
      prefix: 'code',
      description: 'Source hosting',
      tools: [
        { name: 'repo_stats', description: 'Commit counts per week' },
        { name: 'org_members', description: 'Members and their roles' },
      ],
    });
    const u = await createUser(app);
    expect(await names(u, 'repository stats', svc.category)).toMatchObject({ names: ['repo_stats'], relaxed: false });
    expect((await names(u, 'organization members', svc.category)).names[0]).toBe('org_members');
  });

  it('reads question forms and phrasal verbs: "which" a list, a yes/no question a check, "who" people, "how many" a count, "turn off" disable', () => {
    expect(questionGroups(['which', 'files', 'changed'])).toEqual([['list']]);
    expect(questionGroups(['did', 'the', 'tests', 'pass'])).toEqual([['check']]);
    expect(questionGroups(['show', 'who', 'reviewed', 'it'])).toEqual([['users', 'people', 'members']]);
    expect(questionGroups(['how', 'many', 'builds'])).toEqual([['count', 'number', 'total']]);
    expect(questionGroups(['turn', 'off', 'the', 'schedule'])).toEqual([['disable']]);
    // An auxiliary verb opens a yes/no question only at the start; "what" likewise.
    expect(questionGroups(['list', 'builds', 'that', 'did', 'fail'])).toEqual([]);
    expect(questionGroups(['get', 'what', 'changed'])).toEqual([]);
    expect(questionGroups(['turn', 'the', 'schedule', 'off'])).toEqual([]);
  });

  it('searches a question relaxed with what it asks for: "is the schedule paused" finds the check, "turn off the schedule" the disable', async () => {
    const owner = await createUser(app);
    const svc = await categoryService(app, ctx, owner, {
      prefix: 'sched',
      description: 'Build schedules',
      tools: [
        { name: 'pause_schedule', description: 'Pause a build schedule until it is resumed' },
        // (not "whether": on a shared database search.typos expects "wether" to correct to "weather" alone)
        { name: 'check_schedule', description: 'Check if a build schedule is paused' },
        { name: 'disable_schedule', description: 'Disable a build schedule' },
        { name: 'get_schedule', description: 'Get a build schedule and when it is its turn to run' },
      ],
    });
    const u = await createUser(app);
    // Every word is in pause_schedule (and its name): only the question form puts the check first.
    const paused = await names(u, 'is the schedule paused', svc.category);
    expect(paused.relaxed).toBe(true);
    expect(paused.names[0]).toBe('check_schedule');
    // get_schedule holds both "turn" and "schedule"; the phrasal verb reads "turn off" as disable.
    const off = await names(u, 'turn off the schedule', svc.category);
    expect(off.relaxed).toBe(true);
    expect(off.names[0]).toBe('disable_schedule');
    // Not a question: every word matches, nothing is broadened.
    expect(await names(u, 'pause schedule', svc.category)).toMatchObject({ relaxed: false });
  });
});
