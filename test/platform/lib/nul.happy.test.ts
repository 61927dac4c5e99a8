import { describe, expect, it } from 'vitest';
import { findNul, storable } from '../../../src/lib/nul.js';

describe('U+0000 helpers', () => {
  it('points at the first string or key holding U+0000 (RFC 6901 escaping)', () => {
    expect(findNul({ a: ['x', 'y\u0000'] })).toBe('/a/1');
    expect(findNul({ 'a/b~c': { 'k\u0000': 1 } })).toBe('/a~1b~0c/k\u0000');
    expect(findNul('\u0000')).toBe('');
    expect(findNul({ a: 'literal \\u0000', b: 2, c: null, d: Buffer.from([0]) })).toBeNull();
  });

  it('replaces U+0000 with U+FFFD in strings and keys, returning the same value when there is none', () => {
    const clean = { a: ['x'], b: { c: 1 } };
    expect(storable(clean)).toBe(clean);
    expect(storable({ 'k\u0000': ['a\u0000b', 3] })).toEqual({ 'k\uFFFD': ['a\uFFFDb', 3] });
    expect(storable('\u0000\u0000')).toBe('\uFFFD\uFFFD');
  });
});
