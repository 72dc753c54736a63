"""Limits on failed authentication (docs/tenancy.md#failed-tokens-are-throttled): bearer tokens (REST
and MCP) and dashboard logins; and on open OAuth client registration (docs/oauth.md#client-registration).
The write limits and the flagged-write count that suspends a token keep their counters in the same table
(``accounts/write_limits/services.py``).

Counters live in one small table, ``rb_throttle`` (migration ``accounts/0003``), and every hit is
one atomic ``INSERT … ON CONFLICT DO UPDATE``, so several web worker processes share them and
concurrent failures are all counted. Signups and allauth's own per-address limits use allauth's
rate limiter on the shared database cache instead (``reasoningbank/cache.py``).

Bearer tokens (REST and MCP) and grants at the OAuth token endpoint
    * A valid credential is always served: it is checked first, and only a *failed* one is counted
      or refused. Other clients' failures never lock it out — a misconfigured agent behind a
      shared NAT or CI runner must not take its team down with it.
    * By client address: after ``AUTH_THROTTLE_FAILURES`` failures within ``AUTH_THROTTLE_WINDOW``
      the address is blocked for ``AUTH_THROTTLE_BLOCK``: every further *failure* from it is
      answered 429 with ``Retry-After`` (and no reason: no "expired on", no second lookup), and
      extends the block while it lasts. Failed grants at the token endpoint have their own count.
    * By token prefix (the first characters, the part the dashboard shows): after
      ``AUTH_THROTTLE_PREFIX_FAILURES`` failures with one prefix, from any number of addresses,
      further *failures* with that prefix are answered 429 for ``AUTH_THROTTLE_BLOCK``. The real
      token with that prefix keeps working: the prefix is shown to every member of the org, and
      knowing it must not be enough to lock an agent out.
    * Successful requests cost nothing: the table is only touched by a failure.
    * What this does and does not protect against (a blocked address still learns whether a token
      it sends is valid, since a valid one is served): docs/security/http-hardening.md#failed-tokens.

Dynamic Client Registration (``accounts/oauth/views.py``)
    * Per address: at most ``OAUTH_DCR_RATE_LIMIT`` registrations within ``OAUTH_DCR_RATE_WINDOW``;
      the next is answered 429 with ``Retry-After`` and the address waits out a whole window.
      Registration is open to anyone (RFC 7591, as MCP clients expect), and every one writes an
      application row: without a limit one address could fill the table.

Dashboard logins (``accounts/adapter.py``)
    * Per address: allauth's ``login_failed`` rate, per address only (``LOGIN_FAILED_RATE_LIMIT``).
    * Per account, with backoff, and no lockout weapon: an account with
      ``LOGIN_ACCOUNT_FAILURES`` failures within ``LOGIN_ACCOUNT_WINDOW`` is under attack; from
      then on an address that has failed on it must wait 30 s × 2^(its failures − 1), at most
      ``LOGIN_BACKOFF_MAX``, after its last failure before trying again. An address that has not
      failed on the account tries as usual, so the owner still gets in with the right password
      while someone else guesses; a distributed guesser gets one try per address and window.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import math
import random
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection

from accounts.models import TOKEN_DISPLAY_CHARS

logger = logging.getLogger(__name__)

TABLE = "rb_throttle"
LOGIN_BACKOFF_BASE = 30.0  # seconds: the first wait of an address failing on an attacked account
_PRUNE_ONE_IN = 200  # failures; each prunes rows whose window and block are long over


@dataclass(frozen=True)
class Throttled:
    """An answer of 429: seconds to wait (the ``Retry-After`` header), and a sentence saying why."""

    retry_after: int
    message: str


# --- client addresses -----------------------------------------------------------------------------


def client_address(raw: str | None) -> str:
    """The address counters are kept for: IPv4 as is, IPv6 by its /64 (one host usually holds a
    whole /64, so counting single IPv6 addresses would count nothing).

    ``raw`` is always the connection's client as the ASGI guard left it (``REMOTE_ADDR`` in Django,
    ``scope["client"]`` for ``/mcp``): the peer, or the forwarded client behind one of
    ``TRUSTED_PROXIES`` (``reasoningbank/asgi_guards.py``), never a header read here."""
    try:
        address = ipaddress.ip_address((raw or "").strip())
    except ValueError:
        return "unknown"
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network(f"{address}/64", strict=False).network_address) + "/64"
    return str(address)


def request_client_address(request: Any) -> str:
    """The counted address of a Django request (every per-address limit of the dashboard and REST)."""
    return client_address(request.META.get("REMOTE_ADDR"))


def scope_client_address(scope: Any) -> str:
    """The counted address of an ASGI request (the MCP endpoint)."""
    client = scope.get("client") or (None, None)
    return client_address(client[0])


# --- the counter table ----------------------------------------------------------------------------

# One row per key: failures counted in a fixed window that restarts once over, and a block.
# clock_timestamp(), not now(): the time of the statement even inside a longer transaction.
_HIT_SQL = f"""
INSERT INTO {TABLE} AS t (key, count, window_ends_at, blocked_until)
VALUES (%(key)s, 1, clock_timestamp() + make_interval(secs => %(window)s), NULL)
ON CONFLICT (key) DO UPDATE SET
    count = CASE WHEN t.window_ends_at <= clock_timestamp() THEN 1 ELSE t.count + 1 END,
    window_ends_at = CASE WHEN t.window_ends_at <= clock_timestamp()
        THEN clock_timestamp() + make_interval(secs => %(window)s) ELSE t.window_ends_at END
