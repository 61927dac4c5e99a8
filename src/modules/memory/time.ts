/**
 * Time in memory search: "when …" questions and simple time expressions ("last May",
 * "yesterday", "two weeks ago", "in March 2023") in a query. English only, like the full-text arm.
 *
 * - {@link asksWhen}: the query asks for a time ("When did …", "What day …", "How long ago …").
 *   The turn that answers such a question usually says the time ("… in January", "… yesterday"),
 *   so memories that {@link mentionsTime} rank higher (ranking.ts).
 * - {@link timeRange}: the period a time expression in the query names, resolved against `now`
 *   (UTC calendar days, weeks from Monday); memories whose `occurred_at` (else `created_at`) falls
 *   in it are boosted.
 *
 * A small closed grammar, not a general date parser: ambiguous words are read conservatively —
 * "may" is the month only when capitalised after the sentence's first word or after "in", "last",
 * "next", "this", "early", "late", "since", "until", "by" or before a day or year number.
 */

const MONTHS = [
  'january',
  'february',
  'march',
  'april',
  'may',
  'june',
  'july',
  'august',
  'september',
  'october',
  'november',
  'december',
];
const MONTH_ABBR = new Map(MONTHS.map((m, i) => [m.slice(0, 3), i]));
const WEEKDAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];
const NUMBER_WORDS = new Map(
  ['a', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve'].map(
    (w, i) => [w, Math.max(1, i)],
  ),
);
NUMBER_WORDS.set('an', 1);
NUMBER_WORDS.set('couple', 2);
NUMBER_WORDS.set('few', 3);

const MONTH_RE =
  '(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)';
const MONTH_CUE = /\b(in|last|next|this|early|late|mid|since|until|by|of|before|after)\s+$/i;

/** A half-open period `[from, to)` named by a time expression, and the expression itself. */
export interface TimeRange {
  from: Date;
  to: Date;
  /** The words of the query that named it, lower-cased (e.g. `last may`). */
  expression: string;
}

/** True when `query` asks for a time: "when …", "what day/date/time/month/year …", "how long ago …". */
export function asksWhen(query: string): boolean {
  return (
    /^\s*(when\b|what\s+(day|date|time|month|year|week)(?![\w-])|which\s+(day|date|month|year|week)(?![\w-])|how\s+long\s+ago\b)/i.test(
      query,
    ) || /\bsince\s+when\b/i.test(query)
  );
}

/** Is the `may` at `index` of `text` the month? (see the module comment) */
function isMonthMay(text: string, index: number, after: string): boolean {
  const word = text.slice(index, index + 3);
  if (MONTH_CUE.test(text.slice(0, index))) return true;
  if (/^\s+(\d{1,2}(st|nd|rd|th)?\b|\d{4}\b)/i.test(after)) return true;
  const sentenceStart = /(^|[.!?]\s*)$/.test(text.slice(0, index));
  return word === 'May' && !sentenceStart;
}

/** A month name or abbreviation, with "last"/"next"/"this" before it and a year after it, when present (`matchAll` copies it: no shared state). */
const MONTH_MENTION = new RegExp(
  `\\b(?:(last|next|this)\\s+)?${MONTH_RE}\\b\\.?(?:\\s+(?:\\d{1,2}(?:st|nd|rd|th)?,?\\s+)?(\\d{4})\\b)?`,
  'gi',
);

/** Month mentions of `text` (0-based month, optional 4-digit year, the matched words, whether "last" or "next" preceded it). */
function monthMentions(
  text: string,
): Array<{ month: number; year: number | null; words: string; cue: 'last' | 'next' | 'this' | null }> {
  const out: Array<{ month: number; year: number | null; words: string; cue: 'last' | 'next' | 'this' | null }> = [];
  for (const m of text.matchAll(MONTH_MENTION)) {
    const name = m[2].toLowerCase();
    const at = m.index! + (m[1] ? m[0].toLowerCase().indexOf(name, m[1].length) : 0);
    if (name === 'may' && !isMonthMay(text, at, text.slice(at + 3))) continue;
    if (name === 'mar' || name === 'jan' || name === 'dec') {
      // "mar" (to spoil), "Jan" (a name), "dec" are words too: abbreviations only before a day or year
      if (!m[3] && !/^\.?\s+\d/.test(text.slice(at + name.length))) continue;
    }
    const month = MONTHS.indexOf(name) >= 0 ? MONTHS.indexOf(name) : MONTH_ABBR.get(name.slice(0, 3))!;
    out.push({
      month,
      year: m[3] ? Number(m[3]) : null,
      words: m[0].toLowerCase().trim(),
      cue: (m[1]?.toLowerCase() as 'last' | 'next' | 'this') ?? null,
    });
  }
  return out;
}

/** The other time expressions {@link mentionsTime} looks for (no `g` flag: `test` keeps no state). */
const TIME_MENTION = new RegExp(
  [
    `\\b(yesterday|today|tonight|tomorrow|this\\s+(morning|afternoon|evening|weekend)|last\\s+night)\\b`,
    `\\b(last|next|this|coming|past)\\s+(week|weekend|month|year|summer|winter|spring|autumn|fall|${WEEKDAYS.join('|')})\\b`,
    `\\b(on|by|until|since|every|this|next|last)\\s+(${WEEKDAYS.join('|')})s?\\b`,
    `\\b(${WEEKDAYS.join('|')})\\b`,
    `\\b(in|within|after|for)\\s+(a|an|\\d+|${[...NUMBER_WORDS.keys()].join('|')})\\s+(days?|weeks?|months?|years?)\\b`,
    `\\b(\\d+|${[...NUMBER_WORDS.keys()].join('|')})\\s+(days?|weeks?|months?|years?)\\s+ago\\b`,
    `\\b(19|20)\\d{2}\\b`,
    `\\b\\d{1,2}(st|nd|rd|th)\\b`,
    `\\b(first|second|third|fourth|fifth|tenth|twentieth|thirtieth|(twenty|thirty)-(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth))\\s+of\\b`,
    `\\bthe\\s+(twenty|thirty)-(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth)\\b`,
    `\\b(at|by|around)\\s+\\d{1,2}(:\\d{2})?\\s*(am|pm|o'clock)?\\b`,
    `\\b(christmas|new year'?s?|easter|halloween|thanksgiving)\\b`,
  ].join('|'),
  'i',
);

