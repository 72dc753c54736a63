"""One HTTP attempt of a delivery: resolve the host, refuse internal addresses, post to the checked
address (the certificate is still verified against the host name), no redirects, no proxies, and one
deadline for the whole attempt. No Django: the caller passes the settings.

The connection goes to the address that was checked (``sni_hostname`` keeps TLS and its certificate
check on the name), so a DNS answer that changes between the check and the connection cannot send
the delivery inside (docs/webhooks.md#the-address-guard).

The deadline is the attempt's, not each read's: an HTTP client's timeout bounds one read, and a
receiver that sends a byte every two seconds never trips a five-second read timeout — it kept a
delivery (and a worker slot) busy for minutes. Here the name lookup, the connection, the TLS handshake,
the request and the answer's status line and headers all run under one ``asyncio.timeout``; the
answer's body is never read, and closing it does not wait for it (docs/security/worker-fairness.md).
When the deadline cuts an attempt, every connection it opened is closed then and there: a handshake
cancelled half-way would otherwise keep its socket until the garbage collector found it.

The receiver's certificate is checked against the system's CAs plus the ``ca_locations`` the caller
names (``WEBHOOKS_CA_BUNDLE``, ``SSL_CERT_FILE``, ``SSL_CERT_DIR``): the client itself reads nothing from
the environment, since with ``trust_env`` it would also take a proxy from it
(docs/webhooks.md#trying-webhooks-locally).
"""

from __future__ import annotations

import asyncio
import functools
import os
import ssl
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from reasoningbank import net_guard

USER_AGENT = "ReasoningBank-Webhooks/1"

# Name lookups run here, under the deadline: getaddrinfo cannot be interrupted, so a lookup that hangs
# is left to finish on its own in this pool while the attempt fails on time. Not asyncio's default
# executor: asyncio.run waits for that one's threads when it ends, and so would the attempt.
_RESOLVERS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="webhook-dns")


class _AttemptLoop(asyncio.SelectorEventLoop):
    """An event loop that remembers the connections it made, so that the attempt can close them all at
    its end, whatever state the deadline left them in (the HTTP library closes what it finishes, not
    what a cancellation interrupts)."""

    def __init__(self) -> None:
        super().__init__()
        self.transports: list[asyncio.Transport] = []

    async def create_connection(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        transport, protocol = await super().create_connection(*args, **kwargs)
        self.transports.append(transport)
        return transport, protocol


class DeliveryFailed(Exception):
    """The attempt got no HTTP answer: refused address, DNS, connection, TLS or the deadline."""


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


def _location_stamp(location: str) -> float:
    try:
        return os.stat(location).st_mtime
    except OSError as exc:
        raise DeliveryFailed(f"the CA certificates at {location} cannot be read: {exc.strerror or exc}") from None


@functools.lru_cache(maxsize=8)
def _ssl_context_cached(locations: tuple[tuple[str, float], ...]) -> ssl.SSLContext:
    import httpx2

    context = httpx2.create_ssl_context(trust_env=False)  # the system's CAs, verifying host names
    for location, _ in locations:
        try:
            if os.path.isdir(location):
                context.load_verify_locations(capath=location)
            else:
                context.load_verify_locations(cafile=location)
        except (OSError, ssl.SSLError) as exc:
            raise DeliveryFailed(
                f"the CA certificates at {location} cannot be loaded (a PEM file of certificates, or a directory "
                f"prepared with `openssl rehash`): {exc}"
            ) from None
    return context


def ssl_context_for(ca_locations: tuple[str, ...]) -> ssl.SSLContext:
    """The context that checks a receiver's certificate: the system's CAs and those of ``ca_locations``
    (PEM files, or directories of hashed names), host names verified. One per set of locations while
    their files stay unchanged: loading a bundle costs more than the rest of a quick attempt."""
    return _ssl_context_cached(tuple((location, _location_stamp(location)) for location in ca_locations))


def delivery_post(
    url: str,
    body: bytes,
    headers: dict[str, str],
    *,
    timeout_seconds: float,
    allow_private: bool,
    ca_locations: tuple[str, ...] = (),
) -> Attempt:
    """POST ``body`` to ``url``; the answer's status and the time it took, or ``DeliveryFailed`` —
    at the latest ``timeout_seconds`` after the call, whatever the receiver does. ``ca_locations``:
    CA certificates trusted besides the system's."""
    started = time.monotonic()
    context = ssl_context_for(ca_locations)
    loop = _AttemptLoop()
    try:
        # a worker task is plain synchronous code: its own short-lived event loop, per attempt
        with asyncio.Runner(loop_factory=lambda: loop) as runner:
            try:
                status_code = runner.run(_post_within(url, body, headers, timeout_seconds, allow_private, context))
            finally:
                for transport in loop.transports:
                    transport.abort()  # closed now; a no-op for one the HTTP library closed already
    except TimeoutError:
        raise DeliveryFailed(
            f"no answer within the {timeout_seconds:g} s deadline (name lookup, connection, request and the "
            "answer's status and headers, all together)"
        ) from None
    return Attempt(status_code, int((time.monotonic() - started) * 1000))


async def _post_within(
    url: str,
    body: bytes,
    headers: dict[str, str],
    timeout_seconds: float,
    allow_private: bool,
    context: ssl.SSLContext,
) -> int:
    async with asyncio.timeout(timeout_seconds):
        return await _post(url, body, headers, timeout_seconds, allow_private, context)


async def _post(
    url: str,
    body: bytes,
    headers: dict[str, str],
    timeout_seconds: float,
    allow_private: bool,
    context: ssl.SSLContext,
) -> int:
    import httpx2  # here, not at module level: every manage.py command sets Django up (docs/commands.md#start-up)

    parts = urlsplit(url)
    hostname = parts.hostname or ""
    port = parts.port or 443
    check = functools.partial(net_guard.host_addresses_checked, hostname, port, allow_private=allow_private)
    try:
        ips = await asyncio.get_running_loop().run_in_executor(_RESOLVERS, check)
    except net_guard.AddressRefused as exc:
        raise DeliveryFailed(str(exc)) from exc
    sent_headers = {
        **headers,
        "Host": parts.netloc.rsplit("@", 1)[-1],
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
    }
    last_error = "no address answered"
    # trust_env=False: an HTTP(S)_PROXY of the environment would connect by name, past the check (the CA
    # variables it would also read come in ``context``). The client's own timeout stays as a bound per
    # step; the attempt's deadline is the one around this call.
    async with httpx2.AsyncClient(
        timeout=timeout_seconds, follow_redirects=False, trust_env=False, verify=context
    ) as client:
        for ip in ips:
            try:
                # streamed and closed unread: only the status matters, and a receiver's body may be huge
                # or never end (closing an unread answer drops the connection rather than draining it)
                async with client.stream(
                    "POST",
                    _address_url(url, ip),
                    content=body,
                    headers=sent_headers,
                    extensions={"sni_hostname": hostname},
                ) as response:
                    return response.status_code
            except httpx2.HTTPError as exc:
                last_error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                continue
    raise DeliveryFailed(last_error)