RETURNING count, GREATEST(EXTRACT(EPOCH FROM t.blocked_until - clock_timestamp()), 0)
"""
_BLOCK_SQL = f"""
UPDATE {TABLE} SET blocked_until = GREATEST(blocked_until, clock_timestamp() + make_interval(secs => %(seconds)s))
WHERE key = %(key)s
RETURNING EXTRACT(EPOCH FROM blocked_until - clock_timestamp())
"""
_READ_SQL = f"""
SELECT CASE WHEN window_ends_at > clock_timestamp() THEN count ELSE 0 END,
       GREATEST(EXTRACT(EPOCH FROM blocked_until - clock_timestamp()), 0)
FROM {TABLE} WHERE key = %s
"""
_PRUNE_SQL = f"""
DELETE FROM {TABLE}
WHERE window_ends_at < clock_timestamp() - interval '1 day'
  AND (blocked_until IS NULL OR blocked_until < clock_timestamp())
"""


def counter_hit(key: str, *, window: float) -> tuple[int, float]:
    """Count one failure under ``key``: (the count within the current window, seconds the key is
    still blocked)."""
    with connection.cursor() as cursor:
        cursor.execute(_HIT_SQL, {"key": key, "window": float(window)})
        count, blocked = cursor.fetchone()
        if random.randrange(_PRUNE_ONE_IN) == 0:
            cursor.execute(_PRUNE_SQL)
    return int(count), float(blocked or 0)


def counter_block(key: str, *, seconds: float) -> float:
    """Block ``key`` for ``seconds`` from now (never shortening a longer block); seconds left."""
    with connection.cursor() as cursor:
        cursor.execute(_BLOCK_SQL, {"key": key, "seconds": float(seconds)})
        row = cursor.fetchone()
    return float(row[0]) if row else 0.0


def counter_read(key: str) -> tuple[int, float]:
    """(failures in the current window, seconds the key is still blocked)."""
    with connection.cursor() as cursor:
        cursor.execute(_READ_SQL, [key])
        row = cursor.fetchone()
    return (int(row[0]), float(row[1] or 0)) if row else (0, 0.0)


def counter_clear(key: str) -> None:
    """Forget ``key``'s count and block (a lifted write suspension starts its flagged count again)."""
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {TABLE} WHERE key = %s", [key])


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:32]


# --- bearer tokens --------------------------------------------------------------------------------

def _address_key(address: str) -> str:
    return f"bearer:addr:{address}"


def _prefix_key(raw: str) -> str:
    return f"bearer:prefix:{_digest(raw[:TOKEN_DISPLAY_CHARS])}"


def _seconds(value: float) -> int:
    return max(1, math.ceil(value))


def _address_throttled(seconds: float) -> Throttled:
    wait = _seconds(seconds)
    return Throttled(
        wait, "Too many failed authentications from this address; send a valid token (Authorization: Bearer rb_...)."
    )


