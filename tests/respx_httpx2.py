"""respx for the LLM SDKs and webhook deliveries: they are built on ``httpx2``, which respx (written for
``httpx``) does not patch. ``serve_httpx2_from`` routes httpx2 traffic, sync and async, through a respx
router."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from unittest import mock

import httpx
import httpx2
import respx


@contextlib.contextmanager
def serve_httpx2_from(router: respx.MockRouter) -> Iterator[None]:
    """Route the SDKs' HTTP through a respx router.

    The openai and anthropic SDKs are built on ``httpx2``, which respx (written
    for ``httpx``) does not patch; this adapter translates each request to
    ``httpx``, lets respx match and answer it, and translates back, including
    transport errors such as ``httpx.ReadTimeout``.
    """

    def handle_request(self: httpx2.HTTPTransport, request: httpx2.Request) -> httpx2.Response:
        request.read()
        return answer(request)

    async def handle_async_request(self: httpx2.AsyncHTTPTransport, request: httpx2.Request) -> httpx2.Response:
        await request.aread()
        return answer(request)

    def answer(request: httpx2.Request) -> httpx2.Response:
        outgoing = httpx.Request(
            request.method, str(request.url), headers=list(request.headers.raw), content=request.content
        )
        try:
            reply = router.handler(outgoing)
        except httpx.TransportError as exc:
            raise getattr(httpx2, type(exc).__name__)(str(exc), request=request) from exc
        return httpx2.Response(
            reply.status_code, headers=list(reply.headers.raw), content=reply.content, request=request
        )

    with (
        mock.patch.object(httpx2.HTTPTransport, "handle_request", handle_request),
        mock.patch.object(httpx2.AsyncHTTPTransport, "handle_async_request", handle_async_request),
    ):
        yield
