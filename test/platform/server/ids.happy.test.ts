import { describe, expect, it } from 'vitest';
import { idFloor, isId, iso, newId } from '../../../src/http/ids.js';

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

  it('iso rewrites PostgreSQL UTC text exactly as Date does, and parses every other form', () => {
    const texts = [
      '2026-11-26 10:01:02.123999+00',
      '2026-11-26 10:01:02.5+00',
      '2026-11-26 10:01:02.05+00',
      '2026-11-26 10:01:02+00',
      '2024-02-29 23:59:59.999+00',
    ];
    for (let i = 0; i < 200; i++) {
      const ms = Math.floor(Math.random() * 4e12);
      const us = String(Math.floor(Math.random() * 1e6))
        .padStart(6, '0')
        .slice(0, 1 + (i % 6));
      texts.push(`${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')}.${us}+00`);
    }
    for (const t of texts) expect(iso(t)).toBe(new Date(t).toISOString());
    for (const t of ['2026-11-26 12:01:02.123+02', '2026-11-26 10:01:02.123-03:30', '2026-11-26T10:01:02.123Z'])
      expect(iso(t)).toBe(new Date(t).toISOString());
    // (Date's legacy parser reads a year 0001 written this way as 2001; the rewrite keeps it.)
    expect(iso('0001-01-01 00:00:00.000001+00')).toBe('0001-01-01T00:00:00.000Z');
    expect(iso(new Date(0))).toBe('1970-01-01T00:00:00.000Z');
    expect(iso(null)).toBeNull();
  });
});
