/**
 * Highlighting of search hits (Typesense-style `highlights: [{ field, snippet, matched_tokens }]`).
 *
 * A word of the field matches a query term when it starts with the term (prefix, as typed), the
 * term starts with it (stemmed forms: "cities" ~ "city" needs ≥ 4 shared letters), or — when
 * typo-tolerant — it is within 1 edit (terms of 4–7 letters) or 2 edits (8+) of the term.
 * Snippets are HTML-escaped with matches wrapped in `<mark>…</mark>`; long fields are cut to a
 * window around the first match.
 */
import damerau from 'damerau-levenshtein';

/** One highlighted field. */
export interface Highlight {
  field: string;
  snippet: string;
  matched_tokens: string[];
}

const WORD = /\p{Lu}?[\p{Ll}\p{N}]+|\p{Lu}+(?![\p{Ll}])|[\p{L}\p{N}]+/gu;

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/**
 * Optimal-string-alignment distance (insertions, deletions, substitutions and adjacent
 * transpositions each count one; the `damerau-levenshtein` package), or `max + 1` when the lengths
 * alone differ by more than `max`.
 */
export function editDistance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  return damerau(a, b).steps;
}

/** Typos allowed in a term of its length: 0 below 4 letters, 1 from 4, 2 from 8 (Typesense/Algolia defaults). */
export function typoBudget(term: string): number {
  return term.length >= 8 ? 2 : term.length >= 4 ? 1 : 0;
}

/** True when `word` (lower case) matches `term`. */
export function wordMatches(word: string, term: string, fuzzy: boolean): boolean {
  if (!term) return false;
  if (word.startsWith(term)) return true;
  if (term.length >= 4 && word.length >= 4 && term.startsWith(word.slice(0, Math.max(4, word.length - 2)))) return true;
  if (!fuzzy) return false;
  const budget = typoBudget(term);
  if (!budget) return false;
  // Whole word, or the word's prefix of the term's length (the term may be a typo'd prefix).
  return (
    editDistance(word, term, budget) <= budget ||
    (word.length > term.length && editDistance(word.slice(0, term.length), term, budget) <= budget)
  );
}

/**
 * Highlight `terms` in `text`; null when nothing matches. `maxLength` bounds the snippet (a window
 * around the first match, with `…` where cut).
 */
export function highlightField(
  field: string,
  text: string,
  terms: string[],
  opts: { fuzzy: boolean; maxLength?: number },
): Highlight | null {
  if (!text || !terms.length) return null;
  const ranges: Array<[number, number]> = [];
  const matched = new Set<string>();
  for (const m of text.matchAll(WORD)) {
    const word = m[0];
    const lw = word.toLowerCase();
    if (terms.some((t) => wordMatches(lw, t, opts.fuzzy))) {
      ranges.push([m.index!, m.index! + word.length]);
      matched.add(word);
    }
  }
  if (!ranges.length) return null;
  const max = opts.maxLength ?? 200;
  let start = 0;
  let end = text.length;
  if (text.length > max) {
    start = Math.max(0, ranges[0][0] - Math.floor(max / 4));
    end = Math.min(text.length, start + max);
    start = Math.max(0, end - max);
  }
  let out = start > 0 ? '…' : '';
  let pos = start;
  for (const [a, b] of ranges) {
    if (a < start || b > end) continue;
    out += `${escapeHtml(text.slice(pos, a))}<mark>${escapeHtml(text.slice(a, b))}</mark>`;
    pos = b;
  }
  out += escapeHtml(text.slice(pos, end)) + (end < text.length ? '…' : '');
  return { field, snippet: out, matched_tokens: [...matched] };
}

/** Highlights of several fields (fields without a match are left out). */
export function highlightFields(
  fields: Array<[string, string | null | undefined]>,
  terms: string[],
  opts: { fuzzy: boolean; maxLength?: number },
): Highlight[] {
  const out: Highlight[] = [];
  for (const [name, value] of fields) {
    const h = value ? highlightField(name, value, terms, opts) : null;
    if (h) out.push(h);
  }
  return out;
}

/** `text` with a leading (case-insensitive) `prefix` — or the first word starting with it — in `<mark>`, HTML-escaped. */
export function markPrefix(text: string, prefix: string): string {
  const p = prefix.toLowerCase();
  const lower = text.toLowerCase();
  let at = lower.startsWith(p) ? 0 : -1;
  if (at < 0) {
    for (const m of text.matchAll(WORD)) {
      if (m[0].toLowerCase().startsWith(p)) {
        at = m.index!;
        break;
      }
    }
  }
  if (at < 0 || !p) return escapeHtml(text);
  return `${escapeHtml(text.slice(0, at))}<mark>${escapeHtml(text.slice(at, at + p.length))}</mark>${escapeHtml(text.slice(at + p.length))}`;
}
