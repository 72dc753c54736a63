"""One HTTP attempt of a delivery: resolve the host, refuse internal addresses, post to the checked
address (the certificate is still verified against the host name), no redirects, no proxies, one
deadline. No Django: the caller passes the settings.

The connection goes to the address that was checked (``sni_hostname`` keeps TLS and its certificate
check on the name), so a DNS answer that changes between the check and the connection cannot send
the delivery inside (docs/webhooks.md#the-address-guard).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from reasoningbank import net_guard

USER_AGENT = "ReasoningBank-Webhooks/1"


class DeliveryFailed(Exception):
    """The attempt got no HTTP answer: refused address, DNS, connection, TLS or timeout."""


@dataclass(frozen=True)
class Attempt:
    status_code: int
    latency_ms: int


def _address_url(url: str, ip: str) -> str:
    parts = urlsplit(url)
    # an IPv6 zone id (development only: internal addresses) is written %25 in a URL
    host = f"[{ip.replace('%', '%25')}]" if ":" in ip else ip
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))


def delivery_post(
    url: str, body: bytes, headers: dict[str, str], *, timeout_seconds: float, allow_private: bool
) -> Attempt:
    """POST ``body`` to ``url``; the answer's status and the time it took, or ``DeliveryFailed``."""
    import httpx2  # here, not at module level: every manage.py command sets Django up (docs/commands.md#start-up)

    parts = urlsplit(url)
    hostname = parts.hostname or ""
    port = parts.port or 443
    started = time.monotonic()
    try:
        ips = net_guard.host_addresses_checked(hostname, port, allow_private=allow_private)
    except net_guard.AddressRefused as exc:
        raise DeliveryFailed(str(exc)) from exc
    sent_headers = {
        **headers,
        "Host": parts.netloc.rsplit("@", 1)[-1],
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
    }
    last_error = "timed out"
    # trust_env=False: an HTTP(S)_PROXY of the environment would connect by name, past the check
    with httpx2.Client(timeout=timeout_seconds, follow_redirects=False, trust_env=False) as client:
        for ip in ips:
            remaining = timeout_seconds - (time.monotonic() - started)
            if remaining <= 0:
                break
            try:
                # streamed and closed unread: only the status matters, and a receiver's body may be huge
                with client.stream(
                    "POST",
                    _address_url(url, ip),
                    content=body,
                    headers=sent_headers,
                    timeout=remaining,
                    extensions={"sni_hostname": hostname},
                ) as response:
                    status_code = response.status_code
            except httpx2.HTTPError as exc:
                last_error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                continue
            return Attempt(status_code, int((time.monotonic() - started) * 1000))
    raise DeliveryFailed(last_error)
