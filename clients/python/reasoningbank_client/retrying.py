"""When a call is tried again, and after how long (docs/sdks.md#retries-and-timeouts): the policy both clients
share. No I/O here: the clients ask it after each failed attempt and sleep what it says."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TypedDict

DEFAULT_MAX_RETRIES = 2
DEFAULT_BACKOFF_BASE = 0.5  # seconds before the first retry (before jitter); doubled for each further one
DEFAULT_BACKOFF_CAP = 30.0  # no wait is longer: a Retry-After beyond it is not waited out but raised
DEFAULT_TIMEOUT = 60.0  # seconds without a byte from the service (read), or to send (write)
DEFAULT_CONNECT_TIMEOUT = 10.0  # seconds to open the connection (DNS, TCP, TLS)

# The answers that say "not now, later": the service throttles (429) or a part it needs is out of reach
# (503 database_unavailable, with Retry-After). Nothing was done, so waiting and asking again is the fix.
RETRY_STATUSES = frozenset({429, 503})
# 503s that waiting does not fix: no LLM is configured, or the service has already retried its provider
NOT_RETRIED_CODES = frozenset({"llm_not_configured", "llm_unavailable"})


class RequestOptions(TypedDict, total=False):
    """Per-call overrides (``request_options=`` on every method): the client's timeouts and retries for this
    call only. ``idempotent=True`` lets a call the client would not repeat (feedback, outcome, consolidate,
    import) be retried, when the caller knows repeating it is harmless; ``False`` never retries it."""

    timeout: float
    connect_timeout: float
    max_retries: int
    idempotent: bool


@dataclass(frozen=True)
class RetryPolicy:
    """How many times a failed idempotent call is tried again, and how long to wait before each retry:
    exponential backoff with jitter, never sooner than a ``Retry-After`` the service sent."""

    max_retries: int = DEFAULT_MAX_RETRIES
    backoff_base: float = DEFAULT_BACKOFF_BASE
    backoff_cap: float = DEFAULT_BACKOFF_CAP

    def __post_init__(self) -> None:
        if self.max_retries < 0 or self.backoff_base < 0 or self.backoff_cap < 0:
            raise ValueError("max_retries, backoff_base and backoff_cap must not be negative")

    def wait(self, retry: int, retry_after: float | None, rand: Callable[[], float] = random.random) -> float | None:
        """Seconds to wait before retry number ``retry`` (1 for the first), or ``None``: do not retry, the
        service asked for a longer wait than ``backoff_cap`` (the caller sees the error and its
        ``retry_after`` at once instead of a call that hangs for minutes)."""
        if retry > self.max_retries:
            return None
        backoff = min(self.backoff_cap, self.backoff_base * 2.0 ** (retry - 1))
        # "equal jitter": half the backoff fixed, half random, so that clients failed by the same outage do
        # not all come back at the same instant, and none comes back at once
        jittered = backoff / 2 + rand() * backoff / 2
        if retry_after is None:
            return jittered
        if retry_after > self.backoff_cap:
            return None
        return max(retry_after, jittered)


def retry_after_parse(value: str | None, now: datetime | None = None) -> float | None:
    """``Retry-After`` in seconds: the header is either a number of seconds (what the service sends) or an
    HTTP date (what a proxy may send); an unreadable one is no answer."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:  # an HTTP date is GMT by definition
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    if seconds != seconds or seconds in (float("inf"), float("-inf")):  # NaN, infinities: nothing to wait for
        return None
    return max(0.0, seconds)


def status_retryable(status: int, code: str) -> bool:
    """Whether an error answer is one that waiting may fix (the call itself decides whether it may be repeated)."""
    return status in RETRY_STATUSES and code not in NOT_RETRIED_CODES
