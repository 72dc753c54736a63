"""A real psycopg connection pool in a test (the suite runs without one: settings.DB_POOL is off while
testing), for the tests of what happens when its connections run out (docs/concurrency.md). Needs a
transactional test: the connections are other threads'."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection


@contextmanager
def connection_pool(*, max_size: int, timeout: float) -> Iterator[Any]:
    """Every thread's connection comes from one pool of ``max_size`` connections inside the block; a
    thread waits ``timeout`` seconds for one (as deployed, where the wait is ``DB_CONNECT_TIMEOUT``)
    and then fails with ``PoolTimeout``. Yields the pool. Set ``CONN_MAX_AGE`` to 0 beside it, so
    each tool call gives its connection back."""
    connection.close()  # the plain connection of the set-up; from here on they come from the pool
    options = connection.settings_dict["OPTIONS"]
    options["pool"] = {"min_size": 0, "max_size": max_size, "timeout": timeout}
    wrapper: Any = connection  # the PostgreSQL backend's wrapper, which has the pool
    try:
        yield wrapper.pool
    finally:
        wrapper.close()
        wrapper.close_pool()
        options.pop("pool", None)
