"""Signing webhook deliveries, and verifying them on the receiving end.

Each delivery carries ``ReasoningBank-Signature: t=<unix seconds>,v1=<hex>``, where the hex is
HMAC-SHA256, keyed with the subscription's secret, over ``<t>.<raw body>``. Signing the timestamp
with the body lets a receiver refuse a replayed delivery: one whose ``t`` is further from its clock
than a tolerance (five minutes by default) — an attacker who captured a delivery cannot change ``t``
without the secret. The comparison is constant-time.

Standard library only, no Django: ``signature_verify`` is the function docs/webhooks.md gives
receivers to copy.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from typing import Any

__pure__ = True

SIGNATURE_HEADER = "ReasoningBank-Signature"
SIGNATURE_VERSION = "v1"
SECRET_PREFIX = "whsec_"
DEFAULT_TOLERANCE_SECONDS = 300


def payload_body(payload: Any) -> bytes:
    """The exact bytes a delivery posts, and signs, for ``payload``: compact JSON in UTF-8. The one
    serialisation: the attempt sends it, the delivery log shows it (docs/webhooks.md#the-delivery-log)."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


class SignatureInvalid(ValueError):
    """The header is missing or malformed, the signature does not match, or the timestamp is outside
    the tolerance."""


def secret_generate() -> str:
    """A new signing secret: 256 random bits, URL-safe, with a prefix that says what it is."""
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def signature_compute(secret: str, timestamp: int, body: bytes) -> str:
    """The hex HMAC-SHA256 of ``<timestamp>.<body>`` keyed with ``secret``."""
    message = str(int(timestamp)).encode("ascii") + b"." + body
    return hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()


def signature_header(secret: str, timestamp: int, body: bytes) -> str:
    """The ``ReasoningBank-Signature`` header's value for this body, signed at ``timestamp``."""
    return f"t={int(timestamp)},{SIGNATURE_VERSION}={signature_compute(secret, timestamp, body)}"


def signature_verify(
    secret: str,
    header: str,
    body: bytes,
    *,
    tolerance_seconds: int = DEFAULT_TOLERANCE_SECONDS,
    now: float | None = None,
) -> int:
    """Check a delivery: ``header`` is the ``ReasoningBank-Signature`` value, ``body`` the raw request
    body exactly as received (not re-serialised JSON). Returns the signed timestamp, or raises
    ``SignatureInvalid``. A header may carry several ``v1`` values; one match is enough."""
    timestamp: int | None = None
    candidates: list[str] = []
    for part in (header or "").split(","):
        key, sep, value = part.strip().partition("=")
        if not sep:
            continue
        if key == "t":
            try:
                timestamp = int(value)
            except ValueError:
                raise SignatureInvalid("the signature's timestamp is not a number") from None
        elif key == SIGNATURE_VERSION:
            candidates.append(value)
    if timestamp is None or not candidates:
        raise SignatureInvalid(f"the header needs t=<timestamp> and {SIGNATURE_VERSION}=<signature>")
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance_seconds:
        raise SignatureInvalid("the timestamp is outside the tolerance (a replay, or a clock far off)")
    expected = signature_compute(secret, timestamp, body)
    if not any(hmac.compare_digest(expected, candidate) for candidate in candidates):
        raise SignatureInvalid("the signature does not match the body")
    return timestamp
