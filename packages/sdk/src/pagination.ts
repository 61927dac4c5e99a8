/**
 * Cursor lists (`{ data, next_cursor }`, DESIGN.md §5): `for await (const s of client.services.list())`
 * walks every page; `.page()` fetches one page, `.toArray(max)` collects.
 */

/** One page of a cursor list. `next_cursor` is null on the last page. */
export interface Page<T> {
  data: T[];
  next_cursor: string | null;
}

/** An async-iterable cursor list; nothing is fetched until it is iterated or `.page()` is called. */
export class CursorList<T> implements AsyncIterable<T> {
  constructor(private readonly fetchPage: (cursor: string | undefined) => Promise<Page<T>>) {}

  /** One page, from `cursor` (the first page without one). */
  page(cursor?: string): Promise<Page<T>> {
    return this.fetchPage(cursor);
  }

  /** Every page in order. */
  async *pages(): AsyncGenerator<Page<T>> {
    let cursor: string | undefined;
    do {
      const page = await this.fetchPage(cursor);
      yield page;
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    for await (const page of this.pages()) yield* page.data;
  }

  /** Up to `max` items (all of them by default). */
  async toArray(max = Infinity): Promise<T[]> {
    const out: T[] = [];
    if (max <= 0) return out;
    for await (const item of this) {
      out.push(item);
      if (out.length >= max) break;
    }
    return out;
  }
}
