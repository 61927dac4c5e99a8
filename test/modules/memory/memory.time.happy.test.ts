/** memory/time.ts: "when" questions and time expressions of a memory-search query (issue 21). */
import { describe, expect, it } from 'vitest';
import { asksWhen, mentionsTime, timeRange } from '../../../src/modules/memory/time.js';

// a Wednesday
const NOW = new Date('2026-11-25T21:00:00Z');
const span = (q: string) => {
  const r = timeRange(q, NOW);
  return r ? [r.from.toISOString().slice(0, 10), r.to.toISOString().slice(0, 10), r.expression] : null;
};

describe('memory time expressions', () => {
  it('recognises questions that ask for a time, and only those', () => {
    for (const q of [
      'When did Maya finish the race?',
      '  when is the party',
      'What day is the interview?',
      'How long ago did they move?',
      'Which year did he start?',
    ]) {
      expect(asksWhen(q), q).toBe(true);
    }
    for (const q of ['What did Maya say when she finished?', 'Who is Karim?', 'What time-saving tricks did she use?'])
      expect(asksWhen(q), q).toBe(false);
  });

  it('finds time mentions in turns, and not in turns without one', () => {
    for (const t of [
      'I finished the 5k in 31 minutes yesterday.',
      'I start the intensive care course in January.',
      'We played our first gig with Walter on Saturday.',
      'Come for lunch on the twenty-sixth.',
      "I'm moving in April!",
      'Due in November.',
      'We booked it for next week.',
      'That was three years ago.',
      'The deadline is May 3.',
    ]) {
      expect(mentionsTime(t), t).toBe(true);
    }
    for (const t of [
      'You may be right about the cabin.',
      'May I ask you something?',
      'The cast is off. She is back to her crossword.',
      'Do not mar the table.',
    ]) {
      expect(mentionsTime(t), t).toBe(false);
    }
  });

  it('resolves relative expressions against now (UTC days, weeks from Monday)', () => {
    expect(span('what did I do yesterday')).toEqual(['2026-11-24', '2026-11-25', 'yesterday']);
    expect(span('notes from today')).toEqual(['2026-11-25', '2026-11-26', 'today']);
    expect(span('what happened last week')).toEqual(['2026-11-16', '2026-11-23', 'last week']);
    expect(span('plans for next month')).toEqual(['2026-12-01', '2027-01-01', 'next month']);
    expect(span('two weeks ago')).toEqual(['2026-11-09', '2026-11-16', 'two weeks ago']);
    expect(span('3 days ago')).toEqual(['2026-11-22', '2026-11-23', '3 days ago']);
    expect(span('a couple of months ago')).toEqual(['2026-09-01', '2026-10-01', 'couple of months ago']);
    expect(span('last Friday')).toEqual(['2026-11-20', '2026-11-21', 'last friday']);
    expect(span('last year')).toEqual(['2025-01-01', '2026-01-01', 'last year']);
  });

  it('resolves month names and years', () => {
    expect(span('what did we talk about last May')).toEqual(['2026-05-01', '2026-06-01', 'last may']);
    expect(span('the trip in December')).toEqual(['2025-12-01', '2026-01-01', 'december']); // its latest December, not a future one
    expect(span('the trip in November')).toEqual(['2026-11-01', '2026-12-01', 'november']);
    expect(span('last November')).toEqual(['2025-11-01', '2025-12-01', 'last november']);
    expect(span('the party in March 2023')).toEqual(['2023-03-01', '2023-04-01', 'march 2023']);
    expect(span('what happened in 2023')).toEqual(['2023-01-01', '2024-01-01', 'in 2023']);
    expect(span('you may remember the cabin')).toBeNull();
    expect(span('Who is Karim?')).toBeNull();
  });
});
