// A list of the API, page after page (docs/sdks.md#lists-page-by-page): every list answers `page` (from 1)
// and `page_size` with {count, next, previous, results}. `for await` gives the items, fetching the next page
// only when the one before is used up; `pages()` gives the pages themselves.

export interface Page<Item> {
  count: number;
  next: string | null;
  previous: string | null;
  results: Item[];
}

export class Paginator<Item, P extends Page<Item> = Page<Item>> implements AsyncIterable<Item> {
  constructor(
    private readonly fetchPage: (page: number) => Promise<P>,
    private readonly firstPage: number = 1,
  ) {}

  /** Each page in turn. The page number is counted rather than `next` followed: `next` is an absolute URL
   * the service builds from its own idea of its host, which behind a proxy may not be the one you use. */
  async *pages(): AsyncGenerator<P, void, undefined> {
    for (let number = this.firstPage; ; number++) {
      const page = await this.fetchPage(number);
      yield page;
      if (!page.next) return;
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Item, void, undefined> {
    for await (const page of this.pages()) yield* page.results;
  }
}
