/**
 * Search without pg_trgm (SEARCH_FUZZY=off behaves as a server without the extension): full text,
 * prefixes and name substrings still match; the answer says `fuzzy: false`. Typos still match:
 * their correction against the catalog's vocabulary needs no extension.
 */
import { describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { letters, register } from './fixtures.js';
import { setServiceStatus } from '../../../src/modules/registry/service.js';

const { app, ctx } = await setupApp({ SEARCH_FUZZY: 'off' });

describe('search — without trigram matching', () => {
  it('matches words, prefixes, substrings and corrected typos', async () => {
    const owner = await createUser(app);
    const word = `quokka${letters(5)}`;
    const svc = await register(app, owner, {
      name: `${word}-svc`,
      description: 'Fallback test',
      base_url: 'http://127.0.0.1:9',
      tools: [
        {
          name: `fetch_${word}data`,
          description: `Fetch ${word} readings`,
          method: 'GET',
          path: '/x',
          input_schema: { type: 'object' },
        },
      ],
    });
    await setServiceStatus(ctx, svc.id, 'published');
    const u = await createUser(app);
    const get = async (q: string) =>
      (await call(app, { method: 'GET', url: `/search/tools?q=${encodeURIComponent(q)}`, headers: u.headers }, 200))
        .body;

    const exact = await get(word);
    expect(exact.fuzzy).toBe(false);
    expect(exact.data.map((t: { name: string }) => t.name)).toEqual([`fetch_${word}data`]);
    expect((await get(word.slice(0, 8))).data.map((t: { match: string }) => t.match)).toEqual(['text']); // prefix of the last term
    expect((await get(`${word.slice(2)}da`)).data.map((t: { match: string }) => t.match)).toEqual(['substring']);
    const typo = await get(word.replace('kka', 'ka')); // a deletion
    expect(typo.corrected).toEqual({ [word.replace('kka', 'ka')]: [word] });
    expect(typo.data.map((t: { name: string; match: string }) => [t.name, t.match])).toEqual([
      [`fetch_${word}data`, 'text'],
    ]);
  });
});
