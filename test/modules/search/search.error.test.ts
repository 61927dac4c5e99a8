/** Search — errors: every bad parameter is a 400 problem (never a 500), hostile query text is just text. */
import { describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../../helpers/app.js';
import { letters } from './fixtures.js';

const { app } = await setupApp();
const u = await createUser(app);

async function expect400(url: string, pointer?: string) {
  const res = await app.inject({ method: 'GET', url, headers: u.headers });
  expect(res.statusCode, `${url}: ${res.body}`).toBe(400);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  const body = res.json();
  expect(body.code).toBe('validation_failed');
  if (pointer) expect(JSON.stringify(body.errors ?? [])).toContain(pointer);
}

describe('search — bad parameters', () => {
  it('rejects a missing, blank or too long q on /search', async () => {
    await expect400('/search');
    await expect400('/search?q=%20%20%20', '/q');
    await expect400(`/search?q=${'x'.repeat(201)}`);
  });

  it('rejects unknown types, limits out of range and unknown parameters', async () => {
    await expect400('/search?q=x&type=widgets');
    await expect400('/search?q=x&type=tool,');
    await expect400('/search?q=x&limit=0');
    await expect400('/search?q=x&limit=21');
    await expect400('/search?q=x&page=2');
    await expect400('/search/tools?limit=101');
    await expect400('/search/tools?sort=name');
    await expect400('/search/popular?window=1y');
    await expect400('/search/popular?limit=51');
    await expect400('/search/recommendations?limit=0');
    await expect400('/search/suggestions');
    await expect400(`/search/suggestions?q=${'a'.repeat(101)}`);
    await expect400('/search/suggestions?q=a&limit=11');
  });

  it('rejects malformed and out-of-range cursors', async () => {
    await expect400('/search/tools?cursor=%%%', '/cursor');
    await expect400(`/search/tools?cursor=${Buffer.from('o:5000').toString('base64url')}`, '/cursor');
    await expect400(`/search/tools?cursor=${Buffer.from('svc_whatever').toString('base64url')}`, '/cursor');
  });
});

describe('search — hostile and odd query text', () => {
  const odd = [
    "'; drop table tools; --",
    '%_\\',
    ':* & | ! ( )',
    '<script>alert(1)</script>',
    'Ünïcödé 東京',
    'a'.repeat(200),
    '-- /* */',
    '"quoted"',
  ];

  it('answers 200 for every endpoint', async () => {
    for (const q of odd) {
      const enc = encodeURIComponent(q);
      for (const url of [`/search/tools?q=${enc}`, `/search?q=${enc}`, `/search/suggestions?q=${enc.slice(0, 300)}`]) {
        if (url.startsWith('/search/suggestions') && q.length > 100) continue;
        const res = await app.inject({ method: 'GET', url, headers: u.headers });
        expect(res.statusCode, `${url}: ${res.body}`).toBe(200);
      }
    }
  });

  it('returns an empty page for a word nobody uses', async () => {
    const { body } = await call(app, { method: 'GET', url: `/search/tools?q=${letters(12)}`, headers: u.headers }, 200);
    expect(body).toMatchObject({ data: [], found: 0, next_cursor: null, relaxed: false });
    const { body: s } = await call(
      app,
      { method: 'GET', url: `/search/suggestions?q=${letters(12)}`, headers: u.headers },
      200,
    );
    expect(s.data).toEqual([]);
  });
});
