"""The delivery policy as plain values: what counts as a success, how long to wait before a retry,
when a subscription that keeps failing is switched off, and which URLs a subscription may name."""

from __future__ import annotations

from datetime import datetime
from urllib.parse import urlsplit

__pure__ = True

URL_MAX_LENGTH = 2000


def response_is_success(status_code: int) -> bool:
    """Any 2xx; a redirect is a failure (deliveries never follow one: it could point inside)."""
    return 200 <= status_code < 300


def retry_delay_seconds(attempts_made: int, *, base_seconds: float) -> float:
    """The wait before the next attempt after ``attempts_made`` failed ones: base × 4^(n-1), so that a
    receiver that is down for a while is not hammered, and one down for seconds gets it soon."""
    return float(base_seconds) * 4 ** max(attempts_made - 1, 0)


def subscription_is_failing_too_long(failing_since: datetime | None, now: datetime, *, after_seconds: float) -> bool:
    """Switch the subscription off: it has failed without a success in between for ``after_seconds``
    (asked only when a delivery has failed every attempt, so one attempt never switches it off)."""
    return failing_since is not None and (now - failing_since).total_seconds() >= after_seconds


HEALTH_UNTRIED, HEALTH_HEALTHY, HEALTH_FAILING = "untried", "healthy", "failing"
HEALTHS = (HEALTH_UNTRIED, HEALTH_HEALTHY, HEALTH_FAILING)


def subscription_health(failing_since: datetime | None, last_success_at: datetime | None) -> str:
    """How a subscription's deliveries fare, whether or not it is switched on: ``failing`` from its first
    failed attempt since the last success (not only once a delivery has used up its retries, hours
    later), ``healthy`` after a success, ``untried`` before any attempt ended."""
    if failing_since is not None:
        return HEALTH_FAILING
    return HEALTH_HEALTHY if last_success_at is not None else HEALTH_UNTRIED


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot receive webhooks (a sentence), or None. https only: a delivery carries the
    organization's data and a signature an eavesdropper could replay within the tolerance."""
    if not url or len(url) > URL_MAX_LENGTH:
        return f"give an https URL of at most {URL_MAX_LENGTH} characters"
    if any(ord(ch) < 33 or ord(ch) == 127 for ch in url):
        return "the URL may not contain spaces or control characters"
    parts = urlsplit(url)
    if parts.scheme != "https":
        return "the URL must use https"
    if not parts.hostname:
        return "the URL must name a host"
    try:
        _ = parts.port
    except ValueError:
        return "the URL's port is not valid"
    if parts.username or parts.password:
        return "the URL may not carry a user name or password (the signature authenticates deliveries)"
    if parts.fragment:
        return "the URL may not have a #fragment"
    return None
