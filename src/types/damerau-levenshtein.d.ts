/** Types of `damerau-levenshtein` (1.x ships none): optimal string alignment distance of two strings. */
declare module 'damerau-levenshtein' {
  /**
   * @returns steps: edits (insertion, deletion, substitution, adjacent transposition) turning `a`
   *   into `b`; relative: steps / the longer length; similarity: 1 − relative.
   */
  export default function damerau(
    a: string,
    b: string,
    limit?: number,
  ): { steps: number; relative: number; similarity: number };
}
