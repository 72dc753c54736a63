"""A list of the API, page after page (docs/sdks.md#lists-page-by-page): every list answers ``page`` (from 1)
and ``page_size`` with ``{count, next, previous, results}``. Iterating gives the items, fetching the next
page only when the one before is used up; ``pages()`` gives the pages themselves."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from typing import Generic, TypeVar, cast

ItemT = TypeVar("ItemT")
PageT = TypeVar("PageT", bound=Mapping[str, object])


def has_next(page: Mapping[str, object]) -> bool:
    """Whether a later page exists. The page number is counted here rather than ``next`` followed: ``next``
    is an absolute URL the service builds from its own idea of its host, which behind a proxy may not be
    the address the client was given."""
    return bool(page.get("next"))


class Pages(Generic[ItemT, PageT]):
    """``for memory in bank.memory_list(project="web-app"): …`` — every item of every page, in order."""

    def __init__(self, fetch: Callable[[int], PageT], first_page: int = 1) -> None:
        self.fetch = fetch
        self.first_page = first_page

    def pages(self) -> Iterator[PageT]:
        number = self.first_page
        while True:
            page = self.fetch(number)
            yield page
            if not has_next(page):
                return
            number += 1

    def __iter__(self) -> Iterator[ItemT]:
        for page in self.pages():
            yield from cast(list[ItemT], page["results"])


class AsyncPages(Generic[ItemT, PageT]):
    """``async for memory in bank.memory_list(project="web-app"): …`` — the same, for the async client."""

    def __init__(self, fetch: Callable[[int], Awaitable[PageT]], first_page: int = 1) -> None:
        self.fetch = fetch
        self.first_page = first_page

    async def pages(self) -> AsyncIterator[PageT]:
        number = self.first_page
        while True:
            page = await self.fetch(number)
            yield page
            if not has_next(page):
                return
            number += 1

    async def items(self) -> AsyncIterator[ItemT]:
        async for page in self.pages():
            for item in cast(list[ItemT], page["results"]):
                yield item

    def __aiter__(self) -> AsyncIterator[ItemT]:
        return self.items()
