// A list of the API, page after page (docs/sdks.md#lists-page-by-page): every list answers `page` (from 1)
// and `page_size` with {count, next, previous, results}. `for await` gives the items, fetching the next page
// only when the one before is used up; `pages()` gives the pages themselves.
export class Paginator {
    fetchPage;
    firstPage;
    constructor(fetchPage, firstPage = 1) {
        this.fetchPage = fetchPage;
        this.firstPage = firstPage;
    }
    /** Each page in turn. The page number is counted rather than `next` followed: `next` is an absolute URL
     * the service builds from its own idea of its host, which behind a proxy may not be the one you use. */
    async *pages() {
        for (let number = this.firstPage;; number++) {
            const page = await this.fetchPage(number);
            yield page;
            if (!page.next)
                return;
        }
    }
    async *[Symbol.asyncIterator]() {
        for await (const page of this.pages())
            yield* page.results;
    }
}
