/** The iterative input walker behind the HTTP edge's refusal of unstorable input (src/lib/nul.ts). */
import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH, findNul, findUnstorable, storable } from '../../src/lib/nul.js';

function nested(depth: number, leaf: unknown = 1): unknown {
  let v: unknown = leaf;
  for (let i = 0; i < depth; i++) v = i % 2 ? [v] : { a: v };
  return v;
}

describe('findUnstorable', () => {
  it('walks 20,000 levels without overflowing the stack and reports too_deep at the limit', () => {
    expect(findUnstorable(nested(20_000))).toEqual({ pointer: expect.any(String), reason: 'too_deep' });
    expect(findUnstorable(nested(MAX_JSON_DEPTH))).toBeNull();
    const hit = findUnstorable(nested(MAX_JSON_DEPTH + 1));
    expect(hit?.reason).toBe('too_deep');
    expect(findNul(nested(20_000, 'x\u0000'))).not.toBeNull();
  });

  it('reports NUL, lone surrogates (in values and keys) and non-finite numbers in document order', () => {
    expect(findUnstorable({ a: 'ok', b: ['x', 'y\ud800'] })).toEqual({ pointer: '/b/1', reason: 'lone_surrogate' });
    expect(findUnstorable({ 'k\udc00': 1 })).toEqual({ pointer: '/k\udc00', reason: 'lone_surrogate' });
    expect(findUnstorable({ a: [1, Infinity] })).toEqual({ pointer: '/a/1', reason: 'non_finite' });
    expect(findUnstorable({ a: NaN })).toEqual({ pointer: '/a', reason: 'non_finite' });
    expect(findUnstorable({ first: '\u0000', second: '\ud800' })).toEqual({ pointer: '/first', reason: 'nul' });
    expect(findUnstorable({ ok: '😀 \ud83d\ude00', n: 1e308 })).toBeNull();
  });
});

describe('storable', () => {
  it('copies any depth iteratively and keeps "__proto__" an own key', () => {
    const deep = nested(20_000, 'a\u0000');
    const fixed = storable(deep);
    expect(findNul(fixed)).toBeNull();
    const parsed = JSON.parse('{"__proto__":{"x":"\\u0000"},"y":["\\u0000"]}');
    const out = storable(parsed) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.keys(out)).toEqual(['__proto__', 'y']);
    expect(JSON.stringify(out)).toBe('{"__proto__":{"x":"\uFFFD"},"y":["\uFFFD"]}');
  });
});
