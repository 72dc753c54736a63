"""ASGI guards in front of the whole service (Django and ``/mcp`` alike), as uvicorn serves it.

``TrustedProxyASGI`` — the client's address. The peer of the TCP connection is the client, unless
the peer is one of ``TRUSTED_PROXIES`` (empty by default: a list of addresses and networks); only
then is ``X-Forwarded-For`` read, from the right, skipping the trusted proxies, and the first
address that is not one of them is the client (``forwarded_client``). ``X-Forwarded-Proto`` from a
trusted proxy sets the scheme. Everything downstream then reads one value — ``scope["client"]``,
which Django turns into ``REMOTE_ADDR`` — and the per-address limits (bearer failures, client
registrations, logins; ``accounts/throttling.py``) count the real client, never an address a client
wrote into a header. uvicorn's own proxy-header handling (on for 127.0.0.1 by default) is switched
off in ``scripts/run.sh`` and the Dockerfile (``--no-proxy-headers``), so this is the only place.

``BodyLimitASGI`` — the body. A ``Content-Length`` over the path's limit (``REQUEST_MAX_BYTES``,
``REQUEST_MAX_BYTES_BY_PATH``) is answered 413 before a byte of the body is read. A body without a
length (``Transfer-Encoding: chunked``) is read here, up to the limit (413 past it), and handed on
with its ``Content-Length``: Django's ASGI handler would otherwise read it as empty and the view
would see no data at all. Refusals are JSON in the error shape under ``/api/``, ``/oauth/`` and
``/mcp`` (``reasoningbank/http_errors.py``). See docs/security/http-hardening.md.
"""

from __future__ import annotations

import ipaddress
import json
from functools import lru_cache
from typing import Any

from django.conf import settings

from reasoningbank.asgi_body import BodyTooLarge, body_read, body_replay
from reasoningbank.http_errors import JSONRPC_PARSE_ERROR, refusal_body
from reasoningbank.json_limits import json_depth_exceeds, json_depth_message
from reasoningbank.middleware_guards import body_limit_for_path, too_large_message
from reasoningbank.request_context import (
    ASGIApp,
    Receive,
    Scope,
    Send,
    access_log,
    request_context_end,
    request_context_get,
    request_context_start,
    request_id_accept,
    transport_for_path,
)

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


# --- the client's address -------------------------------------------------------------------------------


@lru_cache(maxsize=8)
def trusted_networks(entries: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(entry.strip(), strict=False) for entry in entries if entry.strip())


