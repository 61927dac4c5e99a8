import { describe, expect, it } from 'vitest';
import { idFloor, isId, newId } from '../../../src/http/ids.js';

describe('ids', () => {
  it('grow strictly within a process, also inside one millisecond', () => {
    const ids = Array.from({ length: 2000 }, () => newId('ses'));
    for (let i = 1; i < ids.length; i++) expect(ids[i] > ids[i - 1]).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids.slice(0, 10)) expect(isId(id, 'ses')).toBe(true);
  });

  it('sort at or after the floor of their creation time', () => {
    const before = new Date();
    const id = newId('exe');
    expect(id >= idFloor('exe', before)).toBe(true);
    expect(id < idFloor('exe', new Date(before.getTime() + 60_000))).toBe(true);
  });

  it('draw the random part of a new millisecond from the whole alphabet (pooled CSPRNG bytes)', async () => {
    // The first id of each millisecond has 16 fresh random letters; over many milliseconds every
    // one of the 32 Crockford letters shows up in each position range, and no two ids repeat.
    const letters = new Set<string>();
    const ids = new Set<string>();
    for (let ms = 0; ms < 40; ms++) {
      await new Promise((r) => setTimeout(r, 1));
      const id = newId('exe');
      ids.add(id);
      for (const c of id.slice(-16)) letters.add(c);
    }
    expect(ids.size).toBe(40);
    expect(letters.size).toBe(32);
  });
});
