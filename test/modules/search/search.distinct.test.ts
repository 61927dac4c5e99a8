/**
 * Copies of a tool (the same name and summary in another service: a mirrored or re-published API)
 * come after the distinct tools in the head of a tool search, so they cannot fill the first page
 * (issue 19 §1: at 10k tools the GitHub mirrors did); no copy is hidden, paging stays consistent.
 */
import { describe, expect, it } from 'vitest';
import { distinctFirst } from '../../../src/modules/search/tools.js';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { categoryService, letters } from './fixtures.js';

const { app, ctx } = await setupApp();

describe('search — copies after distinct tools', () => {
  it('orders by first occurrence of each name and summary, copies after, order otherwise kept', () => {
    const t = (name: string, description: string) => ({ tool: { name, description } });
    const hits = [t('a', 'A one\nlong'), t('A', 'a ONE\nother text'), t('a', 'A two'), t('b', 'B')];
    expect(distinctFirst(hits)).toEqual([hits[0], hits[2], hits[3], hits[1]]);
  });

  it('puts a less relevant distinct tool before the second copy of the best one', async () => {
    const owner = await createUser(app);
    const word = `zq${letters(8)}`;
    const copy = { name: `get_${word}`, description: `Get a ${word} by its id\n\nMore text.` };
    const a = await categoryService(app, ctx, owner, { prefix: 'mirror', description: 'Original', tools: [copy] });
    const b = await categoryService(app, ctx, owner, {
      prefix: 'mirror',
      description: 'Mirror',
      tools: [{ ...copy, description: `Get a ${word} by its id\n\nOther details.` }],
    });
    const c = await categoryService(app, ctx, owner, {
      prefix: 'archive',
      description: 'Archive',
      tools: [{ name: 'old_records', description: `Past records, each once a ${word}` }],
    });
    const u = await createUser(app);
    const page = async (cursor?: string) =>
      (
        await call(
          app,
          {
            method: 'GET',
            url: `/search/tools?q=${word}&limit=2${cursor ? `&cursor=${cursor}` : ''}`,
            headers: u.headers,
          },
          200,
        )
      ).body;
    const first = await page();
    expect(first.found).toBe(3);
    expect(first.data.map((h: { service: { id: string } }) => h.service.id)).toEqual([
      expect.stringMatching(new RegExp(`^(${a.id}|${b.id})$`)),
      c.id,
    ]);
    const second = await page(first.next_cursor);
    expect(second.data.map((h: { service: { id: string } }) => h.service.id)).toEqual([
      [a.id, b.id].find((id) => id !== first.data[0].service.id),
    ]);
  });
});