def _address(value: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    value = value.strip()
    if value.startswith("[") and "]" in value:  # "[2001:db8::1]:443"
        value = value[1 : value.index("]")]
    elif value.count(":") == 1:  # "203.0.113.9:51234"
        value = value.split(":", 1)[0]
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _trusted(address: ipaddress.IPv4Address | ipaddress.IPv6Address, networks: tuple[Network, ...]) -> bool:
    return any(address.version == network.version and address in network for network in networks)


def forwarded_client(peer: str | None, forwarded_for: str, networks: tuple[Network, ...]) -> str | None:
    """The client's address: ``peer`` itself unless it is a trusted proxy; then the rightmost address
    of ``X-Forwarded-For`` that is not a trusted proxy (each proxy appends the address it saw, so
    everything left of the first untrusted one was written by the client and proves nothing). A
    chain of trusted proxies only gives its leftmost one; a malformed entry ends the walk there."""
    peer_address = _address(peer or "")
    if peer_address is None or not networks or not _trusted(peer_address, networks):
        return peer
    client = peer_address
    for entry in reversed([part for part in forwarded_for.split(",") if part.strip()]):
        address = _address(entry)
        if address is None:
            break
        client = address
        if not _trusted(address, networks):
            break
    return str(client)


def _header(scope: Scope, name: bytes) -> str:
    """Every value of a header, comma-joined (a proxy may add its own line)."""
    values = [value.decode("latin-1") for key, value in scope.get("headers", ()) if key.lower() == name]
    return ",".join(values)


class TrustedProxyASGI:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            networks = trusted_networks(tuple(settings.TRUSTED_PROXIES))
            peer, port = (scope.get("client") or (None, 0))[:2]
            peer_address = _address(peer) if networks and peer is not None else None
            if peer_address is not None and _trusted(peer_address, networks):
                scope = dict(scope)
                scope["client"] = (forwarded_client(peer, _header(scope, b"x-forwarded-for"), networks), port)
                # the nearest proxy's word (the last value): the scheme the client used with it
                proto = _header(scope, b"x-forwarded-proto").split(",")[-1].strip().lower()
                if proto in ("http", "https"):
                    scope["scheme"] = proto
        await self.app(scope, receive, send)


# --- the body --------------------------------------------------------------------------------------------


def _route_path(scope: Scope) -> str:
    path: str = scope.get("path", "")
    root = scope.get("root_path", "")
    return path[len(root) :] or "/" if root and path.startswith(root) else path


async def _send_json(send: Send, status: int, payload: Any) -> None:
    data = json.dumps(payload).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": data})


async def _refuse(scope: Scope, send: Send, status: int, detail: str, code: str) -> None:
    """Answer a refusal, with the request id and access line every other answer gets."""
    path = _route_path(scope)
    body = refusal_body(path, detail, code)
    if body is not None:
        data, content_type = json.dumps(body).encode(), b"application/json"
    else:
        data, content_type = detail.encode(), b"text/plain; charset=utf-8"
    incoming = _header(scope, b"x-request-id") or None
    token = request_context_start(request_id=request_id_accept(incoming), transport=transport_for_path(path))
    context = request_context_get()
    assert context is not None
    try:
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", content_type),
                    (b"content-length", str(len(data)).encode()),
                    (b"cache-control", b"no-store"),
                    (b"connection", b"close"),  # the unread body would otherwise be the next request
                    (b"x-request-id", context.request_id.encode("latin-1")),
                ],
            }
        )
        await send({"type": "http.response.body", "body": data})
    finally:
        access_log(context, method=scope.get("method", ""), path=path, status=status)
        request_context_end(token)


class BodyLimitASGI:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") not in BODY_METHODS:
            await self.app(scope, receive, send)
            return
        limit = body_limit_for_path(_route_path(scope))
        declared = _header(scope, b"content-length")
        if declared:
            try:
                length = int(declared.split(",")[0])
            except ValueError:
                length = -1
            if length > limit:
                await _refuse(scope, send, 413, too_large_message(limit), "too_large")
                return
            await self.app(scope, receive, send)
            return
        # No length: a chunked body (or none at all). Read it, within the limit, and say how long it was.
        try:
            body = await body_read(receive, limit)
        except BodyTooLarge:
            await _refuse(scope, send, 413, too_large_message(limit), "too_large")
            return
        if body is None:
            return
        headers = [(k, v) for k, v in scope.get("headers", ()) if k.lower() != b"transfer-encoding"]
        headers.append((b"content-length", str(len(body)).encode()))
        await self.app({**scope, "headers": headers}, body_replay(body, receive), send)


class JsonDepthASGI:
    """For an ASGI app that parses JSON bodies itself (the MCP SDK): a body nested deeper than
    ``JSON_MAX_DEPTH`` is answered 400 in the error shape (``-32700`` for JSON-RPC clients) before the
    app parses it, as Django's ``RequestBodyGuardMiddleware`` does for every other path. Placed after
    authentication, so an anonymous body is never read."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") not in BODY_METHODS:
            await self.app(scope, receive, send)
            return
        body = await body_read(receive)
        if body is None:
            return
        limit = int(settings.JSON_MAX_DEPTH)
        if json_depth_exceeds(body, limit):
            payload = refusal_body(
                _route_path(scope), json_depth_message(limit), "parse_error", jsonrpc_code=JSONRPC_PARSE_ERROR
            )
            await _send_json(send, 400, payload)
            return
        await self.app(scope, body_replay(body, receive), send)
