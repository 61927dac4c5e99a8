/** The SQL text recorded on PGlite statement spans (telemetry/db.ts): the operation, literals left out. */
import { describe, expect, it } from 'vitest';
import { operationOf, sanitizedQueryText } from '../../src/telemetry/db.js';

describe('db.query.text and db.operation.name', () => {
  it('names the statement by its first keyword, past comments', () => {
    expect(operationOf('select * from t where id = $1')).toBe('SELECT');
    expect(operationOf('  /* hint */ -- note\n  with x as (select 1) insert into t select * from x')).toBe('WITH');
    expect(operationOf('')).toBeUndefined();
  });

  it('keeps parameters and identifiers, replaces literal values by ?', () => {
    expect(sanitizedQueryText("select * from t2 where id = $1 and n > 10 and s = 'it''s' and e = E'x'")).toBe(
      'select * from t2 where id = $1 and n > ? and s = ? and e = ?',
    );
    expect(sanitizedQueryText('savepoint sp1')).toBe('savepoint sp1');
    expect(sanitizedQueryText('select $$secret$$, $tag$other$tag$, -2.5e3')).toBe('select ?, ?, ?');
    expect(sanitizedQueryText('x'.repeat(5000))).toHaveLength(2048);
  });
});