def _address_failure(key: str, address: str) -> Throttled | None:
    """Count one failure under an address key: a 429 answer once the address is over
    ``AUTH_THROTTLE_FAILURES`` within the window (or still blocked), else None."""
    window, block = float(settings.AUTH_THROTTLE_WINDOW), float(settings.AUTH_THROTTLE_BLOCK)
    failures, blocked = counter_hit(key, window=window)
    limit = int(settings.AUTH_THROTTLE_FAILURES)
    if failures >= limit:
        if failures == limit:  # once per window: the moment the address goes over, for operators
            logger.warning("auth throttle: %s blocked after %s failures (%s)", address, failures, key.split(":")[0])
        blocked = counter_block(key, seconds=block)
    return _address_throttled(blocked) if blocked > 0 else None


def bearer_failure(address: str, raw: str) -> Throttled | None:
    """After a token failed: count it for the address and for the token's prefix. A 429 answer if
    either is now over its limit, else None (the caller answers 401 with the reason)."""
    throttled = _address_failure(_address_key(address), address)
    if throttled is not None:
        return throttled
    window, block = float(settings.AUTH_THROTTLE_WINDOW), float(settings.AUTH_THROTTLE_BLOCK)
    prefix_key = _prefix_key(raw)
    _, prefix_blocked = counter_read(prefix_key)
    if prefix_blocked <= 0 and counter_hit(prefix_key, window=window)[0] >= int(settings.AUTH_THROTTLE_PREFIX_FAILURES):
        prefix_blocked = counter_block(prefix_key, seconds=block)
    if prefix_blocked > 0:
        wait = _seconds(prefix_blocked)
        return Throttled(wait, "Too many failed attempts with this token prefix.")
    return None


def grant_failure(address: str) -> Throttled | None:
    """After the token endpoint refused a grant (a wrong code, refresh token or PKCE verifier; an
    unknown client): counted for the address, on its own key; a 429 answer once over the limit."""
    throttled = _address_failure(f"grant:addr:{address}", address)
    if throttled is None:
        return None
    return Throttled(throttled.retry_after, "Too many failed grants from this address.")


# --- Dynamic Client Registration ------------------------------------------------------------------


def registration_throttled(address: str) -> Throttled | None:
    """Count one client registration from ``address``: a 429 answer once it is over
    ``OAUTH_DCR_RATE_LIMIT`` within ``OAUTH_DCR_RATE_WINDOW`` (then it waits a whole window), else
    None. Every attempt counts, refused ones too: probing the registration rules costs the same."""
    key = f"dcr:addr:{address}"
    window = float(settings.OAUTH_DCR_RATE_WINDOW)
    count, blocked = counter_hit(key, window=window)
    if blocked <= 0 and count > int(settings.OAUTH_DCR_RATE_LIMIT):
        blocked = counter_block(key, seconds=window)
    if blocked > 0:
        return Throttled(_seconds(blocked), "Too many client registrations from this address.")
    return None


# --- logins ---------------------------------------------------------------------------------------


def login_account_key(login: str) -> str:
    """The counter key of the account a login names (typed email, case-folded; never stored raw)."""
    return _digest((login or "").strip().lower())


def _account_key(account: str) -> str:
    return f"login:account:{account}"


def _pair_key(account: str, address: str) -> str:
    return f"login:pair:{account}:{address}"


def login_failure_record(*, account: str, address: str) -> None:
    """A failed login: counted for the account, and for this address on this account; the address
    waits the longer the more it has failed (``login_wait``)."""
    counter_hit(_account_key(account), window=float(settings.LOGIN_ACCOUNT_WINDOW))
    failures, _ = counter_hit(_pair_key(account, address), window=float(settings.LOGIN_BACKOFF_MAX) * 4)
    wait = min(LOGIN_BACKOFF_BASE * 2 ** min(failures - 1, 30), float(settings.LOGIN_BACKOFF_MAX))
    counter_block(_pair_key(account, address), seconds=wait)


def login_wait(*, account: str, address: str) -> float:
    """Seconds this address must wait before trying this account (0: go ahead). Only an account
    under attack makes anyone wait, and only addresses that have failed on it."""
    failures, _ = counter_read(_account_key(account))
    if failures < int(settings.LOGIN_ACCOUNT_FAILURES):
        return 0.0
    _, blocked = counter_read(_pair_key(account, address))
    return blocked


def login_success_record(*, account: str, address: str) -> None:
    """The right password from this address: its own failures on the account are forgiven."""
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {TABLE} WHERE key = %s", [_pair_key(account, address)])
