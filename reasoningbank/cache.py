"""The default cache: process-local memory, except for rate-limit keys, which go to the database.

allauth keeps its rate limits (signups, failed logins per address, password-reset mails) in
Django's default cache. With several web worker processes a per-process cache would give each
process its own counters, so those keys must live in a cache every process shares: the
``shared`` alias, a ``DatabaseCache`` on the table ``rb_cache`` (created by the migration
``accounts/0003``). Deep search's question rewrites (``search:rewrite:``) go there too: an LLM
call saved by one process is saved for all. Everything else (e.g. the health readers' few-second
memo) stays in the ``local`` alias, in memory, costing no query.

    CACHES = {
        "default": {"BACKEND": "reasoningbank.cache.RoutedCache",
                    "OPTIONS": {"local": "local", "shared": "shared",
                                "shared_prefixes": ["allauth:rl:", "search:rewrite:"]}},
        "local": {...LocMemCache...},
        "shared": {...DatabaseCache...},
    }
"""

from __future__ import annotations

from typing import Any

from django.core.cache import caches
from django.core.cache.backends.base import DEFAULT_TIMEOUT, BaseCache


class RoutedCache(BaseCache):
    def __init__(self, location: str, params: dict[str, Any]) -> None:
        super().__init__(params)
        options = params.get("OPTIONS", {})
        self._local = str(options.get("local", "local"))
        self._shared = str(options.get("shared", "shared"))
        self._shared_prefixes = tuple(options.get("shared_prefixes", ()))

    def _for(self, key: str) -> BaseCache:
        return caches[self._shared if str(key).startswith(self._shared_prefixes) else self._local]

    def add(self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> bool:
        return self._for(key).add(key, value, timeout, version)

    def get(self, key: Any, default: Any = None, version: int | None = None) -> Any:
        return self._for(key).get(key, default, version)

    def set(self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> None:
        self._for(key).set(key, value, timeout, version)

    def touch(self, key: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> bool:
        return self._for(key).touch(key, timeout, version)

    def delete(self, key: Any, version: int | None = None) -> bool:
        return self._for(key).delete(key, version)

    def has_key(self, key: Any, version: int | None = None) -> bool:
        return self._for(key).has_key(key, version)

    def incr(self, key: Any, delta: int = 1, version: int | None = None) -> Any:
        return self._for(key).incr(key, delta, version)

    def clear(self) -> None:
        caches[self._local].clear()
        caches[self._shared].clear()

    def close(self, **kwargs: Any) -> None:
        caches[self._local].close(**kwargs)
        caches[self._shared].close(**kwargs)
