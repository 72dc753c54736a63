export interface Page<Item> {
    count: number;
    next: string | null;
    previous: string | null;
    results: Item[];
}
export declare class Paginator<Item, P extends Page<Item> = Page<Item>> implements AsyncIterable<Item> {
    private readonly fetchPage;
    private readonly firstPage;
    constructor(fetchPage: (page: number) => Promise<P>, firstPage?: number);
    /** Each page in turn. The page number is counted rather than `next` followed: `next` is an absolute URL
     * the service builds from its own idea of its host, which behind a proxy may not be the one you use. */
    pages(): AsyncGenerator<P, void, undefined>;
    [Symbol.asyncIterator](): AsyncGenerator<Item, void, undefined>;
}
