/**
 * The in-process text arithmetic of the tool index (`lib/pg-text.ts`) against the database it
 * stands in for: `ts_rank` of a term group over `a || b` and pg_trgm's `word_similarity`, on texts
 * shaped like tool and service documents (stop words, repeated and shared words, prefixes).
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { execRows } from '../../../src/db/client.js';
import { nameWords } from '../../../src/modules/registry/catalog-index.js';
import {
  parseTsvector,
  trigramQuery,
  trigramText,
  tsRankOr,
  uniqueOperands,
  wordSimilarity,
  type Operand,
} from '../../../src/lib/pg-text.js';
import { setupApp } from '../../helpers/app.js';

const { ctx } = await setupApp();

const WEIGHTS = [0.05, 0.15, 0.4, 1.0].map(Math.fround);

const DOCS: Array<[string, string, string]> = [
  [
    'issues create',
    'Create an issue. Any user with pull access to a repository can create an issue; issues are created open.',
    'gh-issues-abc GitHub Issues developer Issues of repositories',
  ],
  [
    'repos list for authenticated user',
    'Lists repositories that the authenticated user has explicit permission to access.',
    'gh-repos GitHub Repos developer Repositories, repos and repository settings',
  ],
  [
    'get forecast',
    'Forecast for a city: temperature, wind and rain for the next days',
    'weather-xyz Weather xyz weather Forecasts from a public weather model',
  ],
  [
    'actions cancel workflow run',
    'Cancels a workflow run using its id. Running runs are stopped, cancelled runs stay cancelled.',
    'gh-actions GitHub Actions developer Automate your workflow',
  ],
];

const QUERIES: Array<Array<[string, boolean]>> = [
  [['issue', false]],
  [['creat', true]],
  [
    ['repos', true],
    ['repository', false],
    ['repo', false],
  ],
  [
    ['run', false],
    ['cancel', false],
    ['stop', false],
  ],
  [
    ['the', false],
    ['forecast', false],
  ],
  [['github', false]],
  [
    ['wether', true],
    ['weather', false],
  ],
];

describe('search — PostgreSQL text arithmetic in process', () => {
  it('ts_rank of a term group over tool || service documents equals the database', async () => {
    for (const [name, description, service] of DOCS) {
      for (const group of QUERIES) {
        const source = `(${group.map(([w, p]) => `'${w}'${p ? ':*' : ''}`).join(' | ')})`;
        const [row] = await execRows<{ a: string; b: string; r: number; ops: string }>(
          ctx.db,
          sql`select (setweight(to_tsvector('english', ${name}), 'A') || setweight(to_tsvector('english', ${description}), 'B'))::text as a,
                     setweight(to_tsvector('english', ${service}), 'C')::text as b,
                     ts_rank('{0.05, 0.15, 0.4, 1.0}'::float4[], setweight(to_tsvector('english', ${name}), 'A') || setweight(to_tsvector('english', ${description}), 'B') || setweight(to_tsvector('english', ${service}), 'C'), to_tsquery('english', ${source})) as r,
                     to_tsquery('english', ${source})::text as ops`,
        );
        const ops: Operand[] = [...String(row.ops).matchAll(/'((?:[^']|'')*)'(:\*)?/g)].map((m) => ({
          lex: m[1],
          prefix: !!m[2],
        }));
        const mine = tsRankOr(WEIGHTS, parseTsvector(row.a), parseTsvector(row.b), uniqueOperands(ops));
        expect(mine, `${name} / ${source}`).toBeCloseTo(Number(row.r), 6);
      }
    }
  });

  it('word_similarity equals pg_trgm for typos, word order and other words', async () => {
    const pairs: Array<[string, string]> = [
      ['wether forcast', 'get forecast'],
      ['ecoh', 'echo'],
      ['repos list', 'repos list for authenticated user'],
      ['zqabcdefgx', 'zqabcdefgh'],
      ['zqabcdefgx', 'zqabcdexyz 12'],
      ['create issue', 'issues create'],
      ['temperature in a city', 'gh-issues-abc github issues'],
      ['pulls merge', 'pulls merge async'],
      ['aa', 'a a a a'],
      ['run', 'actions re run workflow run'],
    ];
    const [{ ok }] = await execRows<{ ok: boolean }>(
      ctx.db,
      sql`select exists (select 1 from pg_extension where extname = 'pg_trgm') as ok`,
    );
    if (!ok) return; // no pg_trgm in this database: nothing to compare with
    for (const [q, text] of pairs) {
      const [row] = await execRows<{ s: number }>(ctx.db, sql`select word_similarity(${q}, ${text}) as s`);
      expect(wordSimilarity(trigramQuery(q), trigramText(text)), `${q} ~ ${text}`).toBeCloseTo(Number(row.s), 6);
    }
  });

  it('splits tool names into words as the indexed SQL expression does', async () => {
    for (const name of [
      'getForecast',
      'issues_create',
      'repos/list-for-org',
      'ABCThing',
      'a__b--c',
      'x1Y_z',
      'Über_naMe',
      'pulls_merge-async',
    ]) {
      const [row] = await execRows<{ w: string }>(
        ctx.db,
        sql`select lower(regexp_replace(regexp_replace(${name}::text, '([a-z0-9])([A-Z])', '\\1 \\2', 'g'), '[_-]+', ' ', 'g')) as w`,
      );
      expect(nameWords(name).toLowerCase(), name).toBe(row.w);
    }
  });

  it('parses quoted lexemes, weights and positions of the text form', () => {
    const doc = parseTsvector(`'it''s':1A,4 'back\\\\slash':2B 'plain':3C`);
    expect(doc.lex).toEqual(["it's", 'back\\slash', 'plain']);
    expect(doc.pos).toEqual([[(1 << 2) | 3, 4 << 2], [(2 << 2) | 2], [(3 << 2) | 1]]);
    expect(doc.maxpos).toBe(4);
  });
});