/** Does `text` say when something happens or happened (a date, month, weekday, "yesterday", "next week", "in two days", a clock time…)? */
export function mentionsTime(text: string): boolean {
  return monthMentions(text).length > 0 || TIME_MENTION.test(text);
}

const DAY = 86_400_000;

function utcDay(d: Date): Date {
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()));
}

function monthRange(year: number, month: number): [Date, Date] {
  return [new Date(Date.UTC(year, month, 1)), new Date(Date.UTC(year, month + 1, 1))];
}

/** Monday 00:00 UTC of the week holding `d`. */
function weekStart(d: Date): Date {
  const day = utcDay(d);
  return new Date(day.getTime() - ((day.getUTCDay() + 6) % 7) * DAY);
}

/**
 * The period the first time expression of `query` names, relative to `now`, or null when it names
 * none. Recognised: yesterday / today; last / this / next week, month, year; N days / weeks / months
 * / years ago (N a digit or a word up to twelve, "a", "a couple of", "a few"); last / this / next
 * <weekday>; a month name with an optional year ("May" alone = its latest occurrence not after
 * `now`; "last May" = its latest occurrence before the current month); "in 2023" or a bare year.
 */
export function timeRange(query: string, now: Date = new Date()): TimeRange | null {
  const q = query.toLowerCase();
  const today = utcDay(now);
  const range = (from: Date, to: Date, expression: string): TimeRange => ({ from, to, expression });
  let m: RegExpMatchArray | null;
  if ((m = q.match(/\byesterday\b/))) return range(new Date(today.getTime() - DAY), today, m[0]);
  if ((m = q.match(/\b(today|tonight|this morning|this afternoon|this evening)\b/)))
    return range(today, new Date(today.getTime() + DAY), m[0]);
  const numbers = [...NUMBER_WORDS.keys()].join('|');
  if ((m = q.match(new RegExp(`\\b(\\d+|${numbers})(?:\\s+of)?\\s+(day|week|month|year)s?\\s+ago\\b`)))) {
    const n = /^\d+$/.test(m[1]) ? Number(m[1]) : NUMBER_WORDS.get(m[1])!;
    const unit = m[2];
    if (unit === 'day') {
      const d = new Date(today.getTime() - n * DAY);
      return range(d, new Date(d.getTime() + DAY), m[0]);
    }
    if (unit === 'week') {
      const w = new Date(weekStart(now).getTime() - n * 7 * DAY);
      return range(w, new Date(w.getTime() + 7 * DAY), m[0]);
    }
    if (unit === 'month') return range(...monthRange(now.getUTCFullYear(), now.getUTCMonth() - n), m[0]);
    return range(
      new Date(Date.UTC(now.getUTCFullYear() - n, 0, 1)),
      new Date(Date.UTC(now.getUTCFullYear() - n + 1, 0, 1)),
      m[0],
    );
  }
  if ((m = q.match(/\b(last|this|next)\s+(week|month|year)\b/))) {
    const shift = m[1] === 'last' ? -1 : m[1] === 'next' ? 1 : 0;
    if (m[2] === 'week') {
      const w = new Date(weekStart(now).getTime() + shift * 7 * DAY);
      return range(w, new Date(w.getTime() + 7 * DAY), m[0]);
    }
    if (m[2] === 'month') return range(...monthRange(now.getUTCFullYear(), now.getUTCMonth() + shift), m[0]);
    const y = now.getUTCFullYear() + shift;
    return range(new Date(Date.UTC(y, 0, 1)), new Date(Date.UTC(y + 1, 0, 1)), m[0]);
  }
  if ((m = q.match(new RegExp(`\\b(last|this|next|on)\\s+(${WEEKDAYS.join('|')})\\b`)))) {
    const target = WEEKDAYS.indexOf(m[2]);
    const back = (today.getUTCDay() - target + 7) % 7 || (m[1] === 'this' ? 0 : 7);
    const forward = (target - today.getUTCDay() + 7) % 7 || 7;
    const d = m[1] === 'next' ? new Date(today.getTime() + forward * DAY) : new Date(today.getTime() - back * DAY);
    return range(d, new Date(d.getTime() + DAY), m[0]);
  }
  const [month] = monthMentions(query);
  if (month) {
    let year = month.year ?? now.getUTCFullYear();
    if (month.year === null) {
      if (month.cue === 'next') year += month.month <= now.getUTCMonth() ? 1 : 0;
      else if (month.cue === 'last') year -= month.month >= now.getUTCMonth() ? 1 : 0;
      else if (month.cue !== 'this') year -= month.month > now.getUTCMonth() ? 1 : 0;
    }
    return range(...monthRange(year, month.month), month.words);
  }
  if ((m = q.match(/\b(?:in|during|since|of)?\s*((?:19|20)\d{2})\b/))) {
    const y = Number(m[1]);
    return range(new Date(Date.UTC(y, 0, 1)), new Date(Date.UTC(y + 1, 0, 1)), m[0].trim());
  }
  return null;
}
